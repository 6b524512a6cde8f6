// Evidence gathering (DESIGN 2, 3.2, 3.6): everything evaluate() looks at, fetched completely and bounded before evaluation.
// Order: the pull request first (its changed_files is checked against MAX_PULL_REQUEST_FILES before listing); then, in parallel,
// files, reviews, code-owners file and repository policy at the base commit, organization policy from the organization policy
// repository's default branch, and the open pull requests on the same head; then the directory facts the decision core asks for
// (planLookups), each revalidated. Any failure becomes an explicit Gap or incomplete Lookup, never a partial list that looks whole.
import {
  CODEOWNERS_LOCATIONS, type ChangedFile, type CodeownersEvidence, type DirectoryFacts, type Evidence, type FileRead, type Listed,
  type ForgeUser, type Lookup, type Membership, type OpenPullRequestRef, type Review, type TeamFacts,
} from "../evaluation/evidence.ts";
import type { LookupPlan } from "../evaluation/plan-lookups.ts";
import { MAX_CODEOWNERS_BYTES, MAX_OPEN_PULL_REQUESTS, MAX_POLICY_FILE_BYTES, MAX_PULL_REQUEST_FILES, MAX_RESOLVED_OWNERS, MAX_REVIEWS, MAX_TRUSTED_APPS } from "../policy/bounds.ts";
import { readFile, type FileCache } from "./contents.ts";
import * as directory from "./directory.ts";
import { ForgeError } from "./errors.ts";
import { gap, gapFromError, listAll } from "./pagination.ts";
import { getPullRequest, listOpenPullRequests, type PullRequestDetails } from "./pull-requests.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { int, object, optStr, str, type Json } from "./validate.ts";

/**
 * The decision core's planLookups bound to the process settings: `(e) => planLookups(e, settings)`, or its run on an
 * evaluation thread (server/worker/evaluator.ts), which answers asynchronously.
 */
export type PlanLookups = (evidence: Omit<Evidence, "directory">) => LookupPlan | Promise<LookupPlan>;
export type { LookupPlan };

export interface EvidenceRequest {
  installationId: number;
  owner: string;
  repo: string;
  number: number;
  /** SERVICE_POLICY_PATH */
  policyPath: string;
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

export async function gatherEvidence(t: Transport, cache: FileCache, request: EvidenceRequest, options: GatherOptions): Promise<GatherResult> {
  const counter = { requests: 0, notModified: 0 };
  const delays: number[] = [];
  const call: CallOptions = { counter, onRateLimit: (ms) => delays.push(ms), ...(options.signal ? { signal: options.signal } : {}), ...(options.priority ? { priority: options.priority } : {}) };
  const { installationId, owner, repo } = request;
  let pr: PullRequestDetails;
  try {
    pr = await getPullRequest(t, installationId, owner, repo, request.number, call);
  } catch (error) {
    return { kind: "unavailable", error: error instanceof ForgeError ? error : new ForgeError("transient", "pull request could not be read"), requests: counter.requests };
  }
  const base = { installationId, owner, repo };

  const [files, reviews, codeowners, repositoryPolicy, organizationPolicy, sameHead] = await Promise.all([
    listFiles(t, request, pr, call),
    listReviews(t, request, call),
    readCodeowners(t, cache, { ...base, ref: pr.baseSha }, call),
    readFile(t, cache, { ...base, path: request.policyPath, ref: pr.baseSha }, MAX_POLICY_FILE_BYTES, call),
    pr.repository.ownerType === "Organization"
      ? readFile(t, cache, { installationId, owner, repo: request.organizationPolicyRepository, path: request.policyPath }, MAX_POLICY_FILE_BYTES, call)
      : Promise.resolve<FileRead>({ kind: "missing" }),
    sameHeadPullRequests(t, request, pr, call),
  ]);

  const partial: Omit<Evidence, "directory"> = {
    evidenceVersion: 1,
    repository: pr.repository,
    pullRequest: {
      number: pr.number, headSha: pr.headSha, baseSha: pr.baseSha, baseRef: pr.baseRef, author: pr.author, state: pr.state,
      draft: pr.draft, labels: pr.labels, changedFiles: pr.changedFiles,
    },
    files: plain(files), reviews: plain(reviews), codeowners, repositoryPolicy, organizationPolicy, sameHeadPullRequests: plain(sameHead),
  };
  const plan = await options.planLookups(partial);
  const dir = await fetchDirectory(t, request, pr.repository.ownerType === "Organization", plan, options.concurrency ?? DEFAULT_CONCURRENCY, call);
  return {
    kind: "gathered", evidence: { ...partial, directory: dir }, pullRequest: pr,
    retryAfterMs: delays.length ? Math.max(...delays) : null, requests: counter.requests, notModified: counter.notModified,
  };
}

/** Evidence is plain data: a gap carries its cause and detail only (the provider delay is reported beside the evidence). */
function plain<T>(listed: Listed<T>): Listed<T> {
  return listed.complete ? listed : { complete: false, cause: listed.cause, detail: listed.detail };
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
      return {
        id: int(v, "id", REVIEWS), state: str(v, "state", REVIEWS), commitId: optStr(v, "commit_id", REVIEWS),
        user: u ? { id: int(u, "id", REVIEWS), login: str(u, "login", REVIEWS), type: str(u, "type", REVIEWS) } : null,
      };
    }) };
  } catch (error) {
    return gapFromError(error);
  }
}

/** Reads the code-owners locations in precedence order, stopping at the first that is not missing (DESIGN 3.2 rule 1). */
async function readCodeowners(t: Transport, cache: FileCache, at: { installationId: number; owner: string; repo: string; ref: string }, call: CallOptions): Promise<CodeownersEvidence> {
  const result: Partial<Record<(typeof CODEOWNERS_LOCATIONS)[number], FileRead>> = {};
  for (const path of CODEOWNERS_LOCATIONS) {
    const read = await readFile(t, cache, { ...at, path }, MAX_CODEOWNERS_BYTES - 1, call);
    result[path] = read;
    if (read.kind !== "missing") break;
  }
  return result;
}

async function sameHeadPullRequests(t: Transport, r: EvidenceRequest, pr: PullRequestDetails, call: CallOptions): Promise<Listed<OpenPullRequestRef>> {
  const open = await listOpenPullRequests(t, r.installationId, r.owner, r.repo, { max: MAX_OPEN_PULL_REQUESTS }, call);
  if (!open.complete) return open;
  return { complete: true, items: open.items.filter((p) => p.headSha === pr.headSha).map((p) => ({ number: p.number, headSha: p.headSha })) };
}

async function fetchDirectory(t: Transport, r: EvidenceRequest, orgOwned: boolean, plan: LookupPlan, concurrency: number, call: CallOptions): Promise<DirectoryFacts> {
  const at = { installationId: r.installationId, owner: r.owner, repo: r.repo };
  const unique = (xs: readonly string[]) => [...new Map(xs.map((x) => [x.toLowerCase(), x])).values()];
  // Owners beyond the bound are not looked up: evaluate() then finds their facts absent and fails closed.
  // The bound counts distinct owners, users and teams together.
  const users = unique(plan.collaborators).slice(0, MAX_RESOLVED_OWNERS);
  const teams = plan.teams.slice(0, MAX_RESOLVED_OWNERS - users.length);
  const members = orgOwned ? unique(plan.organizationMemberships).slice(0, MAX_RESOLVED_OWNERS) : [];
  const apps = unique(plan.apps).slice(0, MAX_TRUSTED_APPS);
  const bots = unique(plan.botUsers).slice(0, MAX_TRUSTED_APPS);
  const tasks: (() => Promise<void>)[] = [];
  // Keyed by logins, teams and slugs from CODEOWNERS and reviews: Maps, turned into records by Object.fromEntries, because
  // `record[login] = …` with the login `__proto__` would set the record's prototype instead of adding an entry.
  const collaborators = new Map<string, Lookup<{ permission: string }>>();
  const organizationMemberships = new Map<string, Lookup<Membership>>();
  type TeamLookups = { team: TeamFacts["team"]; repository: TeamFacts["repository"]; memberships: Map<string, Lookup<Membership>> };
  const teamFacts = new Map<string, TeamLookups>();
  const appFacts = new Map<string, Lookup<{ id: number; slug: string }>>();
  const botUsers = new Map<string, Lookup<ForgeUser>>();

  for (const login of users) tasks.push(async () => { collaborators.set(login, await directory.collaboratorPermission(t, at, login, call)); });
  for (const login of members) tasks.push(async () => { organizationMemberships.set(login, await directory.organizationMembership(t, r.installationId, r.owner, login, call)); });
  for (const { team, members: logins } of teams) {
    const [org, slug, extra] = team.split("/");
    if (!org || !slug || extra !== undefined) continue;
    const memberships = new Map<string, Lookup<Membership>>();
    const facts: TeamLookups = { team: { kind: "not_found" }, repository: { kind: "not_found" }, memberships };
    teamFacts.set(team, facts);
    tasks.push(async () => { facts.team = await directory.team(t, r.installationId, org, slug, call); });
    tasks.push(async () => { facts.repository = await directory.teamRepository(t, at, org, slug, call); });
    for (const login of unique(logins)) tasks.push(async () => { memberships.set(login, await directory.teamMembership(t, r.installationId, org, slug, login, call)); });
  }
  for (const slug of apps) tasks.push(async () => { appFacts.set(slug, await directory.appBySlug(t, r.installationId, slug, call)); });
  for (const login of bots) tasks.push(async () => { botUsers.set(login, await directory.user(t, r.installationId, login, call)); });
  await runLimited(tasks, concurrency);
  return {
    collaborators: Object.fromEntries(collaborators),
    organizationMemberships: Object.fromEntries(organizationMemberships),
    teams: Object.fromEntries([...teamFacts].map(([team, facts]) => [team, { ...facts, memberships: Object.fromEntries(facts.memberships) }])),
    apps: Object.fromEntries(appFacts),
    botUsers: Object.fromEntries(botUsers),
  };
}

async function runLimited(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const worker = async () => { while (next < tasks.length) await tasks[next++]!(); };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, tasks.length)) }, worker));
}
