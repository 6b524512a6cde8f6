// Pull requests and repositories, mapped once from forge shapes to domain facts (STYLE 3).
import type { Listed, OpenPullRequestRef, PullRequestFacts, RepositoryFacts } from "../evaluation/evidence.ts";
import { MAX_OPEN_PULL_REQUESTS } from "../policy/bounds.ts";
import { invalidBody } from "./errors.ts";
import { gapFromError, listAll } from "./pagination.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { bool, int, object, sha, str, type Json, zonedTimestampMs } from "./validate.ts";

const PULL = "GET /repos/{owner}/{repo}/pulls/{pull_number}";
const PULLS = "GET /repos/{owner}/{repo}/pulls";
const REPO = "GET /repos/{owner}/{repo}";
const COMMIT_PULLS = "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls";

export interface PullRequestDetails extends PullRequestFacts {
  readonly headRef: string;
  readonly repository: RepositoryFacts;
  /** `updated_at` (epoch ms), or null when absent or unreadable: what the reconciler compares to see a change (never evidence). */
  readonly updatedAtMs: number | null;
}

export interface OpenPullRequestSummary extends OpenPullRequestRef {
  readonly headRef: string;
  readonly baseRef: string;
  readonly baseSha: string;
  readonly draft: boolean;
}

export interface RepositoryInfo extends RepositoryFacts {
  readonly id: number;
  readonly defaultBranch: string;
  readonly archived: boolean;
}

export function toRepositoryInfo(value: unknown, what = REPO): RepositoryInfo {
  const r = object(value, what);
  const owner = object(r.owner, what);
  const ownerType = str(owner, "type", what);
  return {
    id: int(r, "id", what), owner: str(owner, "login", what), name: str(r, "name", what),
    ownerType: ownerType === "Organization" ? "Organization" : "User", defaultBranch: str(r, "default_branch", what), archived: bool(r, "archived", what),
  };
}

export function toPullRequestDetails(value: unknown): PullRequestDetails {
  const p = object(value, PULL);
  const head = object(p.head, PULL);
  const base = object(p.base, PULL);
  const user = object(p.user, PULL);
  const labels = p.labels;
  if (!Array.isArray(labels)) throw invalidBody(PULL);
  const changedFiles = int(p, "changed_files", PULL);
  if (changedFiles < 0) throw invalidBody(PULL);
  const repo = toRepositoryInfo(base.repo, PULL);
  return {
    number: int(p, "number", PULL), headSha: sha(head, "sha", PULL), headRef: str(head, "ref", PULL), baseSha: sha(base, "sha", PULL),
    baseRef: str(base, "ref", PULL), author: { id: int(user, "id", PULL), login: str(user, "login", PULL) }, state: str(p, "state", PULL),
    draft: typeof p.draft === "boolean" ? p.draft : false, labels: labels.map((l) => str(object(l, PULL), "name", PULL)), changedFiles,
    repository: { owner: repo.owner, name: repo.name, ownerType: repo.ownerType }, updatedAtMs: zonedTimestampMs(p.updated_at),
  };
}

function toOpenSummary(value: unknown, route = PULLS): OpenPullRequestSummary {
  const p = object(value, route);
  const head = object(p.head, route);
  const base = object(p.base, route);
  return {
    number: int(p, "number", route), headSha: sha(head, "sha", route), headRef: str(head, "ref", route), baseRef: str(base, "ref", route),
    baseSha: sha(base, "sha", route), draft: typeof p.draft === "boolean" ? p.draft : false,
  };
}

/** A pull request the forge associates with a commit: any state (callers keep the open ones whose head it is). */
export interface PullOfCommit extends OpenPullRequestSummary {
  readonly state: string;
}

/**
 * The pull requests the forge associates with a commit (DESIGN 3.9: the shared-head check without listing the repository),
 * every page up to MAX_OPEN_PULL_REQUESTS, held to the complete-or-incomplete rule of every list. The forge computes this
 * list asynchronously (a new pull request may be missing for seconds) and names merged or closed ones too: openOnHead keeps
 * the open pull requests whose head is exactly the commit.
 */
export async function listPullRequestsOfCommit(
  t: Transport, installationId: number, owner: string, repo: string, commitSha: string, call?: CallOptions,
): Promise<Listed<PullOfCommit> & { retryAfterMs?: number | null }> {
  const listed = await listAll((params, c) => t.installation(installationId, COMMIT_PULLS, params, c), {
    route: COMMIT_PULLS, params: { owner, repo, commit_sha: commitSha }, maxItems: MAX_OPEN_PULL_REQUESTS, key: (item) => (item as Json | null)?.number,
  }, call);
  if (!listed.complete) return listed;
  try {
    return { complete: true, items: listed.items.map((value) => ({ ...toOpenSummary(value, COMMIT_PULLS), state: str(object(value, COMMIT_PULLS), "state", COMMIT_PULLS) })) };
  } catch (error) {
    return gapFromError(error);
  }
}

/** The open pull requests whose head is exactly `headSha`, of a commit's pull requests. */
export function openOnHead(items: readonly PullOfCommit[], headSha: string): OpenPullRequestRef[] {
  return items.filter((p) => p.state === "open" && p.headSha === headSha).map((p) => ({ number: p.number, headSha: p.headSha }));
}

export async function getPullRequest(t: Transport, installationId: number, owner: string, repo: string, number: number, call?: CallOptions): Promise<PullRequestDetails> {
  const response = await t.installation(installationId, PULL, { owner, repo, pull_number: number }, call);
  return toPullRequestDetails(response.data);
}

export async function getRepository(t: Transport, installationId: number, owner: string, repo: string, call?: CallOptions): Promise<RepositoryInfo> {
  const response = await t.installation(installationId, REPO, { owner, repo }, call);
  return toRepositoryInfo(response.data);
}

/** Open pull requests of a repository (optionally on one base ref), every page up to `max` (default MAX_OPEN_PULL_REQUESTS). */
export async function listOpenPullRequests(
  t: Transport, installationId: number, owner: string, repo: string, filter: { base?: string; max?: number } = {}, call?: CallOptions,
): Promise<Listed<OpenPullRequestSummary> & { retryAfterMs?: number | null }> {
  const listed = await listAll((params, c) => t.installation(installationId, PULLS, params, c), {
    route: PULLS, params: { owner, repo, state: "open", ...(filter.base ? { base: filter.base } : {}) },
    maxItems: filter.max ?? MAX_OPEN_PULL_REQUESTS, key: (item) => (item as Json | null)?.number,
  }, call);
  if (!listed.complete) return listed;
  try {
    return { complete: true, items: listed.items.map((item) => toOpenSummary(item)) };
  } catch (error) {
    return gapFromError(error);
  }
}
