// Files at a commit (CODEOWNERS, policy files): contents API, and the blob API when the content is over the forge's 1 MB inline
// limit (DESIGN 7.1). Reads at a full commit SHA never change, so they are cached (bounded by total bytes); never eligibility.
import type { FileRead } from "../evaluation/evidence.ts";
import { ForgeError, invalidBody } from "./errors.ts";
import { gapFromError } from "./pagination.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { int, object, str, SHA } from "./validate.ts";

const CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}";
const BLOB = "GET /repos/{owner}/{repo}/git/blobs/{file_sha}";
/** Bytes of file text kept in the commit-SHA cache. */
export const FILE_CACHE_MAX_BYTES = 16 * 1024 * 1024;

export interface FileLocation { installationId: number; owner: string; repo: string; path: string; /** A commit SHA; the default branch when absent. */ ref?: string }

export class FileCache {
  private entries = new Map<string, FileRead>();
  private bytes = 0;

  get(key: string): FileRead | undefined {
    const hit = this.entries.get(key);
    if (hit) { this.entries.delete(key); this.entries.set(key, hit); }
    return hit;
  }

  set(key: string, value: FileRead): void {
    const size = value.kind === "found" ? value.text.length : 0;
    if (size > FILE_CACHE_MAX_BYTES) return;
    this.entries.set(key, value);
    this.bytes += size;
    for (const [k, v] of this.entries) {
      if (this.bytes <= FILE_CACHE_MAX_BYTES) break;
      this.entries.delete(k);
      this.bytes -= v.kind === "found" ? v.text.length : 0;
    }
  }
}

/** Reads `path`; a file of more than `maxBytes` is reported too_large without loading its content. */
export async function readFile(t: Transport, cache: FileCache, at: FileLocation, maxBytes: number, call?: CallOptions): Promise<FileRead> {
  const key = at.ref && SHA.test(at.ref) ? `${at.installationId}:${at.owner}/${at.repo}@${at.ref}:${at.path}`.toLowerCase() : null;
  const cached = key ? cache.get(key) : undefined;
  if (cached) return cached;
  let result: FileRead;
  try {
    result = await readUncached(t, at, maxBytes, call);
  } catch (error) {
    if (error instanceof ForgeError && error.kind === "not_found") result = { kind: "missing" };
    else { const g = gapFromError(error); return { kind: "incomplete", cause: g.cause, detail: g.detail }; }
  }
  if (key) cache.set(key, result);
  return result;
}

async function readUncached(t: Transport, at: FileLocation, maxBytes: number, call?: CallOptions): Promise<FileRead> {
  const response = await t.installation(at.installationId, CONTENTS, { owner: at.owner, repo: at.repo, path: at.path, ...(at.ref ? { ref: at.ref } : {}) }, call);
  if (Array.isArray(response.data)) return { kind: "missing" }; // a directory at a file location is no file
  const body = object(response.data, CONTENTS);
  if (body.type !== "file") return { kind: "missing" };
  const size = int(body, "size", CONTENTS);
  if (size > maxBytes) return { kind: "too_large", path: at.path, bytes: size };
  let encoded = typeof body.content === "string" ? body.content : "";
  let encoding = typeof body.encoding === "string" ? body.encoding : "";
  if (size > 0 && (encoding !== "base64" || encoded === "")) {
    const blob = await t.installation(at.installationId, BLOB, { owner: at.owner, repo: at.repo, file_sha: str(body, "sha", CONTENTS) }, call);
    const b = object(blob.data, BLOB);
    encoded = str(b, "content", BLOB);
    encoding = str(b, "encoding", BLOB);
  }
  if (size > 0 && encoding !== "base64") throw invalidBody(CONTENTS);
  const bytes = Buffer.from(encoded.replace(/\s+/g, ""), "base64");
  if (bytes.length !== size) throw invalidBody(CONTENTS);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { kind: "incomplete", cause: "inconsistent", detail: `${at.path} is not valid UTF-8` };
  }
  return { kind: "found", path: at.path, text, bytes: size };
}
