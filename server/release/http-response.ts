// Incremental HTTP/1.1 response parsing for the release adapter's single-connection exchanges.
//
// Hand-rolled on purpose (RECIPES section 11): Bun's fetch drops informational responses and decompresses bodies, so the
// adapter reads the raw bytes itself. Strict and fail-closed: CRLF line endings only, no obsolete line folding, a
// bounded head, one well-formed Content-Length or `Transfer-Encoding: chunked`, and a body no larger than the caller's
// bound. A body delimited only by connection close is refused because its truncation cannot be detected.

export const MAX_HEAD_BYTES = 64 * 1024;
export const MAX_HEADER_LINES = 200;
const MAX_CHUNK_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;

export interface ResponseHead {
  status: number;
  /** Lower-cased names; values in arrival order. */
  headers: Map<string, string[]>;
}

export type HeadResult =
  | { kind: "incomplete" }
  | { kind: "invalid"; status?: number }
  | { kind: "head"; head: ResponseHead; consumed: number };

const CRLFCRLF = Buffer.from("\r\n\r\n");
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.[01] ([0-9]{3})(?: [\t\x20-\x7e\x80-\xff]*)?$/;

/** Parses a response head from the start of `buf` once its blank line has arrived. */
export function parseHead(buf: Buffer): HeadResult {
  const end = buf.indexOf(CRLFCRLF);
  if (end < 0) return buf.length > MAX_HEAD_BYTES ? { kind: "invalid" } : { kind: "incomplete" };
  if (end + 4 > MAX_HEAD_BYTES) return { kind: "invalid" };
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const match = STATUS_LINE.exec(lines[0] ?? "");
  if (match === null) return { kind: "invalid" };
  const status = Number(match[1]);
  if (lines.length - 1 > MAX_HEADER_LINES) return { kind: "invalid", status };
  const headers = new Map<string, string[]>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return { kind: "invalid", status };
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return { kind: "invalid", status };
    const value = line.slice(colon + 1).replace(/^[\t ]+|[\t ]+$/g, "");
    if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return { kind: "invalid", status };
    const key = name.toLowerCase();
    const list = headers.get(key);
    if (list === undefined) headers.set(key, [value]);
    else list.push(value);
  }
  return { kind: "head", head: { status, headers }, consumed: end + 4 };
}

export function headerValue(head: ResponseHead, name: string): string | undefined {
  return head.headers.get(name)?.[0];
}

export type BodyStep = "more" | "done" | "invalid";

export interface BodyReader {
  /** Consumes bytes; bytes after the end of the body are ignored. */
  feed(chunk: Buffer): BodyStep;
  body(): Buffer;
}

/** Picks the framing of a successful response, or undefined when it is malformed, unsupported or over `maxBytes`. */
export function bodyReaderFor(head: ResponseHead, maxBytes: number): BodyReader | undefined {
  const te = head.headers.get("transfer-encoding");
  const cl = head.headers.get("content-length");
  if (te !== undefined) {
    if (cl !== undefined) return undefined;
    if (te.length !== 1 || te[0]?.toLowerCase() !== "chunked") return undefined;
    return new ChunkedReader(maxBytes);
  }
  if (cl === undefined || cl.length !== 1) return undefined;
  const text = cl[0] ?? "";
  if (!/^[0-9]{1,15}$/.test(text)) return undefined;
  const length = Number(text);
  if (length > maxBytes) return undefined;
  return new LengthReader(length);
}

class LengthReader implements BodyReader {
  private readonly parts: Buffer[] = [];
  private received = 0;

  constructor(private readonly length: number) {}

  feed(chunk: Buffer): BodyStep {
    const take = Math.min(chunk.length, this.length - this.received);
    if (take > 0) {
      this.parts.push(chunk.subarray(0, take));
      this.received += take;
    }
    return this.received === this.length ? "done" : "more";
  }

  body(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

type ChunkState = "size" | "data" | "data-crlf" | "trailer" | "done" | "invalid";

class ChunkedReader implements BodyReader {
  private readonly parts: Buffer[] = [];
  private total = 0;
  private state: ChunkState = "size";
  private line = Buffer.alloc(0);
  private remaining = 0;
  private trailerBytes = 0;

  constructor(private readonly maxBytes: number) {}

  feed(chunk: Buffer): BodyStep {
    let buf = chunk;
    while (buf.length > 0 && this.state !== "done" && this.state !== "invalid") {
      if (this.state === "data") {
        const take = Math.min(buf.length, this.remaining);
        this.parts.push(buf.subarray(0, take));
        this.remaining -= take;
        buf = buf.subarray(take);
        if (this.remaining === 0) this.state = "data-crlf";
        continue;
      }
      const lf = buf.indexOf(0x0a);
      const piece = lf < 0 ? buf : buf.subarray(0, lf + 1);
      buf = lf < 0 ? Buffer.alloc(0) : buf.subarray(lf + 1);
      this.line = Buffer.concat([this.line, piece]);
      if (this.line.length > MAX_CHUNK_LINE_BYTES) return this.invalid();
      if (lf < 0) break;
      const text = this.line.toString("latin1");
      this.line = Buffer.alloc(0);
      if (!text.endsWith("\r\n")) return this.invalid();
      this.onLine(text.slice(0, -2));
    }
    if (this.state === "invalid") return "invalid";
    return this.state === "done" ? "done" : "more";
  }

  private onLine(line: string): void {
    if (this.state === "data-crlf") {
      this.state = line === "" ? "size" : "invalid";
      return;
    }
    if (this.state === "trailer") {
      this.trailerBytes += line.length + 2;
      if (this.trailerBytes > MAX_TRAILER_BYTES) this.state = "invalid";
      else if (line === "") this.state = "done";
      else if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/.test(line)) this.state = "invalid";
      return;
    }
    const match = /^([0-9A-Fa-f]{1,8})(?:[\t ]*;[\t\x20-\x7e]*)?$/.exec(line);
    if (match === null) {
      this.state = "invalid";
      return;
    }
    const size = Number.parseInt(match[1] ?? "", 16);
    this.total += size;
    if (this.total > this.maxBytes) {
      this.state = "invalid";
      return;
    }
    if (size === 0) this.state = "trailer";
    else {
      this.remaining = size;
      this.state = "data";
    }
  }

  private invalid(): BodyStep {
    this.state = "invalid";
    return "invalid";
  }

  body(): Buffer {
    return Buffer.concat(this.parts, this.total);
  }
}
