// The forge client the service is wired with (DESIGN 2, 7.1): one object over the transport, each method a forge operation the
// service needs. Configured from plain options (server/config supplies them); it reads no environment.
import type { Logger } from "pino";
import type { Listed, OpenPullRequestRef } from "../evaluation/evidence.ts";
import * as checks from "./check-runs.ts";
import { createCaches } from "./caches.ts";
import { type BlobRead, readBlob, readFile, type FileLocation } from "./contents.ts";
import { readMergeQueue } from "./merge-queue.ts";
import type { QueueAnswer } from "../merge-queue/shapes.ts";
import { gatherEvidence, readRulesAt, type EvidenceRequest, type GatherOptions, type GatherResult } from "./evidence.ts";
import { listAll, type PageSink, type StreamOutcome, streamAll } from "./pagination.ts";
import * as pulls from "./pull-requests.ts";
import type { Governor } from "./governor.ts";
import { createTransport, type CallOptions, type Transport } from "./transport.ts";
import { int, object, str, type Json } from "./validate.ts";

/** Installations listed by the reconciler (bounded like every list, DESIGN 7.1). */
export const MAX_INSTALLATIONS = 10_000;
/** Repositories listed per installation. */
export const MAX_INSTALLATION_REPOSITORIES = 10_000;

/** Only what the reconciler and the open-pull-request index read of a listed pull request (the rest of it is not kept). */
const PULL_FIELDS = ["number", "state", "updated_at"] as const;
const BRANCH_FIELDS = ["sha", "ref"] as const;
function pick(value: unknown, fields: readonly string[]): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value; // left as it is: validation rejects it
  return Object.fromEntries(fields.filter((f) => f in value).map((f) => [f, (value as Json)[f]]));
}
/**
 * The reconciler's pull-request pages as they are returned and kept (transport.ts `keptAs`): a page of the forge's pull
 * requests is about a megabyte, of which these fields are a few kilobytes, so 100,000 open pull requests' pages stay
 * revalidatable. Anything that is not an object is left as it is, so a malformed page is rejected the same either way.
 */
export const RECONCILER_PULLS = {
  name: "reconciler",
  project: (data: unknown): unknown => !Array.isArray(data) ? data : data.map((item) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) return item;
    const kept = pick(item, PULL_FIELDS) as Json;
    for (const side of ["head", "base"] as const) if (side in item) kept[side] = pick((item as Json)[side], BRANCH_FIELDS);
    return kept;
  }),
} as const;

/**
 * Only what the merge recovery reads of a recently closed pull request (DESIGN 3.10), and only of merged ones (a closed pull
 * request that was not merged has nothing to recover): the page is kept for conditional requests beside the reconciler's
 * open pull requests (transport.ts CONDITIONAL_CACHE_BYTES), one per repository, so it must stay a few kilobytes at most.
 */
const CLOSED_PULL_FIELDS = ["number", "merged_at", "merge_commit_sha"] as const;
export const RECENTLY_CLOSED_PULLS = {
  name: "recently-closed",
  project: (data: unknown): unknown => !Array.isArray(data) ? data : data.flatMap((item) => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) return [item];
    if ((item as Json).merged_at === null || (item as Json).merged_at === undefined) return [];
    const kept = pick(item, CLOSED_PULL_FIELDS) as Json;
    if ("head" in item) kept.head = pick((item as Json).head, ["sha"]);
    // The base commit it merged onto: its enrollment is read there (server/records/enrollment.ts).
    if ("base" in item) kept.base = pick((item as Json).base, ["sha"]);
    return [kept];
  }),
} as const;
/** Recently closed pull requests asked for per repository and scan: one page, the forge's largest. */
export const RECENTLY_CLOSED_PAGE = 100;

export interface ForgeClientOptions {
  apiUrl: string;
  appId: number;
  privateKey: string;
  requestTimeoutMs: number;
  checkName: string;
  logger: Logger;
  fetch?: typeof fetch;
  userAgent?: string;
  /** The request governor (governor.ts); the transport makes one with the default settings when absent. */
  governor?: Governor;
}

export type ListResult = Listed<unknown> & { retryAfterMs?: number | null; notList?: true };

export interface ForgeClient {
  readonly appId: number;
  readonly checkName: string;
  /** GET /app (App JWT): the identity probe. */
  getApp(call?: CallOptions): Promise<{ id: number; slug: string }>;
  /** GET /app/installations, every page; raw items (the reconciler validates them). */
  listInstallations(call?: CallOptions): Promise<ListResult>;
  /** GET /installation/repositories, every page; raw repository items. */
  listInstallationRepositories(installationId: number, call?: CallOptions): Promise<ListResult>;
  /**
   * GET /repos/{owner}/{repo}/pulls?state=open, every page up to `max`, without holding the list (the reconciler, DESIGN 3.9):
   * each page's items (RECONCILER_PULLS' fields; the reconciler validates them itself) go to `onPage` before the next page is
   * asked for; the outcome says whether the pages told make the whole list.
   */
  streamOpenPullRequestItems(installationId: number, owner: string, repo: string, max: number, onPage: PageSink, call?: CallOptions): Promise<StreamOutcome>;
  /**
   * The repository's most recently updated closed pull requests (`state=closed&sort=updated&direction=desc`, one page of
   * RECENTLY_CLOSED_PAGE): one conditional request; `notModified` when the forge answered 304 (nothing closed or changed since
   * the last answer, no rate limit spent). Items keep RECENTLY_CLOSED_PULLS' fields; the caller validates them.
   */
  listRecentlyClosedPullRequests(installationId: number, owner: string, repo: string, call?: CallOptions): Promise<{ readonly notModified: boolean; readonly items: unknown }>;
  getRepository(installationId: number, owner: string, repo: string, call?: CallOptions): Promise<pulls.RepositoryInfo>;
  getPullRequest(installationId: number, owner: string, repo: string, number: number, call?: CallOptions): Promise<pulls.PullRequestDetails>;
  listOpenPullRequests(installationId: number, owner: string, repo: string, filter?: { base?: string; max?: number }, call?: CallOptions): ReturnType<typeof pulls.listOpenPullRequests>;
  /** GET /repos/{owner}/{repo}/commits/{sha}/pulls, every page: the open pull requests whose head is exactly `headSha` (DESIGN 3.9). */
  listOpenPullRequestsOnHead(installationId: number, owner: string, repo: string, headSha: string, call?: CallOptions): Promise<Listed<OpenPullRequestRef> & { retryAfterMs?: number | null }>;
  readFile(at: FileLocation, maxBytes: number, call?: CallOptions): ReturnType<typeof readFile>;
  /** GET /repos/{owner}/{repo}/git/blobs/{sha}: a blob by its SHA, at most `maxBytes`, verified against the SHA (contents.ts). */
  readBlob(at: { installationId: number; owner: string; repo: string; sha: string }, maxBytes: number, call?: CallOptions): Promise<BlobRead>;
  gatherEvidence(request: EvidenceRequest, options: GatherOptions): Promise<GatherResult>;
  /** The code-owners files and repository policy at a commit (cached per commit: a merge group's rules, DESIGN 3.14). */
  /** The merge queue of a branch (one bounded GraphQL request, DESIGN 3.14): its entries, or null when the forge did not show them whole. */
  readMergeQueue(at: { installationId: number; owner: string; repo: string; branch: string }, call?: CallOptions): Promise<QueueAnswer | null>;
  readRulesAt(at: { installationId: number; owner: string; repo: string; ref: string; policyPath: string; forgeDirectory: string }, call?: CallOptions): ReturnType<typeof readRulesAt>;
  findManagedCheck(target: checks.CheckTarget, call?: CallOptions): Promise<checks.ManagedCheck | null>;
  createInProgressCheck(target: checks.CheckTarget, output: checks.CheckOutput, call?: CallOptions): Promise<checks.ManagedCheck>;
  createCompletedCheck(target: checks.CheckTarget, conclusion: checks.CheckConclusion, output: checks.CheckOutput, completedAt?: Date, call?: CallOptions): Promise<checks.ManagedCheck>;
  /** `check` comes from findManagedCheck/create for the same head; a check of another head is refused before any write. */
  setCheckInProgress(target: checks.CheckTarget, check: checks.ManagedCheck, output: checks.CheckOutput, call?: CallOptions): Promise<checks.ManagedCheck>;
  ensureCheckInProgress(target: checks.CheckTarget, output: checks.CheckOutput, call?: CallOptions): Promise<checks.ManagedCheck>;
  completeCheck(target: checks.CheckTarget, check: checks.ManagedCheck, conclusion: checks.CheckConclusion, output: checks.CheckOutput, completedAt?: Date, call?: CallOptions): Promise<checks.ManagedCheck>;
}

export function createForgeClient(options: ForgeClientOptions): ForgeClient {
  const t: Transport = createTransport(options);
  const caches = createCaches();
  const name = options.checkName;
  return {
    appId: options.appId,
    checkName: name,
    async getApp(call) {
      const route = "GET /app";
      const body = object((await t.app(route, {}, call)).data, route);
      return { id: int(body, "id", route), slug: str(body, "slug", route) };
    },
    listInstallations: (call) => listAll((params, c) => t.app("GET /app/installations", params, c), {
      route: "GET /app/installations", params: {}, maxItems: MAX_INSTALLATIONS, key: (item) => (item as Json | null)?.id,
    }, call),
    listInstallationRepositories: (installationId, call) => listAll((params, c) => t.installation(installationId, "GET /installation/repositories", params, c), {
      route: "GET /installation/repositories", params: {}, itemsKey: "repositories", countKey: "total_count", maxItems: MAX_INSTALLATION_REPOSITORIES, key: (item) => (item as Json | null)?.id,
    }, call),
    streamOpenPullRequestItems: (installationId, owner, repo, max, onPage, call) => streamAll((params, c) => t.installation(installationId, "GET /repos/{owner}/{repo}/pulls", params, c), {
      route: "GET /repos/{owner}/{repo}/pulls", params: { owner, repo, state: "open" }, maxItems: max, key: (item) => (item as Json | null)?.number,
    }, onPage, { ...call, keptAs: RECONCILER_PULLS }),
    listRecentlyClosedPullRequests: async (installationId, owner, repo, call) => {
      const response = await t.installation(installationId, "GET /repos/{owner}/{repo}/pulls", { owner, repo, state: "closed", sort: "updated", direction: "desc", per_page: RECENTLY_CLOSED_PAGE }, { ...call, keptAs: RECENTLY_CLOSED_PULLS });
      return { notModified: response.revalidated === true, items: response.data };
    },
    getRepository: (installationId, owner, repo, call) => pulls.getRepository(t, installationId, owner, repo, call),
    getPullRequest: (installationId, owner, repo, number, call) => pulls.getPullRequest(t, installationId, owner, repo, number, call),
    listOpenPullRequests: (installationId, owner, repo, filter, call) => pulls.listOpenPullRequests(t, installationId, owner, repo, filter, call),
    async listOpenPullRequestsOnHead(installationId, owner, repo, headSha, call) {
      const listed = await pulls.listPullRequestsOfCommit(t, installationId, owner, repo, headSha, call);
      return listed.complete ? { complete: true, items: pulls.openOnHead(listed.items, headSha) } : listed;
    },
    readFile: (at, maxBytes, call) => readFile(t, caches.files, at, maxBytes, call),
    readBlob: (at, maxBytes, call) => readBlob(t, at, maxBytes, call),
    gatherEvidence: (request, gather) => gatherEvidence(t, caches, request, gather),
    readRulesAt: (at, call) => readRulesAt(t, caches, at, call),
    readMergeQueue: (at, call) => readMergeQueue(t, at, call),
    findManagedCheck: (target, call) => checks.findManagedCheck(t, name, target, call),
    createInProgressCheck: (target, output, call) => checks.createInProgressCheck(t, name, target, output, call),
    createCompletedCheck: (target, conclusion, output, completedAt, call) => checks.createCompletedCheck(t, name, target, conclusion, output, completedAt ?? new Date(), call),
    setCheckInProgress: (target, check, output, call) => checks.setCheckInProgress(t, name, target, check, output, call),
    ensureCheckInProgress: (target, output, call) => checks.ensureCheckInProgress(t, name, target, output, call),
    completeCheck: (target, check, conclusion, output, completedAt, call) => checks.completeCheck(t, name, target, check, conclusion, output, completedAt ?? new Date(), call),
  };
}
