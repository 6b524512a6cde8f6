// Evidence gathering (DESIGN 2, 3.2, 3.6): everything evaluate() looks at, fetched completely and bounded before evaluation.
// Order: the pull request first (its changed_files is checked against MAX_PULL_REQUEST_FILES before listing); then, in parallel,
// files (kept by head and base commit), reviews, code-owners file and repository policy at the base commit (kept by commit),
// organization policy at the organization policy repository's default-branch head (kept by that commit; the head itself asked
// again unless confirmed within the evaluation's authority epoch moments ago), and the open pull requests on the same head
// (the forge's list of the head's pull requests, united with the store's open-pull-request index: DESIGN 3.9); a fresh file
// list is proven by a read of the pull request after it (that list, when it names the pull request); then, in rounds, the directory facts the decision core
// still needs (planLookups), each looked up afresh. Any failure becomes an explicit Gap or incomplete Lookup, never a partial
// list that looks whole.
import { firstLineOf } from "../evaluation/break-glass.ts";
import { changedPaths, headReadsNeeded } from "../evaluation/change-preview.ts";
import {
  codeownersLocations, type ChangedFile, type CodeownersEvidence, type DirectoryFacts, type Evidence, type FileRead, type HeadFiles, type Listed,
  type ForgeUser, type Lookup, type Membership, type OpenPullRequestRef, type Review, type ReviewEdit, type TeamFacts,
} from "../evaluation/evidence.ts";
import type { LookupPlan } from "../evaluation/plan-lookups.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES, MAX_PULL_REQUEST_FILES, MAX_RESOLVED_OWNERS, MAX_REVIEWS, MAX_TRUSTED_APPS } from "../policy/bounds.ts";
import { fileListKey, type ForgeCaches } from "./caches.ts";
import { type HeadReuse, readAtDefaultBranchHead, readFile } from "./contents.ts";
import * as directory from "./directory.ts";
import { ForgeError } from "./errors.ts";
import { reviewEdits } from "./graphql.ts";
import { gap, gapFromError, listAll } from "./pagination.ts";
import { getPullRequest, listPullRequestsOfCommit, openOnHead, type PullOfCommit, type PullRequestDetails } from "./pull-requests.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { int, isZonedTimestamp, object, optStr, str, type Json } from "./validate.ts";

/**
 * The decision core's planLookups bound to the process settings: `(e, known) => planLookups(e, settings, known)`, or its run
 * on an evaluation thread (server/worker/evaluator.ts), which answers asynchronously. Called once per round of directory
 * lookups with the facts fetched so far (`known`); it must pass them on, or the lookups a later round needs are never made
 * and the evaluation fails closed.
 */
export type PlanLookups = (evidence: Omit<Evidence, "directory">, known: DirectoryFacts) => LookupPlan | Promise<LookupPlan>;
export type { LookupPlan };

export interface EvidenceRequest {
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  /** SERVICE_POLICY_PATH */
  policyPath: string;
  /** SERVICE_FORGE_DIRECTORY: where the first code-owners location is. */
  forgeDirectory: string;
  /** SERVICE_ORGANIZATION_POLICY_REPOSITORY */
  organizationPolicyRepository: string;
}

export interface GatherOptions {
  planLookups: PlanLookups;
  signal?: AbortSignal;
  /** Directory lookups in flight at once. */
  concurrency?: number;
  /** The governor's priority of every request of this gathering (CallOptions.priority; interactive when absent). */
  priority?: CallOptions["priority"];
  /**
   * The authority epoch the evaluation captured with its fences, and the time: the organization policy's head confirmed at
   * that epoch moments ago is not asked about again (contents.ts ORGANIZATION_POLICY_RECHECK_MS). Absent: always asked.
   */
  organizationPolicyReuse?: HeadReuse;
  /**
   * The pull request as read after the acceptance whose evaluation generation the evaluation captured (server/ingress/
   * pull-handoff.ts): used instead of reading it again. Absent: read here.
   */
  knownPullRequest?: PullRequestDetails;
  /**
   * The open pull requests the store's open-pull-request index names on a head (DESIGN 3.9), united with the forge's list of
   * the head's pull requests for the shared-head check. Absent: the forge's list alone. A rejection makes that evidence
   * incomplete (transient).
   */
  indexedOnHead?: (headSha: string) => Promise<readonly number[]>;
}

export type GatherResult =
  /**
   * `retryAfterMs`: the longest provider delay any rate-limited request of this gathering asked for (null: none).
   * `requests`: forge requests issued; `notModified`: how many of them the forge answered 304 (no rate limit spent).
   */
  | { kind: "gathered"; evidence: Evidence; pullRequest: PullRequestDetails; retryAfterMs: number | null; requests: number; notModified: number }
  /** The pull request itself could not be read: nothing to evaluate. */
  | { kind: "unavailable"; error: ForgeError; requests: number };

const FILES = "GET /repos/{owner}/{repo}/pulls/{pull_number}/files";
const REVIEWS = "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews";
const DEFAULT_CONCURRENCY = 8;

export async function gatherEvidence(t: Transport, caches: ForgeCaches, request: EvidenceRequest, options: GatherOptions): Promise<GatherResult> {
  const counter = { requests: 0, notModified: 0 };
  const delays: number[] = [];
  const call: CallOptions = { counter, onRateLimit: (ms) => delays.push(ms), ...(options.signal ? { signal: options.signal } : {}), ...(options.priority ? { priority: options.priority } : {}) };
  const { installationId, owner, repo } = request;
  let pr: PullRequestDetails;
  try {
    pr = options.knownPullRequest ?? (await getPullRequest(t, installationId, owner, repo, request.number, call));
  } catch (error) {
    return { kind: "unavailable", error: error instanceof ForgeError ? error : new ForgeError("transient", "pull request could not be read"), requests: counter.requests };
  }
  const base = { installationId, owner, repo };

  // The file list at this head and base is kept once proven (fileListKey). Its pages are separate requests, and a push
  // between two of them mixes two heads while the count can still match: a fresh list is proven by a read of the pull
  // request after it (provenFiles), and only a proven one is used, and kept under those commits. The head's pull requests
  // (the shared-head check, DESIGN 3.9) are asked for after a fresh list, so that their answer is that read when it names
  // this pull request: one request fewer per fresh list.
  const filesAt = fileListKey({ ...base, number: pr.number, headSha: pr.headSha, baseSha: pr.baseSha });
  const keptFiles = caches.fileLists.get(filesAt);
  const ofCommit = () => listPullRequestsOfCommit(t, installationId, owner, repo, pr.headSha, call);
  const filesAndPulls: Promise<[Listed<ChangedFile>, Listed<PullOfCommit>]> = keptFiles
    ? ofCommit().then((pulls) => [{ complete: true, items: keptFiles }, pulls])
    : provenFiles(t, request, pr, call, ofCommit);
  const indexed: Promise<Listed<number>> = options.indexedOnHead
    ? options.indexedOnHead(pr.headSha).then((items) => ({ complete: true as const, items: [...items] }), () => gap("transient", "the open-pull-request index could not be read"))
    : Promise.resolve({ complete: true, items: [] });
  const [[files, ofHead], reviews, codeowners, repositoryPolicy, organizationPolicy, fromIndex] = await Promise.all([
    filesAndPulls,
    listReviews(t, request, call),
    readCodeowners(t, caches.files, { ...base, ref: pr.baseSha }, request.forgeDirectory, call),
    readFile(t, caches.files, { ...base, path: request.policyPath, ref: pr.baseSha }, MAX_POLICY_FILE_BYTES, call),
    pr.repository.ownerType === "Organization"
      ? readAtDefaultBranchHead(t, caches.files, caches.heads, { installationId, owner, repo: request.organizationPolicyRepository, path: request.policyPath }, MAX_POLICY_FILE_BYTES, call, options.organizationPolicyReuse)
      : Promise.resolve<FileRead>({ kind: "missing" }),
    indexed,
  ]);
  if (!keptFiles && files.complete) caches.fileLists.set(filesAt, files.items);
  // Shared head: the forge's open pull requests on the head, united with the index's (either naming another makes it shared).
  const sameHead: Listed<OpenPullRequestRef> = !ofHead.complete ? ofHead : !fromIndex.complete ? fromIndex : {
    complete: true,
    items: [...new Map([...openOnHead(ofHead.items, pr.headSha), ...fromIndex.items.map((number) => ({ number, headSha: pr.headSha }))].map((p) => [p.number, p])).values()],
  };

  // The change preview (issue 19 item 2): only when the pull request changes a policy file that matters, its head version.
  const headFiles = files.complete ? await readHeadFiles(t, caches.files, { ...base, ref: pr.headSha }, files.items, codeowners, repositoryPolicy, request, call) : null;

  const partial: Omit<Evidence, "directory"> = {
    evidenceVersion: 1,
    repository: pr.repository,
    pullRequest: {
      number: pr.number, headSha: pr.headSha, baseSha: pr.baseSha, baseRef: pr.baseRef, author: pr.author, state: pr.state,
      draft: pr.draft, labels: pr.labels, changedFiles: pr.changedFiles,
    },
    files: plain(files), reviews: plain(reviews), codeowners, repositoryPolicy, organizationPolicy, sameHeadPullRequests: plain(sameHead),
    ...(headFiles ? { headFiles } : {}),
  };
  const dir = await fetchDirectory(t, request, pr.repository.ownerType === "Organization", (known) => options.planLookups(partial, known), options.concurrency ?? DEFAULT_CONCURRENCY, call);
  return {
    kind: "gathered", evidence: { ...partial, directory: dir }, pullRequest: pr,
    retryAfterMs: delays.length ? Math.max(...delays) : null, requests: counter.requests, notModified: counter.notModified,
  };
}

/** Evidence is plain data: a gap carries its cause and detail only (the provider delay is reported beside the evidence). */
function plain<T>(listed: Listed<T>): Listed<T> {
  return listed.complete ? listed : { complete: false, cause: listed.cause, detail: listed.detail };
}

/**
 * The files list, proven to be of the head and base read before it: a read of the pull request after the list must still
 * show both, else a push (or a base change) may have come between two of its pages, and the list is incomplete (transient:
 * the job retries and then reads the new head). That read is the head's pull-request list asked for after the files
 * (`ofCommit`) when it names this pull request; else the pull request itself (a conditional request: 304 when nothing
 * changed). Answers the list and the head's pull requests.
 */
async function provenFiles(t: Transport, r: EvidenceRequest, pr: PullRequestDetails, call: CallOptions, ofCommit: () => Promise<Listed<PullOfCommit>>): Promise<[Listed<ChangedFile>, Listed<PullOfCommit>]> {
  const listed = await listFiles(t, r, pr, call);
  const pulls = await ofCommit();
  if (!listed.complete) return [listed, pulls];
  let after: { headSha: string; baseSha: string } | undefined = pulls.complete ? pulls.items.find((p) => p.number === pr.number) : undefined;
  if (after === undefined) {
    try {
      after = await getPullRequest(t, r.installationId, r.owner, r.repo, r.number, call);
    } catch (error) {
      return [gapFromError(error), pulls];
    }
  }
  if (after.headSha !== pr.headSha || after.baseSha !== pr.baseSha) {
    return [gap("transient", `${FILES}: the pull request's ${after.headSha !== pr.headSha ? "head" : "base"} commit changed while its files were listed`), pulls];
  }
  return [listed, pulls];
}

async function listFiles(t: Transport, r: EvidenceRequest, pr: PullRequestDetails, call: CallOptions): Promise<Listed<ChangedFile>> {
  if (pr.changedFiles >= MAX_PULL_REQUEST_FILES) return gap("over_bound", `the pull request changes ${pr.changedFiles} files; the bound is under ${MAX_PULL_REQUEST_FILES}`);
  const listed = await listAll((params, c) => t.installation(r.installationId, FILES, params, c), {
    route: FILES, params: { owner: r.owner, repo: r.repo, pull_number: r.number }, maxItems: MAX_PULL_REQUEST_FILES - 1,
    expectedCount: pr.changedFiles, key: (item) => (item as Json | null)?.filename,
  }, call);
  if (!listed.complete) return listed;
  try {
    return { complete: true, items: listed.items.map((value) => {
      const f = object(value, FILES);
      return { filename: str(f, "filename", FILES), status: str(f, "status", FILES), previousFilename: optStr(f, "previous_filename", FILES) };
    }) };
  } catch (error) {
    return gapFromError(error);
  }
}

async function listReviews(t: Transport, r: EvidenceRequest, call: CallOptions): Promise<Listed<Review>> {
  const listed = await listAll((params, c) => t.installation(r.installationId, REVIEWS, params, c), {
    route: REVIEWS, params: { owner: r.owner, repo: r.repo, pull_number: r.number }, maxItems: MAX_REVIEWS, key: (item) => (item as Json | null)?.id,
  }, call);
  if (!listed.complete) return listed;
  try {
    return { complete: true, items: listed.items.map((value) => {
      const v = object(value, REVIEWS);
      const u = v.user === null || v.user === undefined ? null : object(v.user, REVIEWS);
      // Only the body's first line, bounded (a break-glass request, DESIGN 3.11): nothing more of a body is kept.
      const line = firstLineOf(optStr(v, "body", REVIEWS) ?? "");
      const nodeId = optStr(v, "node_id", REVIEWS);
      return {
        id: int(v, "id", REVIEWS), state: str(v, "state", REVIEWS), commitId: optStr(v, "commit_id", REVIEWS),
        // Recorded only (decision records), never decided on: anything but a zoned timestamp is "not said", not an error.
        submittedAt: isZonedTimestamp(v.submitted_at) ? (v.submitted_at as string) : null,
        user: u ? { id: int(u, "id", REVIEWS), login: str(u, "login", REVIEWS), type: str(u, "type", REVIEWS) } : null,
        ...(line === "" ? {} : { bodyFirstLine: line }),
        ...(nodeId === null || nodeId === "" ? {} : { nodeId }),
      };
    }) };
  } catch (error) {
    return gapFromError(error);
  }
}

/**
 * The rules at a commit, as a decision on a pull request based there reads them: the code-owners locations in precedence order
 * and the repository policy. Reads at a commit never change, so each goes through the file cache: a commit's rules are read
 * once (a merge group's members that merge onto one commit, and every group built on it, share the reads).
 */
export async function readRulesAt(t: Transport, caches: ForgeCaches, at: { installationId: number; owner: string; repo: string; ref: string; policyPath: string; forgeDirectory: string }, call: CallOptions = {}): Promise<{ codeowners: CodeownersEvidence; repositoryPolicy: FileRead }> {
  const { policyPath, forgeDirectory, ...where } = at;
  const [codeowners, repositoryPolicy] = await Promise.all([
    readCodeowners(t, caches.files, where, forgeDirectory, call),
    readFile(t, caches.files, { ...where, path: policyPath }, MAX_POLICY_FILE_BYTES, call),
  ]);
  return { codeowners, repositoryPolicy };
}

/** Reads the code-owners locations in precedence order, stopping at the first that is not missing (DESIGN 3.2 rule 1). */
async function readCodeowners(t: Transport, cache: ForgeCaches["files"], at: { installationId: number; owner: string; repo: string; ref: string }, forgeDirectory: string, call: CallOptions): Promise<CodeownersEvidence> {
  const result: Record<string, FileRead> = {};
  for (const path of codeownersLocations(forgeDirectory)) {
    const read = await readFile(t, cache, { ...at, path }, MAX_CODEOWNERS_BYTES - 1, call);
    result[path] = read;
    if (read.kind !== "missing") break;
  }
  return result;
}

/**
 * The policy files at the head commit, or null when the pull request changes none that matters (headReadsNeeded): then no
 * request is made. Code-owners locations are walked in precedence order like at the base, but a location the pull request
 * leaves alone has the base's content, so its base read is reused; usually the one changed file is the only request.
 * Reads at the head SHA are immutable, so they go through the same file cache.
 */
async function readHeadFiles(
  t: Transport, cache: ForgeCaches["files"], at: { installationId: number; owner: string; repo: string; ref: string },
  files: readonly ChangedFile[], baseCodeowners: CodeownersEvidence, basePolicy: FileRead, where: { policyPath: string; forgeDirectory: string }, call: CallOptions,
): Promise<HeadFiles | null> {
  const needed = headReadsNeeded(files, baseCodeowners, where);
  if (needed === null) return null;
  const { policyPath } = where;
  const changed = changedPaths(files);
  const codeowners: Record<string, FileRead> = {};
  for (const path of codeownersLocations(where.forgeDirectory)) {
    const kept = changed.has(path) ? undefined : baseCodeowners[path];
    const read = kept ?? (await readFile(t, cache, { ...at, path }, MAX_CODEOWNERS_BYTES - 1, call));
    codeowners[path] = read;
    if (read.kind !== "missing") break;
  }
  const repositoryPolicy = needed.repositoryPolicy ? await readFile(t, cache, { ...at, path: policyPath }, MAX_POLICY_FILE_BYTES, call) : basePolicy;
  return { codeowners, repositoryPolicy };
}

/** Rounds of directory lookups per evaluation: the lazy plan needs two (user routes, then team routes where still needed). */
export const MAX_LOOKUP_ROUNDS = 4;

/**
 * Directory facts in rounds: each round asks the plan what is still needed given the facts fetched so far and fetches only
 * that, until the plan asks for nothing new (or MAX_LOOKUP_ROUNDS). Every fact is fetched afresh for this evaluation
 * (conditional requests at most): nothing here outlives it (DESIGN 7.1).
 */
async function fetchDirectory(t: Transport, r: EvidenceRequest, orgOwned: boolean, plan: (known: DirectoryFacts) => LookupPlan | Promise<LookupPlan>, concurrency: number, call: CallOptions): Promise<DirectoryFacts> {
  const at = { installationId: r.installationId, owner: r.owner, repo: r.repo };
  // Keyed by logins, teams and slugs from CODEOWNERS and reviews: Maps, turned into records by Object.fromEntries, because
  // `record[login] = …` with the login `__proto__` would set the record's prototype instead of adding an entry. Keys are
  // lower-cased here (the forge compares them case-insensitively); the records keep the spelling first planned.
  type Keyed<T> = Map<string, [string, T]>;
  const collaborators: Keyed<Lookup<{ permission: string }>> = new Map();
  const organizationMemberships: Keyed<Lookup<Membership>> = new Map();
  type TeamLookups = { team?: TeamFacts["team"]; repository?: TeamFacts["repository"]; memberships: Keyed<Lookup<Membership>> };
  const teamFacts: Keyed<TeamLookups> = new Map();
  const appFacts: Keyed<Lookup<{ id: number; slug: string }>> = new Map();
  const botUsers: Keyed<Lookup<ForgeUser>> = new Map();
  // Asked once per evaluation, in one GraphQL query, when the plan first names break-glass requests that could override.
  let reviewEditFacts: Record<string, Lookup<ReviewEdit>> | null = null;
  const record = <T, U>(map: Keyed<T>, as: (value: T) => U) => Object.fromEntries([...map.values()].map(([key, value]) => [key, as(value)]));
  const facts = (): DirectoryFacts => ({
    collaborators: record(collaborators, (v) => v),
    organizationMemberships: record(organizationMemberships, (v) => v),
    teams: record(teamFacts, (f) => ({ ...(f.team ? { team: f.team } : {}), ...(f.repository ? { repository: f.repository } : {}), memberships: record(f.memberships, (v) => v) })),
    apps: record(appFacts, (v) => v),
    botUsers: record(botUsers, (v) => v),
    ...(reviewEditFacts === null ? {} : { reviewEdits: reviewEditFacts }),
  });
  // Owners beyond the bound are not looked up: evaluate() then finds their facts absent and fails closed. The bound counts
  // distinct owners, users and teams together, over every round.
  let resolved = 0;
  const ownerBound = () => resolved < MAX_RESOLVED_OWNERS;
  /** Queues the lookup of `key` unless it was already made (or planned) for this evaluation. */
  const lookUp = <T>(map: Keyed<T>, key: string, fetch: () => Promise<T>, tasks: (() => Promise<void>)[]) => {
    if (map.has(key.toLowerCase())) return;
    const entry: [string, T] = [key, undefined as T]; // filled in before the next round reads it
    map.set(key.toLowerCase(), entry);
    tasks.push(async () => { entry[1] = await fetch(); });
  };

  for (let round = 0; round < MAX_LOOKUP_ROUNDS; round++) {
    const next = await plan(facts());
    const tasks: (() => Promise<void>)[] = [];
    for (const login of next.collaborators) {
      if (collaborators.has(login.toLowerCase()) || !ownerBound()) continue;
      resolved++;
      lookUp(collaborators, login, () => directory.collaboratorPermission(t, at, login, call), tasks);
    }
    for (const login of orgOwned ? next.organizationMemberships : []) {
      if (organizationMemberships.size < MAX_RESOLVED_OWNERS) lookUp(organizationMemberships, login, () => directory.organizationMembership(t, r.installationId, r.owner, login, call), tasks);
    }
    for (const { team, members, info } of next.teams) {
      const [org, slug, extra] = team.split("/");
      if (!org || !slug || extra !== undefined) continue;
      if (!teamFacts.has(team.toLowerCase())) {
        if (!ownerBound()) continue;
        resolved++;
        teamFacts.set(team.toLowerCase(), [team, { memberships: new Map() }]);
      }
      const lookups = teamFacts.get(team.toLowerCase())![1];
      if (info && lookups.team === undefined && lookups.repository === undefined) {
        // Set before the fetch so that no later round asks again; filled in before the next round reads it.
        lookups.team = lookups.repository = { kind: "incomplete", cause: "transient", detail: "being looked up" };
        tasks.push(async () => { lookups.team = await directory.team(t, r.installationId, org, slug, call); });
        tasks.push(async () => { lookups.repository = await directory.teamRepository(t, at, org, slug, call); });
      }
      for (const login of members) lookUp(lookups.memberships, login, () => directory.teamMembership(t, r.installationId, org, slug, login, call), tasks);
    }
    for (const slug of next.apps) if (appFacts.size < MAX_TRUSTED_APPS) lookUp(appFacts, slug, () => directory.appBySlug(t, r.installationId, slug, call), tasks);
    for (const login of next.botUsers) if (botUsers.size < MAX_TRUSTED_APPS) lookUp(botUsers, login, () => directory.user(t, r.installationId, login, call), tasks);
    if (reviewEditFacts === null && (next.reviewEdits?.length ?? 0) > 0) {
      const asked: Record<string, Lookup<ReviewEdit>> = {};
      reviewEditFacts = asked;
      tasks.push(async () => { Object.assign(asked, await reviewEdits(t, r.installationId, next.reviewEdits!, call)); });
    }
    if (tasks.length === 0) break;
    await runLimited(tasks, concurrency);
  }
  return facts();
}

async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => { while (next < tasks.length) await tasks[next++]!(); };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
}
