// Files at a commit (CODEOWNERS, policy files): contents API, and the blob API when the content is over the forge's 1 MB inline
// limit (DESIGN 7.1). Reads at a full commit SHA never change, so they are cached (caches.ts, bounded by bytes); never eligibility.
import { createHash } from "node:crypto";
import type { FileRead } from "../evaluation/evidence.ts";
import { decodeUtf8Strict } from "../policy/utf8.ts";
import { fileKey, repositoryKey, type FileCache, type HeadCache } from "./caches.ts";
import { ForgeError, invalidBody } from "./errors.ts";
import { gapFromError } from "./pagination.ts";
import { type CallOptions, ResponseOverBound, type Transport } from "./transport.ts";
import { int, object, str, SHA } from "./validate.ts";

const CONTENTS = "GET /repos/{owner}/{repo}/contents/{path}";
const BLOB = "GET /repos/{owner}/{repo}/git/blobs/{file_sha}";
const COMMIT = "GET /repos/{owner}/{repo}/commits/{ref}";
/** With this media type the commit route answers the bare SHA, and 304 to `If-None-Match: "<sha>"` while the ref is there. */
export const SHA_MEDIA_TYPE = "application/vnd.github.sha";

export interface FileLocation { installationId: number; owner: string; repo: string; path: string; /** A commit SHA; the default branch when absent. */ ref?: string }

/** Reads `path`; a file of more than `maxBytes` is reported too_large without loading its content. */
export async function readFile(t: Transport, cache: FileCache, at: FileLocation, maxBytes: number, call?: CallOptions): Promise<FileRead> {
  const key = at.ref && SHA.test(at.ref) ? `${fileKey({ ...at, commit: at.ref })}<=${maxBytes}` : null;
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

/**
 * How long a default-branch head confirmed at one authority epoch is reused without asking again. Every push to the
 * organization policy repository's default branch is an authority event (DESIGN 3.6), which advances the epoch, so within
 * one epoch the head can only have moved by a push whose webhook has not been accepted yet, or was lost: then the policy is
 * read again at most this long after the last answer, where a fresh question would have caught it at the next evaluation.
 */
export const ORGANIZATION_POLICY_RECHECK_MS = 60_000;

/** The evaluation's authority epoch (captured with its fences) and the time: lets a head confirmed at that epoch be reused. */
export type HeadReuse = { readonly authorityEpoch: number; readonly nowMs: number };

/**
 * Reads `path` at the head of the repository's default branch (the organization policy): one conditional request for the head
 * (`commits/HEAD` with the SHA media type; 304, spending no rate limit, while it has not moved), then the file at that commit
 * through the commit cache. With `reuse`, a head the forge confirmed at the same authority epoch less than
 * ORGANIZATION_POLICY_RECHECK_MS ago is used without asking. A missing or empty repository reads as missing (DESIGN 3.6: 404
 * for the repository or the file).
 */
export async function readAtDefaultBranchHead(t: Transport, cache: FileCache, heads: HeadCache, at: Omit<FileLocation, "ref">, maxBytes: number, call?: CallOptions, reuse?: HeadReuse): Promise<FileRead> {
  const repository = repositoryKey(at.installationId, at.owner, at.repo);
  const known = heads.get(repository);
  if (known && reuse && known.authorityEpoch === reuse.authorityEpoch && reuse.nowMs >= known.checkedAtMs && reuse.nowMs - known.checkedAtMs < ORGANIZATION_POLICY_RECHECK_MS) {
    return atCommit(await readFile(t, cache, { ...at, ref: known.sha }, maxBytes, call), known.sha);
  }
  let head: string;
  try {
    const response = await t.installation(at.installationId, COMMIT, {
      owner: at.owner, repo: at.repo, ref: "HEAD", headers: { accept: SHA_MEDIA_TYPE, ...(known ? { "if-none-match": `"${known.sha}"` } : {}) },
    }, { ...call, conditional: false });
    if (response.status === 304 && known) head = known.sha;
    else if (response.status === 200 && typeof response.data === "string" && SHA.test(response.data.trim())) head = response.data.trim().toLowerCase();
    else throw invalidBody(COMMIT);
  } catch (error) {
    heads.delete(repository);
    // 409: the repository is empty (no default branch head), so it holds no file.
    if (error instanceof ForgeError && (error.kind === "not_found" || error.status === 409)) return { kind: "missing" };
    const g = gapFromError(error);
    return { kind: "incomplete", cause: g.cause, detail: g.detail };
  }
  heads.set(repository, { sha: head, authorityEpoch: reuse?.authorityEpoch ?? null, checkedAtMs: reuse?.nowMs ?? Number.NEGATIVE_INFINITY });
  return atCommit(await readFile(t, cache, { ...at, ref: head }, maxBytes, call), head);
}

/** A file found at a default-branch head names that commit (decision records: the organization policy's commit SHA). */
function atCommit(read: FileRead, commitSha: string): FileRead {
  return read.kind === "found" ? { ...read, commitSha } : read;
}

/** The contents API's `sha` (the blob's), recorded by decision records; not a SHA: not known (it decides nothing). */
function blobShaOf(body: Record<string, unknown>): string | null {
  return typeof body.sha === "string" && SHA.test(body.sha) ? body.sha : null;
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
  const text = decodeUtf8Strict(bytes);
  if (text === null) return { kind: "incomplete", cause: "inconsistent", detail: `${at.path} is not valid UTF-8` };
  return { kind: "found", path: at.path, text, bytes: size, blobSha: blobShaOf(body) };
}

/** A blob read by its SHA (`service history replay`): its bytes, verified against the SHA, or why not. */
export type BlobRead =
  | { readonly kind: "found"; readonly bytes: Uint8Array }
  /** 404: the forge no longer has it, or the App no longer sees the repository. */
  | { readonly kind: "missing" }
  /** Over `maxBytes` (by the size the forge states, or by a body too long for it): its content was not loaded. */
  | { readonly kind: "too_large"; readonly bytes: number | null }
  /** The bytes the forge answered do not hash to the SHA asked for. */
  | { readonly kind: "mismatch" };

/**
 * What a blob of at most `maxBytes` takes on the wire: base64 (4 characters for 3 bytes), the forge's line breaks in it
 * (one per 60 characters, escaped as two in JSON), and the JSON fields around it.
 */
export function blobBodyBound(maxBytes: number): number {
  const base64 = Math.ceil(maxBytes / 3) * 4;
  return base64 + Math.ceil(base64 / 60) * 2 + 16 * 1024;
}

/** git's object ID of a blob: SHA-1 (40 hex digits) or, in a SHA-256 repository, SHA-256 (64) of "blob <n>\0" and the bytes. */
export function gitBlobId(bytes: Uint8Array, algorithm: "sha1" | "sha256"): string {
  return createHash(algorithm).update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/**
 * GET /repos/{owner}/{repo}/git/blobs/{sha}, bounded like the service's own reads: a blob the forge says is over `maxBytes`
 * is not decoded, and the response body is cut off past what `maxBytes` can take (blobBodyBound), so a hostile blob costs at
 * most that much memory. Forge errors other than 404 and the bound are thrown (ForgeError).
 */
export async function readBlob(t: Transport, at: { installationId: number; owner: string; repo: string; sha: string }, maxBytes: number, call?: CallOptions): Promise<BlobRead> {
  const sha = at.sha.toLowerCase();
  if (!/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/.test(sha)) return { kind: "missing" };
  let response;
  try {
    response = await t.installation(at.installationId, BLOB, { owner: at.owner, repo: at.repo, file_sha: sha }, { ...call, maxBodyBytes: blobBodyBound(maxBytes) });
  } catch (error) {
    if (error instanceof ResponseOverBound) return { kind: "too_large", bytes: null };
    if (error instanceof ForgeError && error.kind === "not_found") return { kind: "missing" };
    throw error;
  }
  const body = object(response.data, BLOB);
  const size = int(body, "size", BLOB);
  if (size > maxBytes) return { kind: "too_large", bytes: size };
  if (str(body, "encoding", BLOB) !== "base64") throw invalidBody(BLOB);
  const bytes = new Uint8Array(Buffer.from(str(body, "content", BLOB).replace(/\s+/g, ""), "base64"));
  if (bytes.length !== size) throw invalidBody(BLOB);
  if (gitBlobId(bytes, sha.length === 40 ? "sha1" : "sha256") !== sha) return { kind: "mismatch" };
  return { kind: "found", bytes };
}
