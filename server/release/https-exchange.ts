// One HTTPS request on its own TLS connection, reported as a value (never thrown) so that one place classifies it.
//
// Why node:tls and not fetch or node:https (RECIPES section 11): fetch pools connections, drops informational responses
// and decompresses bodies; node:https's timeout does not cover the TLS handshake. Here the socket timeout is one idle
// timer, armed when the connection is opened and re-armed on every socket progress (handshake, data received, write
// flushed), so a peer that stalls anywhere (handshake, head, body, or while we upload) fails within `timeoutMs` of its
// last progress. It is a socket timeout, not a wall-clock deadline (spec, "Limits").
//
// `requestStarted` becomes true when the first request byte is handed to the socket: from then on a lost mutation is
// ambiguous. Nothing is retried and no redirect is followed: one exchange is one connection and one request.

import fs from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { bodyReaderFor, headerValue, parseHead, type BodyReader, type ResponseHead } from "./http-response.ts";

/** Upload bodies are read from the caller's descriptor in chunks of this size (spec, "Limits"). */
export const UPLOAD_CHUNK_BYTES = 1024 * 1024;

export type RequestBody = { kind: "bytes"; bytes: Uint8Array } | { kind: "fd"; fd: number; size: number };

export interface ExchangeRequest {
  hostname: string;
  port: number;
  hostHeader: string;
  method: string;
  /** Path and query, already percent-encoded. */
  target: string;
  /** Extra request headers; Host, Content-Length and Connection are added here. */
  headers: ReadonlyArray<readonly [string, string]>;
  contentType?: string;
  body?: RequestBody;
  expectedStatus: number;
  maxBodyBytes: number;
  timeoutMs: number;
  ca?: string;
}

export type ExchangeOutcome =
  /** The expected status with an acceptable head and a complete, bounded body. */
  | { kind: "success"; head: ResponseHead; body: Buffer }
  /** Any final status other than the expected one; its body is never read. */
  | { kind: "status"; head: ResponseHead }
  | { kind: "informational"; head: ResponseHead }
  /** The expected status arrived before the whole request body was sent. */
  | { kind: "early-response"; head: ResponseHead }
  /** The response (or its framing, type or encoding) is malformed, unsupported, over its bound or truncated. */
  | { kind: "invalid"; head?: ResponseHead; detail: string }
  | { kind: "transport"; requestStarted: boolean; timedOut: boolean }
  | { kind: "upload-read"; detail: string; requestStarted: boolean };

function isIpLiteral(host: string): boolean {
  return net.isIP(host) !== 0;
}

function readAt(fd: number, buf: Buffer, offset: number, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.read(fd, buf, offset, length, position, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead)));
  });
}

export function exchange(req: ExchangeRequest): Promise<ExchangeOutcome> {
  return new Promise((resolve) => {
    let finished = false;
    let requestStarted = false;
    let bodySent = false;
    let received: Buffer = Buffer.alloc(0);
    let head: ResponseHead | undefined;
    let reader: BodyReader | undefined;
    let bodyDone = false;

    const lines = [`${req.method} ${req.target} HTTP/1.1`, `Host: ${req.hostHeader}`];
    for (const [name, value] of req.headers) lines.push(`${name}: ${value}`);
    if (req.body !== undefined) {
      if (req.contentType !== undefined) lines.push(`Content-Type: ${req.contentType}`);
      const length = req.body.kind === "bytes" ? req.body.bytes.length : req.body.size;
      lines.push(`Content-Length: ${length}`);
    }
    lines.push("Connection: close", "", "");
    const requestHead = Buffer.from(lines.join("\r\n"), "latin1");

    const timer = setTimeout(() => finish({ kind: "transport", requestStarted, timedOut: true }), req.timeoutMs);
    const touch = (): void => {
      if (!finished) timer.refresh();
    };
    let socket: tls.TLSSocket | undefined;

    function finish(outcome: ExchangeOutcome): void {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket?.destroy();
      resolve(outcome);
    }

    try {
      socket = tls.connect({
        host: req.hostname,
        port: req.port,
        ...(isIpLiteral(req.hostname) ? {} : { servername: req.hostname }),
        ...(req.ca === undefined ? {} : { ca: req.ca }),
        rejectUnauthorized: true,
        minVersion: "TLSv1.2",
        ALPNProtocols: ["http/1.1"],
      });
    } catch {
      // A synchronous failure (for example an unusable CA) happens before any request byte; its text is dropped.
      finish({ kind: "transport", requestStarted: false, timedOut: false });
      return;
    }
    const conn = socket;

    // `last` marks the write that hands the final request byte to the socket: from then on the peer may hold the
    // whole request, so a response is no longer early.
    function write(data: Uint8Array, last: boolean): Promise<boolean> {
      requestStarted = true;
      if (last) bodySent = true;
      return new Promise((done) => {
        conn.write(data, (err) => {
          if (err) {
            finish({ kind: "transport", requestStarted: true, timedOut: false });
            done(false);
            return;
          }
          touch();
          done(!finished);
        });
      });
    }

    async function sendFromDescriptor(fd: number, size: number): Promise<void> {
      let position = 0;
      while (position < size && !finished) {
        const length = Math.min(UPLOAD_CHUNK_BYTES, size - position);
        const chunk = Buffer.allocUnsafe(length);
        let filled = 0;
        try {
          while (filled < length) {
            const n = await readAt(fd, chunk, filled, length - filled, position + filled);
            if (n === 0) return finish({ kind: "upload-read", detail: "early end of file", requestStarted });
            filled += n;
          }
          if (position + length === size) {
            // Before the final bytes go out: a longer file than declared is detected while the body is still incomplete.
            const n = await readAt(fd, Buffer.alloc(1), 0, 1, size);
            if (n !== 0) return finish({ kind: "upload-read", detail: "file longer than declared size", requestStarted });
          }
        } catch {
          return finish({ kind: "upload-read", detail: "read error", requestStarted });
        }
        if (finished) return;
        if (!(await write(chunk, position + length === size))) return;
        position += length;
      }
    }

    async function send(): Promise<void> {
      const body = req.body;
      if (body === undefined) {
        await write(requestHead, true);
      } else if (body.kind === "bytes") {
        await write(Buffer.concat([requestHead, body.bytes]), true);
      } else if (body.size === 0) {
        // An empty asset: the descriptor must still be at end of file, checked before anything is sent.
        try {
          const n = await readAt(body.fd, Buffer.alloc(1), 0, 1, 0);
          if (n !== 0) return finish({ kind: "upload-read", detail: "file longer than declared size", requestStarted });
        } catch {
          return finish({ kind: "upload-read", detail: "read error", requestStarted });
        }
        await write(requestHead, true);
      } else {
        if (!(await write(requestHead, false))) return;
        await sendFromDescriptor(body.fd, body.size);
      }
    }

    function onHead(h: ResponseHead): void {
      head = h;
      if (h.status >= 100 && h.status <= 199) return finish({ kind: "informational", head: h });
      if (h.status !== req.expectedStatus) return finish({ kind: "status", head: h });
      const encoding = headerValue(h, "content-encoding");
      if (h.headers.has("content-encoding") && (h.headers.get("content-encoding")?.length !== 1 || encoding?.toLowerCase() !== "identity")) {
        return finish({ kind: "invalid", head: h, detail: "content encoding" });
      }
      if (!isJsonContentType(h.headers.get("content-type"))) return finish({ kind: "invalid", head: h, detail: "content type" });
      reader = bodyReaderFor(h, req.maxBodyBytes);
      if (reader === undefined) return finish({ kind: "invalid", head: h, detail: "framing or size" });
    }

    function onBytes(chunk: Buffer): void {
      if (head === undefined) {
        received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
        const parsed = parseHead(received);
        if (parsed.kind === "incomplete") return;
        if (parsed.kind === "invalid") return finish({ kind: "invalid", detail: "response head" });
        onHead(parsed.head);
        if (finished) return;
        chunk = received.subarray(parsed.consumed);
        received = Buffer.alloc(0);
      }
      if (reader === undefined || head === undefined) return;
      const step = reader.feed(chunk);
      if (step === "invalid") return finish({ kind: "invalid", head, detail: "framing or size" });
      if (step === "done") {
        bodyDone = true;
        if (!bodySent) return finish({ kind: "early-response", head });
        return finish({ kind: "success", head, body: reader.body() });
      }
    }

    conn.on("secureConnect", () => {
      touch();
      void send();
    });
    conn.on("data", (chunk: Buffer) => {
      touch();
      onBytes(chunk);
    });
    conn.on("error", () => finish({ kind: "transport", requestStarted, timedOut: false }));
    conn.on("close", () => {
      if (reader !== undefined && head !== undefined && !bodyDone) {
        return finish({ kind: "invalid", head, detail: "truncated body" });
      }
      if (head === undefined && received.length > 0) return finish({ kind: "invalid", detail: "truncated or malformed head" });
      finish({ kind: "transport", requestStarted, timedOut: false });
    });
  });
}

/** `application/json`, optionally with a UTF-8 charset and nothing else (DESIGN 3.7). */
export function isJsonContentType(values: string[] | undefined): boolean {
  if (values === undefined || values.length !== 1) return false;
  const [type, ...params] = (values[0] ?? "").split(";").map((p) => p.trim());
  if (type?.toLowerCase() !== "application/json") return false;
  if (params.length > 1) return false;
  if (params.length === 1) {
    const match = /^charset\s*=\s*("?)utf-8\1$/i.exec(params[0] ?? "");
    if (match === null) return false;
  }
  return true;
}
