// Evidence: everything evaluate() may look at, fetched completely before evaluation (DESIGN 2, 3.2, 3.6).
//
// Contract for whoever fills this in (server/forge evidence fetchers, the playground, tests):
// - Plain JSON-serialisable data only (no Date, Map, class instances), so evidence can be stored and replayed in the browser.
// - Incompleteness is a value, never an omission. Every list read from the forge is a `Listed<T>`: either the whole list
//   (`complete: true`) or a `Gap` saying why not. A truncated page, a bound hit or a 5xx must produce `complete: false`; there is
//   no way to hand evaluate() a partial list that looks whole. Every per-entity lookup is a `Lookup<T>`: found, not found (the
//   forge answered 404, which DESIGN 3.6 defines as "not eligible"), or incomplete (any other error).
// - A fact evaluate() needs but cannot find in the evidence (say a reviewer's collaborator permission was never looked up) is
//   treated as incomplete evidence of cause "inconsistent": fail closed. `planLookups()` (server/evaluation/plan-lookups.ts) tells
//   the fetcher exactly which directory facts to fetch for a given pull request.
// - Gap causes decide the outcome (DESIGN 3.6 "Outcomes", 3.8): "transient" (timeout, reset, 5xx, rate limit, a list whose
//   pages broke their promises) makes the job retry and nothing is published; "over_bound" and "inconsistent" are permanent
//   and publish failure with the reason.
// - Logins are compared case-insensitively (as on the forge); record keys may use any case.
// - Changes are additive only: other modules build against this file.

import { codeownersLocations, DEFAULT_FORGE_DIRECTORY, defaultPolicyPath } from "../policy/forge-directory.ts";

/** Why a list or fact is not available in full. */
export type GapCause =
  /**
   * Timeout, connection reset, 5xx, rate limit, a malformed body, a list whose pages break their Link promises, disagree with
   * a count the forge states or repeat an item (DESIGN 3.8): retrying may succeed. The job fails and retries; nothing is published.
   */
  | "transient"
  /** More items than a bound allows (DESIGN 3.6 bounds), or the forge itself truncated the list. Permanent: publish failure. */
  | "over_bound"
  /**
   * The forge refused the request, answered something that cannot be right (a file that is not UTF-8), or a needed fact is
   * missing from the evidence. Permanent: publish failure.
   */
  | "inconsistent";

export interface Gap {
  readonly complete: false;
  readonly cause: GapCause;
  /** Operator-facing explanation, no credentials or payloads (DESIGN 5). Rendered in the check output. */
  readonly detail: string;
}

/** A list fetched from the forge: whole, or explicitly not. */
export type Listed<T> = { readonly complete: true; readonly items: readonly T[] } | Gap;

/** One lookup of one entity (user permission, membership, team, App...). */
export type Lookup<T> =
  | { readonly kind: "found"; readonly value: T }
  /** The forge answered 404: the entity does not exist or is not visible to the App. Means "not eligible" (DESIGN 3.6). */
  | { readonly kind: "not_found" }
  | { readonly kind: "incomplete"; readonly cause: GapCause; readonly detail: string };

/** A file read at a commit (policy files, CODEOWNERS). `bytes` is the size the forge reported (UTF-8 bytes of the content). */
export type FileRead =
  | {
    readonly kind: "found";
    readonly path: string;
    readonly text: string;
    readonly bytes: number;
    /** The forge's blob SHA of the content (the contents API's `sha`), for decision records (DESIGN 3.10); absent: not known. */
    readonly blobSha?: string | null;
    /** The commit the file was read at when the reader resolved it itself (the organization policy's default-branch head). */
    readonly commitSha?: string | null;
  }
  /** 404 for the file (or, for the organization policy, for the whole policy repository). */
  | { readonly kind: "missing" }
  /** The file exists but is at or over the bound for its kind; its content was deliberately not loaded. */
  | { readonly kind: "too_large"; readonly path: string; readonly bytes: number }
  | { readonly kind: "incomplete"; readonly cause: GapCause; readonly detail: string };

/**
 * The three code-owners locations for a forge directory, in precedence order (DESIGN 3.2 rule 1, 3.13; the policy layer's
 * list): `<forgeDirectory>/CODEOWNERS`, `CODEOWNERS`, `docs/CODEOWNERS`. The settings' forgeDirectory decides which apply.
 */
export { codeownersLocations };
/** A code-owners location: one of codeownersLocations(settings.forgeDirectory). */
export type CodeownersLocation = string;

/**
 * What the fetcher saw at each code-owners location of the base commit, keyed by location. The fetcher may stop at the first
 * location that is not `missing`; evaluate() applies the precedence itself and fails closed when an earlier location is
 * absent from this record or incomplete (a later file must never win because an earlier read failed). Keys of another forge
 * directory's locations are never read.
 */
export type CodeownersEvidence = Readonly<Record<CodeownersLocation, FileRead>>;

export interface ForgeUser {
  readonly id: number;
  readonly login: string;
  /** The forge's `user.type`: "User", "Bot", "Organization"... */
  readonly type: string;
}

/** A pull-request review in forge order (oldest first), exactly as listed. */
export interface Review {
  readonly id: number;
  /** null when the forge reports no user (deleted account): such a review never counts. */
  readonly user: ForgeUser | null;
  /** The forge's state, upper case: APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING. Others are ignored. */
  readonly state: string;
  /** The commit the review was submitted on; null if the forge did not say (never counts as the head). */
  readonly commitId: string | null;
  /**
   * The first line of the review's body, at most MAX_REVIEW_BODY_LINE_CHARS characters (the fetcher keeps no more: a body's
   * size is hostile input); absent or empty when the body is. Only the break-glass override reads it (DESIGN 3.11).
   */
  readonly bodyFirstLine?: string;
  /** The forge's `submitted_at` (ISO 8601) as given, for decision records; absent or null: not said. evaluate() never reads it. */
  readonly submittedAt?: string | null;
  /** The forge's global `node_id`, by which the edits of a break-glass request's body are asked for; absent: not said. */
  readonly nodeId?: string;
}

export type FileStatus = "added" | "removed" | "modified" | "renamed" | "copied" | "changed" | "unchanged";

export interface ChangedFile {
  readonly filename: string;
  /** The forge's status string; unknown values fail closed. */
  readonly status: FileStatus | string;
  /** Present for renamed/copied files. A renamed or copied file without it fails closed (DESIGN 3.6). */
  readonly previousFilename?: string | null;
}

export interface PullRequestFacts {
  readonly number: number;
  readonly headSha: string;
  readonly baseSha: string;
  readonly baseRef: string;
  readonly author: { readonly id: number; readonly login: string };
  readonly state: "open" | "closed" | string;
  readonly draft: boolean;
  /** Label names currently on the pull request. */
  readonly labels: readonly string[];
  /** The pull request's `changed_files` count, read before listing files (DESIGN 3.2 rule 7). */
  readonly changedFiles: number;
}

export interface RepositoryFacts {
  readonly owner: string;
  readonly name: string;
  /** Organization-owned repositories additionally require active organization membership of `@user` owners (DESIGN 3.6). */
  readonly ownerType: "Organization" | "User";
}

/** `collaborators/{u}/permission` → `permission` ("admin", "maintain", "write", "triage", "read", "none"). */
export interface CollaboratorPermission {
  readonly permission: string;
}

/** `orgs/{org}/memberships/{u}` or `orgs/{org}/teams/{t}/memberships/{u}` → `state` ("active", "pending"). */
export interface Membership {
  readonly state: string;
}

/**
 * Everything known about one `@org/team` owner. The team's privacy and repository access matter only for a reviewer who is an
 * active member, so they are looked up once one is (plan-lookups.ts); absent: not looked up (unknown, never "yes").
 */
export interface TeamFacts {
  /** `GET /orgs/{org}/teams/{slug}` → `privacy` ("closed" is visible; "secret" is not). */
  readonly team?: Lookup<{ readonly privacy: string }>;
  /** Team-repository endpoint with the repository media type → `permissions.push`. */
  readonly repository?: Lookup<{ readonly push: boolean }>;
  /** Team memberships by reviewer login. */
  readonly memberships: Readonly<Record<string, Lookup<Membership>>>;
}

/**
 * Whether a review's body was edited after it was submitted (GraphQL `PullRequestReview.lastEditedAt`; REST review objects
 * do not show edits): null when never. Anyone with write access may edit another person's review.
 */
export interface ReviewEdit {
  readonly lastEditedAt: string | null;
}

/** Directory facts, revalidated at each evaluation (never cached across evaluations, DESIGN 7.1). */
export interface DirectoryFacts {
  /** By user login. */
  readonly collaborators: Readonly<Record<string, Lookup<CollaboratorPermission>>>;
  /** Organization memberships by user login (organization = repository owner). Unused for user-owned repositories. */
  readonly organizationMemberships: Readonly<Record<string, Lookup<Membership>>>;
  /** By "org/team-slug" exactly as written after the `@` in CODEOWNERS (compared case-insensitively). */
  readonly teams: Readonly<Record<string, TeamFacts>>;
  /** `GET /apps/{slug}` by slug. */
  readonly apps: Readonly<Record<string, Lookup<{ readonly id: number; readonly slug: string }>>>;
  /** `GET /users/{slug}[bot]` by bot login `<slug>[bot]`. */
  readonly botUsers: Readonly<Record<string, Lookup<ForgeUser>>>;
  /**
   * The edits of break-glass requests' reviews, by review ID (decimal): asked for only when a request could override
   * (plan-lookups.ts), in one GraphQL query. Absent (evidence from before it was asked for too): not looked up.
   */
  readonly reviewEdits?: Readonly<Record<string, Lookup<ReviewEdit>>>;
}

/** An open pull request on the same head commit (shared-head rule). */
export interface OpenPullRequestRef {
  readonly number: number;
  readonly headSha: string;
}

export interface Evidence {
  /** Evidence format version, for stored and replayed evidence. */
  readonly evidenceVersion: 1;
  readonly repository: RepositoryFacts;
  readonly pullRequest: PullRequestFacts;
  /** `pulls/{n}/files`, every page. Must be a Gap when the listing stopped early. */
  readonly files: Listed<ChangedFile>;
  /** `pulls/{n}/reviews`, every page, in forge order. */
  readonly reviews: Listed<Review>;
  /** Code-owners file reads at the base commit. */
  readonly codeowners: CodeownersEvidence;
  /** Repository policy at the policy path, base commit. */
  readonly repositoryPolicy: FileRead;
  /** Organization policy at the policy path of the organization policy repository's default branch. */
  readonly organizationPolicy: FileRead;
  readonly directory: DirectoryFacts;
  /** Open pull requests whose head is this head (this pull request may be included; it is ignored). */
  readonly sameHeadPullRequests: Listed<OpenPullRequestRef>;
  /**
   * The policy files as the pull request's head has them, present only when the pull request changes the code-owners file
   * the base uses, one at a location that would take precedence, or the repository policy (change-preview.ts `headReadsNeeded`).
   * Only the change preview reads it: evaluate() never does, so the decision stays on the base commit.
   */
  readonly headFiles?: HeadFiles;
}

/** Policy files at the head commit, for the change preview (change-preview.ts). */
export interface HeadFiles {
  /**
   * The code-owners locations in precedence order up to the first one present at the head: a location the pull request
   * changes is read at the head, one it leaves alone is carried over from the base read.
   */
  readonly codeowners: CodeownersEvidence;
  /** The repository policy at the head (read there when the pull request changes it, else the base read). */
  readonly repositoryPolicy: FileRead;
}

/** Process settings evaluate() depends on (from loadConfig; the playground supplies its own). */
export interface EvaluationSettings {
  /** SERVICE_CHECK_NAME, shown in the check output. */
  readonly checkName: string;
  /** SERVICE_POLICY_PATH: the effective repository policy path (part of the built-in non-delegable set). */
  readonly policyPath: string;
  /**
   * SERVICE_FORGE_DIRECTORY: the forge's configuration directory in a repository (`.forge`, `.github` on GitHub), a valid one
   * (forgeDirectoryProblem): the first code-owners location and the workflows and actions of the built-in non-delegable set.
   */
  readonly forgeDirectory: string;
  /** SERVICE_ALLOW_INSECURE_CHANGES: removes only the built-in non-delegable set (spec item 8). */
  readonly allowInsecureChanges: boolean;
}

export const DEFAULT_EVALUATION_SETTINGS: EvaluationSettings = Object.freeze({
  checkName: "Service / approval",
  policyPath: defaultPolicyPath(DEFAULT_FORGE_DIRECTORY),
  forgeDirectory: DEFAULT_FORGE_DIRECTORY,
  allowInsecureChanges: false,
});
