// Content-addressed commits and blobs with git-like 40-hex IDs, and the pull-request file diff (exact-content rename detection).
import { createHash } from "node:crypto";
import type { Commit, ForgeState } from "./model.ts";

export interface DiffFile {
  filename: string; status: "added" | "removed" | "modified" | "renamed"; sha: string | null;
  previous_filename?: string; additions: number; deletions: number;
}

let counter = 0;

export function putBlob(state: ForgeState, content: string | Uint8Array): string {
  const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content;
  const sha = createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
  state.blobs.set(sha, bytes);
  return sha;
}

export function makeCommit(state: ForgeState, parent: string | null, changes: Record<string, string | null>, message: string, date: string): Commit {
  const tree = new Map(parent ? state.commits.get(parent)?.tree : undefined);
  for (const [path, content] of Object.entries(changes)) {
    const clean = path.replace(/^\/+/, "");
    if (content === null) tree.delete(clean);
    else tree.set(clean, putBlob(state, content));
  }
  const entries = [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, s]) => `${s} ${p}`).join("\n");
  const sha = createHash("sha1").update(`commit ${parent ?? ""}\n${entries}\n${message}\n${date}\n${++counter}`).digest("hex");
  const commit: Commit = { sha, parent, tree, message, date };
  state.commits.set(sha, commit);
  return commit;
}

export function mergeBase(state: ForgeState, a: string, b: string): string | null {
  const seen = new Set<string>();
  for (let c: string | null = a; c; c = state.commits.get(c)?.parent ?? null) seen.add(c);
  for (let c: string | null = b; c; c = state.commits.get(c)?.parent ?? null) if (seen.has(c)) return c;
  return null;
}

const lines = (state: ForgeState, blob: string | undefined) => (blob ? new TextDecoder().decode(state.blobs.get(blob) ?? new Uint8Array()).split("\n").length : 0);
const diffCache = new WeakMap<ForgeState, Map<string, DiffFile[]>>();

export function diffCommits(state: ForgeState, baseSha: string, headSha: string): DiffFile[] {
  const cache = diffCache.get(state) ?? new Map<string, DiffFile[]>();
  diffCache.set(state, cache);
  const from = mergeBase(state, baseSha, headSha) ?? baseSha;
  const key = `${from}..${headSha}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const before = state.commits.get(from)?.tree ?? new Map<string, string>();
  const after = state.commits.get(headSha)?.tree ?? new Map<string, string>();
  const removed = [...before.keys()].filter((p) => !after.has(p)).sort();
  const added = [...after.keys()].filter((p) => !before.has(p)).sort();
  const files: DiffFile[] = [];
  const renamedFrom = new Set<string>();
  for (const path of added) {
    const blob = after.get(path)!;
    const source = removed.find((r) => !renamedFrom.has(r) && before.get(r) === blob);
    if (source) {
      renamedFrom.add(source);
      files.push({ filename: path, status: "renamed", sha: blob, previous_filename: source, additions: 0, deletions: 0 });
    } else files.push({ filename: path, status: "added", sha: blob, additions: lines(state, blob), deletions: 0 });
  }
  for (const path of removed) {
    if (!renamedFrom.has(path)) files.push({ filename: path, status: "removed", sha: null, additions: 0, deletions: lines(state, before.get(path)) });
  }
  for (const [path, blob] of after) {
    const old = before.get(path);
    if (old !== undefined && old !== blob) files.push({ filename: path, status: "modified", sha: blob, additions: lines(state, blob), deletions: lines(state, old) });
  }
  files.sort((a, b) => (a.filename < b.filename ? -1 : a.filename > b.filename ? 1 : 0));
  cache.set(key, files);
  return files;
}
