// Caches that match immutability (DESIGN 7.1, issue 18 item 5): what a commit SHA fixes never changes, so it is kept and
// reused without asking the forge again. Each cache is bounded by the approximate bytes it holds (lru-cache, least recently
// used out first), with a per-entry overhead so that many small entries are bounded too. Never directory facts: those are
// looked up at every evaluation (conditional requests at most, transport.ts).
import { LRUCache } from "lru-cache";
import type { ChangedFile, FileRead } from "../evaluation/evidence.ts";

/** Bytes of file text kept by commit SHA and path (code-owners files and policy files at a base commit, policies at a head). */
export const FILE_CACHE_MAX_BYTES = 16 * 1024 * 1024;
/** Bytes of pull-request file lists kept by head and base commit. */
export const FILE_LIST_CACHE_MAX_BYTES = 16 * 1024 * 1024;
/** What one entry costs beyond its content: key, object, bookkeeping. */
export const ENTRY_OVERHEAD_BYTES = 128;
/** What one listed file costs beyond its names. */
const FILE_ITEM_OVERHEAD_BYTES = 48;

/** A file read at a commit SHA, by `fileKey`. */
export type FileCache = LRUCache<string, FileRead>;
/** A pull request's complete file list at a head and base commit, by `fileListKey`. */
export type FileListCache = LRUCache<string, readonly ChangedFile[]>;

/**
 * A default-branch head last seen: what a conditional request asks about (not immutable). `authorityEpoch` is the
 * installation's authority epoch of the evaluation that asked (null: asked without one), `checkedAtMs` when the forge
 * answered; contents.ts reuses the head without asking only within one epoch and ORGANIZATION_POLICY_RECHECK_MS.
 */
export type KnownHead = { readonly sha: string; readonly authorityEpoch: number | null; readonly checkedAtMs: number };
/** Default-branch heads last seen, by repository. */
export type HeadCache = LRUCache<string, KnownHead>;
/** Repositories whose last-seen default-branch head is kept. */
export const HEAD_CACHE_ENTRIES = 10_000;

export interface ForgeCaches {
  readonly files: FileCache;
  readonly fileLists: FileListCache;
  readonly heads: HeadCache;
}

function bounded<V extends {}>(maxBytes: number, size: (value: V) => number): LRUCache<string, V> {
  return new LRUCache<string, V>({ maxSize: maxBytes, maxEntrySize: maxBytes, sizeCalculation: (value, key) => key.length + ENTRY_OVERHEAD_BYTES + size(value) });
}

export function createCaches(bounds: { files?: number; fileLists?: number } = {}): ForgeCaches {
  return {
    files: bounded<FileRead>(bounds.files ?? FILE_CACHE_MAX_BYTES, (read) => (read.kind === "found" ? read.bytes : 0)),
    fileLists: bounded<readonly ChangedFile[]>(bounds.fileLists ?? FILE_LIST_CACHE_MAX_BYTES, (files) =>
      files.reduce((sum, f) => sum + f.filename.length + f.status.length + (f.previousFilename?.length ?? 0) + FILE_ITEM_OVERHEAD_BYTES, 0)),
    heads: new LRUCache<string, KnownHead>({ max: HEAD_CACHE_ENTRIES }),
  };
}

/** A repository as seen by one installation (owner and name compare case-insensitively on the forge). */
export const repositoryKey = (installationId: number, owner: string, repo: string) => `${installationId}:${owner}/${repo}`.toLowerCase();

/** A file at a full commit SHA: the commit fixes its content. Paths are case-sensitive. */
export function fileKey(at: { installationId: number; owner: string; repo: string; commit: string; path: string }): string {
  return `${repositoryKey(at.installationId, at.owner, at.repo)}@${at.commit.toLowerCase()}:${at.path}`;
}

/** A pull request's changed files between its base and head commits: both commits fix the list. */
export function fileListKey(at: { installationId: number; owner: string; repo: string; number: number; headSha: string; baseSha: string }): string {
  return `${repositoryKey(at.installationId, at.owner, at.repo)}#${at.number}@${at.baseSha.toLowerCase()}..${at.headSha.toLowerCase()}`;
}
