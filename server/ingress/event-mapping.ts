import { type AuthorityScope, encodeSubjects, type IndexWrite, type MergeGroup, type RepositoryRef, teamSubject, userSubject } from "../store/index.ts";
import { HEAD_SHA } from "./limits.ts";

/**
 * The event mapping table (DESIGN 3.3 and 3.6): which authenticated deliveries become durable work, and of which kind.
 * Only this file knows the webhook payload shapes ingress reads; it turns them into domain values once.
 */
export type MappingContext = {
  /** Configured name of the organization policy repository (matched case-insensitively, as the forge matches names). */
  readonly organizationPolicyRepository: string;
  readonly checkName: string;
  /** Our App ID; null when no App is configured (then no check run can be ours). */
  readonly appId: number | null;
};

export type Mapping =
  | { readonly kind: "unmapped" }
  | { readonly kind: "invalid"; readonly problem: string }
  | {
    readonly kind: "direct"; readonly repository: RepositoryRef; readonly pullNumber: number | null; readonly headSha: string;
    /** A pull_request delivery's write to the open-pull-request index (DESIGN 3.9), in the same acceptance. */
    readonly index?: IndexWrite;
    /** `synchronize`: the head the pull request left (`before`), whose other pull requests are re-evaluated (DESIGN 3.8). */
    readonly previousHead?: string;
    /** `closed` with `merged: true`: the merge, recorded in the same acceptance (DESIGN 3.10). */
    readonly merge?: MergeFacts;
  }
  | { readonly kind: "base_ref"; readonly repository: RepositoryRef; readonly baseRef: string }
  /**
   * A merge group of the forge's merge queue (DESIGN 3.14): `checks_requested` queues its judgement, `destroyed` cancels it
   * (`reason` as the delivery names it, or null).
   */
  | { readonly kind: "merge_group"; readonly repository: RepositoryRef; readonly action: "checks_requested" | "destroyed"; readonly group: MergeGroup; readonly reason: string | null }
  | { readonly kind: "authority"; readonly installationId: number; readonly scope: AuthorityScope };

/**
 * A merged pull request as its `closed` delivery says: the merge commit, who merged and when, and the base commit it merged
 * onto (whose repository policy says whether the service was enabled there: enrollment). Each is null when absent or not of
 * its documented form (a signed payload is still bounded in what it makes us store); the head at merge is the mapping's.
 */
export type MergeFacts = {
  readonly mergeCommitSha: string | null;
  readonly baseSha: string | null;
  readonly mergedBy: { readonly id: number; readonly login: string } | null;
  readonly mergedAtMs: number | null;
};

/** The forge's longest login is 39 characters; an App's bot login adds `[bot]`. */
const MAX_MERGED_BY_LOGIN = 64;

/** The merge of a `closed` pull request (or of a recently closed one the reconciler lists), or null when it was not merged. */
export function mergeFactsOf(pull: Record<string, unknown>): MergeFacts | null {
  if (pull.merged !== true && !(pull.merged === undefined && typeof pull.merged_at === "string")) return null;
  const by = pull.merged_by;
  const mergedBy = isObject(by) && positiveInteger(by.id) && typeof by.login === "string" && by.login !== "" && by.login.length <= MAX_MERGED_BY_LOGIN ? { id: by.id, login: by.login } : null;
  const mergedAtMs = typeof pull.merged_at === "string" && pull.merged_at.length <= 40 ? Date.parse(pull.merged_at) : Number.NaN;
  return {
    mergeCommitSha: typeof pull.merge_commit_sha === "string" && HEAD_SHA.test(pull.merge_commit_sha) ? pull.merge_commit_sha : null,
    baseSha: isObject(pull.base) && typeof pull.base.sha === "string" && HEAD_SHA.test(pull.base.sha) ? pull.base.sha : null,
    mergedBy,
    mergedAtMs: Number.isFinite(mergedAtMs) ? mergedAtMs : null,
  };
}

const PULL_REQUEST_ACTIONS = new Set(["opened", "reopened", "synchronize", "edited", "ready_for_review", "converted_to_draft", "labeled", "unlabeled", "closed"]);
/** pull_request actions whose delivery upserts the pull request into the open-pull-request index (closed deletes it). */
const INDEXED_ACTIONS = new Set(["opened", "reopened", "synchronize", "edited"]);
/** A base ref longer than this is not kept in the index (null): a signed payload is still bounded in what it makes us store. */
const MAX_INDEXED_BASE_REF = 1_024;
const REVIEW_ACTIONS = new Set(["submitted", "edited", "dismissed"]);
const INSTALLATION_WIDE_EVENTS = new Set(["organization", "membership", "member", "team", "team_add", "installation_target"]);
const INSTALLATION_ACTIONS = new Set(["created", "new_permissions_accepted", "unsuspend"]);
const LABEL_ACTIONS = new Set(["created", "edited", "deleted"]);
const POLICY_REPOSITORY_ACTIONS = new Set(["deleted", "renamed", "transferred"]);
const TARGET_REPOSITORY_ACTIONS = new Set(["renamed", "transferred", "unarchived"]);
const MERGE_GROUP_ACTIONS = new Set(["checks_requested", "destroyed"]);
/** A merge group's refs are bounded like the index's base refs: a signed payload is still bounded in what it makes us store. */
const MAX_MERGE_GROUP_REF = 1_024;

/** Metric label vocabularies: every value here comes from the mapping table; anything else is `other` (no action: `none`). */
export const EVENT_LABELS = new Set([
  "pull_request", "pull_request_review", "check_run", "check_suite", "push", "repository", "installation_repositories", "label",
  "installation", "merge_group", ...INSTALLATION_WIDE_EVENTS,
]);
export const ACTION_LABELS = new Set([
  ...PULL_REQUEST_ACTIONS, ...REVIEW_ACTIONS, "rerequested", ...INSTALLATION_ACTIONS, ...LABEL_ACTIONS, ...POLICY_REPOSITORY_ACTIONS,
  ...TARGET_REPOSITORY_ACTIONS, "added", "removed", ...MERGE_GROUP_ACTIONS,
]);

export function metricLabels(event: string, action: string | undefined): { event: string; action: string } {
  return { event: EVENT_LABELS.has(event) ? event : "other", action: action === undefined ? "none" : ACTION_LABELS.has(action) ? action : "other" };
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const positiveInteger = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value > 0;

class Invalid extends Error {}
function fail(problem: string): never {
  throw new Invalid(problem);
}
function installationId(payload: Json): number {
  const installation = payload.installation;
  if (!isObject(installation) || !positiveInteger(installation.id)) fail("installation.id must be a positive integer");
  return installation.id;
}
function repository(payload: Json, installation: number, key = "repository"): RepositoryRef & { defaultBranch: string | null } {
  const repo = payload[key];
  if (!isObject(repo)) fail(`${key} must be an object`);
  if (!positiveInteger(repo.id)) fail(`${key}.id must be a positive integer`);
  if (typeof repo.name !== "string" || repo.name === "") fail(`${key}.name must be a string`);
  const owner = repo.owner;
  if (!isObject(owner) || typeof owner.login !== "string" || owner.login === "") fail(`${key}.owner.login must be a string`);
  return { installationId: installation, repositoryId: repo.id, owner: owner.login, name: repo.name, defaultBranch: typeof repo.default_branch === "string" ? repo.default_branch : null };
}
function head(value: unknown, where: string): string {
  if (typeof value !== "string" || !HEAD_SHA.test(value)) fail(`${where} must be 40 or 64 lowercase hexadecimal characters`);
  return value;
}

export function mapEvent(event: string, action: string | undefined, payload: Json, context: MappingContext): Mapping {
  try {
    return mapOrThrow(event, action, payload, context);
  } catch (error) {
    if (error instanceof Invalid) return { kind: "invalid", problem: error.message };
    throw error;
  }
}

function mapOrThrow(event: string, action: string | undefined, payload: Json, context: MappingContext): Mapping {
  const isPolicyRepository = (name: string) => name.toLowerCase() === context.organizationPolicyRepository.toLowerCase();

  switch (event) {
    case "pull_request":
    case "pull_request_review": {
      const actions = event === "pull_request" ? PULL_REQUEST_ACTIONS : REVIEW_ACTIONS;
      if (action === undefined || !actions.has(action)) return { kind: "unmapped" };
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      // Pull-request work for the organization policy repository stays under native human enforcement (decided before head validation).
      if (isPolicyRepository(repo.name)) return { kind: "unmapped" };
      const pull = payload.pull_request;
      if (!isObject(pull)) fail("pull_request must be an object");
      if (!positiveInteger(pull.number)) fail("pull_request.number must be a positive integer");
      if (!isObject(pull.head)) fail("pull_request.head must be an object");
      const headSha = head(pull.head.sha, "pull_request.head.sha");
      if (event !== "pull_request") return { kind: "direct", repository: strip(repo), pullNumber: pull.number, headSha };
      let index: IndexWrite | undefined;
      if (action === "closed") index = { kind: "delete" };
      else if (INDEXED_ACTIONS.has(action) && pull.state !== "closed") {
        const baseRef = isObject(pull.base) && typeof pull.base.ref === "string" && pull.base.ref.length <= MAX_INDEXED_BASE_REF ? pull.base.ref : null;
        index = { kind: "upsert", baseRef };
      }
      const before = action === "synchronize" && payload.before !== undefined && payload.before !== null ? head(payload.before, "before") : null;
      const merge = action === "closed" ? mergeFactsOf(pull) : null;
      return {
        kind: "direct", repository: strip(repo), pullNumber: pull.number, headSha,
        ...(index ? { index } : {}), ...(before !== null && before !== headSha ? { previousHead: before } : {}), ...(merge ? { merge } : {}),
      };
    }
    case "merge_group": {
      if (action === undefined || !MERGE_GROUP_ACTIONS.has(action)) return { kind: "unmapped" };
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      // As pull-request work: the organization policy repository stays under native human enforcement.
      if (isPolicyRepository(repo.name)) return { kind: "unmapped" };
      const group = payload.merge_group;
      if (!isObject(group)) fail("merge_group must be an object");
      const ref = (key: "base_ref" | "head_ref") => {
        const value = group[key];
        if (typeof value !== "string" || value === "" || value.length > MAX_MERGE_GROUP_REF) fail(`merge_group.${key} must be a ref of at most ${MAX_MERGE_GROUP_REF} characters`);
        return value;
      };
      const baseRef = ref("base_ref");
      // The forge sends the full ref of the branch the group merges into; the queue is named by the branch.
      if (!baseRef.startsWith("refs/heads/") || baseRef === "refs/heads/") fail("merge_group.base_ref must be refs/heads/<branch>");
      const reason = action === "destroyed" && typeof payload.reason === "string" && payload.reason.length <= 32 ? payload.reason : null;
      return {
        kind: "merge_group", repository: strip(repo), action: action as "checks_requested" | "destroyed", reason,
        group: { headSha: head(group.head_sha, "merge_group.head_sha"), baseSha: head(group.base_sha, "merge_group.base_sha"), headRef: ref("head_ref"), baseRef: baseRef.slice("refs/heads/".length) },
      };
    }
    case "check_run":
    case "check_suite": {
      if (action !== "rerequested") return { kind: "unmapped" };
      const check = payload[event];
      if (!isObject(check)) fail(`${event} must be an object`);
      const app = check.app;
      // A rerequest of another App's check, or of another check name, is not ours.
      if (context.appId === null || !isObject(app) || app.id !== context.appId) return { kind: "unmapped" };
      if (event === "check_run" && check.name !== context.checkName) return { kind: "unmapped" };
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      if (isPolicyRepository(repo.name)) return { kind: "unmapped" };
      return { kind: "direct", repository: strip(repo), pullNumber: null, headSha: head(check.head_sha, `${event}.head_sha`) };
    }
    case "push": {
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      if (typeof payload.ref !== "string") fail("ref must be a string");
      if (!payload.ref.startsWith("refs/heads/")) return { kind: "unmapped" };
      const branch = payload.ref.slice("refs/heads/".length);
      if (isPolicyRepository(repo.name)) {
        if (repo.defaultBranch === null) fail("repository.default_branch must be a string");
        return branch === repo.defaultBranch ? { kind: "authority", installationId: installation, scope: { kind: "installation" } } : { kind: "unmapped" };
      }
      if (branch === "") fail("ref must name a branch");
      return { kind: "base_ref", repository: strip(repo), baseRef: branch };
    }
    case "repository": {
      if (action === undefined) return { kind: "unmapped" };
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      const changes = isObject(payload.changes) ? payload.changes : {};
      const wasPolicy = isPolicyRepository(repo.name) || (action === "renamed" && isObject(changes.repository) && isObject(changes.repository.name) && typeof changes.repository.name.from === "string" && isPolicyRepository(changes.repository.name.from));
      if (wasPolicy) {
        const defaultBranchChanged = action === "edited" && "default_branch" in changes;
        return POLICY_REPOSITORY_ACTIONS.has(action) || defaultBranchChanged ? { kind: "authority", installationId: installation, scope: { kind: "installation" } } : { kind: "unmapped" };
      }
      return TARGET_REPOSITORY_ACTIONS.has(action) ? { kind: "authority", installationId: installation, scope: { kind: "installation" } } : { kind: "unmapped" };
    }
    case "installation_repositories": {
      if (action !== "added" && action !== "removed") return { kind: "unmapped" };
      const installation = installationId(payload);
      const listed = payload[action === "added" ? "repositories_added" : "repositories_removed"];
      const items = Array.isArray(listed) && listed.every((item) => isObject(item) && positiveInteger(item.id) && typeof item.name === "string" && item.name !== "") ? (listed as Json[]) : null;
      if (action === "removed") {
        // Missing or malformed removal evidence is treated as possible loss of the policy source.
        if (items === null || items.some((item) => isPolicyRepository(item.name as string))) return { kind: "authority", installationId: installation, scope: { kind: "installation" } };
        return { kind: "unmapped" };
      }
      if (items === null || items.some((item) => isPolicyRepository(item.name as string))) return { kind: "authority", installationId: installation, scope: { kind: "installation" } };
      if (items.length === 0) return { kind: "unmapped" };
      const account = isObject(payload.installation) && isObject(payload.installation.account) && typeof payload.installation.account.login === "string" ? payload.installation.account.login : null;
      const repositories = items.map((item) => {
        const fullName = typeof item.full_name === "string" && item.full_name.includes("/") ? item.full_name : null;
        const owner = fullName ? fullName.slice(0, fullName.indexOf("/")) : account;
        if (owner === null) fail("repositories_added items need full_name (or installation.account.login)");
        return { installationId: installation, repositoryId: item.id as number, owner, name: item.name as string };
      });
      return { kind: "authority", installationId: installation, scope: { kind: "repositories", repositories } };
    }
    case "label": {
      if (action === undefined || !LABEL_ACTIONS.has(action)) return { kind: "unmapped" };
      const installation = installationId(payload);
      const repo = repository(payload, installation);
      return { kind: "authority", installationId: installation, scope: { kind: "repositories", repositories: [strip(repo)] } };
    }
    case "installation": {
      if (action === undefined || !INSTALLATION_ACTIONS.has(action)) return { kind: "unmapped" };
      return { kind: "authority", installationId: installationId(payload), scope: { kind: "installation" } };
    }
    case "membership":
    case "organization":
    case "member":
    case "team":
    case "team_add":
      return { kind: "authority", installationId: installationId(payload), scope: directoryScope(event, action, payload, isPolicyRepository) };
    default:
      if (INSTALLATION_WIDE_EVENTS.has(event)) return { kind: "authority", installationId: installationId(payload), scope: { kind: "installation" } };
      return { kind: "unmapped" };
  }
}

const TEAM_SETTINGS = new Set(["privacy", "description", "notification_setting"]);

/**
 * How far a directory event (membership, organization, member, team, team_add) reaches (issue 18 item 3). Only a result
 * that depends on a user or team the event names can change: a user's memberships and permissions decide only whether that
 * user's own reviews count or block (every result they reviewed, or whose owners name them), a team's settings decide
 * only for owner sets naming that team. A team's repository access is inherited by its child teams, which the payload does
 * not list, so that change re-evaluates the whole repository; anything the payload does not pin down (a team renamed,
 * moved, deleted with its children, a malformed payload, the organization policy repository) stays installation-wide.
 */
function directoryScope(event: string, action: string | undefined, payload: Json, isPolicyRepository: (name: string) => boolean): AuthorityScope {
  const wide: AuthorityScope = { kind: "installation" };
  const organization = isObject(payload.organization) ? payload.organization.login : undefined;
  const scoped = (...subjects: (string | null)[]): AuthorityScope => {
    const encoded = subjects.includes(null) ? null : encodeSubjects(subjects);
    return encoded === null ? wide : { kind: "installation", subjects: encoded };
  };
  // A malformed repository widens the fan-out, as before; it never rejects an event that was installation-wide.
  const wholeRepository = (): AuthorityScope => {
    let repo: RepositoryRef & { defaultBranch: string | null };
    try {
      repo = repository(payload, installationId(payload));
    } catch (error) {
      if (error instanceof Invalid) return wide;
      throw error;
    }
    return isPolicyRepository(repo.name) ? wide : { kind: "repositories", repositories: [strip(repo)] };
  };
  const team = isObject(payload.team) ? teamSubject(organization, payload.team.slug) : null;
  switch (event) {
    case "membership":
      // A team membership: the member's reviews (the brief's owner sets naming the team or the member count too).
      if (payload.scope !== "team" || !isObject(payload.member)) return wide;
      return scoped(userSubject(payload.member.login), team);
    case "organization": {
      if (action === "member_invited") {
        // GitHub names the invited account as `user` (null for an invitation by e-mail) and as `invitation.login`; it sends
        // no `membership` for an invitation. Names that disagree, or none, pin down no one.
        const user = isObject(payload.user) ? payload.user.login : undefined;
        const invitation = isObject(payload.invitation) ? payload.invitation.login : undefined;
        const login = typeof user === "string" ? user : invitation;
        if (typeof login !== "string" || (typeof user === "string" && typeof invitation === "string" && user.toLowerCase() !== invitation.toLowerCase())) return wide;
        return scoped(userSubject(login));
      }
      if (action !== "member_added" && action !== "member_removed") return wide;
      const membership = payload.membership;
      return isObject(membership) && isObject(membership.user) ? scoped(userSubject(membership.user.login)) : wide;
    }
    case "member": {
      // A collaborator's permission on one repository.
      if (!isObject(payload.member)) return wide;
      const user = userSubject(payload.member.login);
      const repo = wholeRepository();
      return user === null || repo.kind !== "repositories" ? wide : { ...repo, subjects: encodeSubjects([user])! };
    }
    case "team": {
      const changes = isObject(payload.changes) ? Object.keys(payload.changes) : [];
      if (action === "created" || (action === "edited" && changes.length > 0 && changes.every((key) => TEAM_SETTINGS.has(key)))) return scoped(team);
      if (action === "added_to_repository" || action === "removed_from_repository" || (action === "edited" && changes.length === 1 && changes[0] === "repository")) return wholeRepository();
      return wide;
    }
    default:
      // team_add: a team got access to a repository (inherited by its child teams).
      return wholeRepository();
  }
}

function strip(repo: RepositoryRef & { defaultBranch: string | null }): RepositoryRef {
  return { installationId: repo.installationId, repositoryId: repo.repositoryId, owner: repo.owner, name: repo.name };
}
