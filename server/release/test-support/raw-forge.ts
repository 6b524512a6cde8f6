// A scriptable HTTPS peer on 127.0.0.1 for the adapter's tests: it parses each request itself and lets the test write
// raw bytes on the TLS socket, so informational responses, broken framing and stalls can be reproduced exactly.

import net from "node:net";
import tls from "node:tls";
import { makeTestPki, type TestPki } from "./pki.ts";

export interface CapturedRequest {
  /** Sequence number of the TLS connection that carried this request. */
  connection: number;
  method: string;
  target: string;
  path: string;
  query: string;
  headers: Map<string, string[]>;
  rawHead: string;
  body: Buffer;
}

export type Responder = (req: CapturedRequest, socket: tls.TLSSocket) => void;

export const REQUEST_ID = "C0DE:1234:ABCD";

export class RawForge {
  readonly requests: CapturedRequest[] = [];
  private connectionCount = 0;
  /** Called once the whole request (head and Content-Length body) has arrived. */
  respond: Responder = (_req, socket) => sendJson(socket, 404, { message: "Not Found" });
  /** When set, called as soon as the request head has arrived, before its body (the body is then not collected). */
  onHead: Responder | undefined;
  private readonly sockets = new Set<net.Socket>();

  private constructor(private readonly server: tls.Server, readonly port: number) {}

  static async start(pki: TestPki): Promise<RawForge> {
    let forge: RawForge | undefined;
    const server = tls.createServer({ key: pki.serverKey, cert: pki.serverCert }, (socket) => forge?.accept(socket));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    forge = new RawForge(server, (server.address() as net.AddressInfo).port);
    server.on("connection", (s: net.Socket) => {
      forge?.sockets.add(s);
      s.on("close", () => forge?.sockets.delete(s));
    });
    return forge;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  reset(): void {
    this.requests.length = 0;
    this.respond = (_req, socket) => sendJson(socket, 404, { message: "Not Found" });
    this.onHead = undefined;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: tls.TLSSocket): void {
    const connection = ++this.connectionCount;
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    socket.on("error", () => {});
    let buf = Buffer.alloc(0);
    let req: CapturedRequest | undefined;
    let length = 0;
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      if (req === undefined) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const rawHead = buf.subarray(0, end).toString("latin1");
        const [requestLine = "", ...lines] = rawHead.split("\r\n");
        const [method = "", target = ""] = requestLine.split(" ");
        const headers = new Map<string, string[]>();
        for (const line of lines) {
          const colon = line.indexOf(":");
          const name = line.slice(0, colon).toLowerCase();
          headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
        }
        const q = target.indexOf("?");
        req = {
          connection,
          method,
          target,
          path: q < 0 ? target : target.slice(0, q),
          query: q < 0 ? "" : target.slice(q + 1),
          headers,
          rawHead,
          body: Buffer.alloc(0),
        };
        length = Number(headers.get("content-length")?.[0] ?? "0");
        buf = buf.subarray(end + 4);
        this.requests.push(req);
        if (this.onHead !== undefined) {
          socket.off("data", onData);
          this.onHead(req, socket);
          return;
        }
      }
      if (buf.length >= length) {
        req.body = buf.subarray(0, length);
        socket.off("data", onData);
        this.respond(req, socket);
      }
    };
    socket.on("data", onData);
  }
}

export function header(req: CapturedRequest, name: string): string | undefined {
  return req.headers.get(name.toLowerCase())?.[0];
}

/** Writes a complete JSON response with a request ID and closes the connection. */
export function sendJson(socket: tls.TLSSocket, status: number, value: unknown, extraHeaders: string[] = []): void {
  const body = Buffer.from(typeof value === "string" ? value : JSON.stringify(value), "utf8");
  sendRaw(socket, responseHead(status, [`Content-Length: ${body.length}`, ...extraHeaders]), body);
}

export function responseHead(status: number, headers: string[], contentType = "application/json; charset=utf-8"): string {
  const lines = [`HTTP/1.1 ${status} Status`, `Content-Type: ${contentType}`, `X-GitHub-Request-Id: ${REQUEST_ID}`, ...headers];
  return `${lines.join("\r\n")}\r\n\r\n`;
}

export function sendRaw(socket: tls.TLSSocket, ...parts: Array<string | Uint8Array>): void {
  for (const part of parts) socket.write(part);
  socket.end();
}

/** A TCP peer that accepts connections and never speaks: the TLS handshake stalls. */
export interface SilentPeer {
  port: number;
  url: string;
  /** TCP connections accepted so far. */
  connections: number;
  stop(): Promise<void>;
}

export async function startSilentPeer(): Promise<SilentPeer> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    peer.connections++;
    sockets.add(s);
    s.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const peer: SilentPeer = {
    port,
    url: `https://127.0.0.1:${port}`,
    connections: 0,
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return peer;
}

/** Distinct connections that carried the captured requests. */
export function connectionsUsed(forge: RawForge): number {
  return new Set(forge.requests.map((r) => r.connection)).size;
}

export { makeTestPki };
