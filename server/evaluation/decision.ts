// Decision: what evaluate() returns. Plain data; the check-run output and the playground view are rendered from it, never
// re-derived (STYLE 2).
//
// `kind` tells the worker what to do (DESIGN 3.6 "Outcomes"):
// - "not_enabled": the repository has no policy file, or it does not say `enabled = true` (or says `enabled = false`).
//   The worker creates no managed check (and the fast path skips creating one).
// - "retry": some evidence is missing for a transient reason (timeout, reset, 5xx, rate limit) and nothing permanent already
//   decides failure. The job fails and retries; nothing is published; the check stays `in_progress`.
// - "conclusive": publish `conclusion` ("success" or "failure"). Failure covers every permanent fail-closed reason (over a
//   bound, 3,000 files, invalid policy or CODEOWNERS, incomplete rename evidence, unresolvable owners, contradictory
//   evidence) as well as owner sets that simply lack approval.
// A shared head (`sharedHeadWith` non-empty) is conclusive failure, but the worker never completes a check on a shared head:
// it leaves the check `in_progress` with a title naming the other pull request (DESIGN 3.6).

/** Message text: prose strings and code-like values kept apart so rendering escapes each correctly (DESIGN 3.2 rule 8). */
export type TextPart = string | { readonly code: string };
export type Text = readonly TextPart[];

/** Tagged template: interpolated values are code-like; `t\`path ${path} is not covered\``. */
export function t(strings: TemplateStringsArray, ...values: readonly (string | number | Text)[]): Text {
  const parts: TextPart[] = [];
  strings.forEach((prose, index) => {
    if (prose !== "") parts.push(prose);
    if (index < values.length) {
      const value = values[index]!;
      if (Array.isArray(value)) parts.push(...(value as Text));
      else parts.push({ code: String(value) });
    }
  });
  return parts;
}

/** Plain rendering of a Text (logs, tests). Not escaped: never put it in check output. */
export function plain(text: Text): string {
  return text.map((part) => (typeof part === "string" ? part : part.code)).join("");
}

export type ReasonCode =
  | "not_enabled"
  | "repository_policy_invalid"
  | "repository_policy_incomplete"
  | "organization_policy_invalid"
  | "organization_policy_incomplete"
  | "delegation_app_not_enrolled"
  | "codeowners_invalid"
  | "codeowners_too_large"
  | "codeowners_incomplete"
  | "too_many_files"
  | "files_incomplete"
  | "files_inconsistent"
  | "rename_incomplete"
  | "reviews_incomplete"
  | "too_many_reviews"
  | "shared_head"
  | "same_head_incomplete"
  | "too_many_owners"
  | "matching_budget_exceeded"
  | "directory_incomplete";

/** A reason the decision cannot be success, independent of (or in addition to) the owner sets. */
export interface Reason {
  readonly code: ReasonCode;
  readonly message: Text;
  /** True when retrying may resolve it (DESIGN 3.6 transient faults); false for permanent fail-closed reasons. */
  readonly transient: boolean;
  /** CODEOWNERS line numbers, policy error locations and similar detail lines. */
  readonly details?: readonly Text[];
}

export type OwnerSetStatus =
  /** Enough approvals and no blocking review. */
  | "satisfied"
  /** Not enough approvals. */
  | "missing"
  /** An eligible owner's latest review requests changes. */
  | "blocked"
  /** A fact needed to decide is incomplete (see `unresolved`). */
  | "unknown";

export interface CountedApproval {
  /** Reviewer login. */
  readonly reviewer: string;
  /** Which owner the approval counted for: the reviewer's `@user`, a `@org/team`, or an App delegation. */
  readonly via: { readonly kind: "user" | "team"; readonly owner: string } | { readonly kind: "app"; readonly app: string };
  /** The review that counted (its forge ID), its reviewer's account ID, commit and submitted time as listed (decision records). */
  readonly reviewId: number;
  readonly reviewerId: number;
  readonly commitId: string | null;
  readonly submittedAt: string | null;
  /** What made it count: the reviewer is the `@user` owner, an active member of the `@org/team` owner, or an App delegated to. */
  readonly rule: "direct_owner" | "team_membership" | "app_delegation";
}

export interface NotCounted {
  readonly reviewer: string;
  readonly why: Text;
}

export interface OwnerSetResult {
  /** The set's owners as spelled in CODEOWNERS, sorted case-insensitively. */
  readonly owners: readonly string[];
  /** The CODEOWNERS patterns (as written) of the rules that gave the set's paths this owner set, sorted, without duplicates. */
  readonly patterns: readonly string[];
  /** Every changed path (and previous path of a rename) with exactly this owner set, sorted. Rendering bounds the list. */
  readonly paths: readonly string[];
  readonly required: number;
  /** Distinct approvals that count for this set (reviewers, or Apps counted once each). */
  readonly approvals: number;
  /** Who they are: at most MAX_LISTED_REVIEWS_PER_SET entries. */
  readonly counted: readonly CountedApproval[];
  /** At most MAX_LISTED_REVIEWS_PER_SET entries; `notCountedOmitted` says how many more there were. */
  readonly notCounted: readonly NotCounted[];
  readonly notCountedOmitted: number;
  /** Logins of eligible owners whose latest review requests changes. */
  readonly blockedBy: readonly string[];
  /** Facts that could not be established and would change this set's status. */
  readonly unresolved: readonly Text[];
  /** Paths of the set on which no App approval can count (built-in or organization non-delegable). */
  readonly nonDelegablePaths: readonly string[];
  readonly status: OwnerSetStatus;
}

/** A node of the explanation tree (policy-bot style): a status with its reasons and children. */
export interface ResultNode {
  readonly name: string;
  readonly status: "passed" | "failed" | "pending" | "skipped";
  readonly description: Text;
  readonly children: readonly ResultNode[];
}

/**
 * A break-glass override that met the approval requirements (DESIGN 3.11): plain data, so the decision record, the check
 * output and the playground carry it as evaluated.
 */
export interface BreakGlassOverride {
  readonly reviewId: number;
  readonly reviewerId: number;
  /** The reviewer's login. */
  readonly reviewer: string;
  /** The reason after `break-glass:`, trimmed, as given (rendering bounds it). */
  readonly reason: string;
  /** The listed team slug whose active membership made the override count. */
  readonly team: string;
  /** Indexes into `ownerSets` of the sets their owners did not satisfy. */
  readonly unsatisfiedOwnerSets: readonly number[];
}

/** Why a review asking for a break-glass override did not override (DESIGN 3.11). */
export type BreakGlassRefusalCode =
  /** The organization policy has no `[break_glass]` section (or could not be used, or the repository has no organization). */
  | "not_enabled"
  /** The request is the reviewer's latest review but not APPROVED (a comment, a request for changes, a dismissed review). */
  | "wrong_state"
  /** Approved a commit other than the head: a push ends an override, as it ends every approval. */
  | "stale_commit"
  /** The reason after `break-glass:` has fewer than `min_reason_length` visible characters after trimming. */
  | "short_reason"
  /** Not an active member of any listed team (or not a person's account). */
  | "not_a_member"
  /** The pull request's author cannot override for their own pull request. */
  | "author"
  /**
   * A listed team's membership of the reviewer, or whether the review's body was edited, could not be established: fail
   * closed.
   */
  | "membership_incomplete"
  /**
   * The review's body was edited after it was submitted: anyone with write access may edit another person's review, so an
   * edited body is not the reviewer's own word. A reviewer who needs another reason submits a new review.
   */
  | "edited"
  /** A later review by the same reviewer replaces it (latest review per reviewer). */
  | "superseded"
  /** Past MAX_BREAK_GLASS_REQUESTS more recent requests: not judged. */
  | "too_many_requests"
  /** Valid, but the approval requirements are met without it (or another override already applies). */
  | "not_needed";

export interface BreakGlassRefusal {
  readonly reviewId: number;
  readonly reviewer: string;
  readonly code: BreakGlassRefusalCode;
  readonly message: Text;
}

export interface Decision {
  readonly kind: "not_enabled" | "retry" | "conclusive";
  /** Set only when kind is "conclusive". */
  readonly conclusion: "success" | "failure" | null;
  readonly checkName: string;
  readonly pullRequest: number;
  readonly headSha: string;
  /** Why the decision is not success besides owner sets; for "retry" the transient gaps; for "not_enabled" why. */
  readonly reasons: readonly Reason[];
  readonly ownerSets: readonly OwnerSetResult[];
  /** Number of distinct changed paths no rule owns (or owned by a rule without owners). */
  readonly unownedPathCount: number;
  /** Other open pull requests on this head (DESIGN 3.6: the worker leaves the check in_progress). */
  readonly sharedHeadWith: readonly number[];
  /** A deterministic smallest set of owners whose approval would satisfy every set still missing approvals. */
  readonly suggestedReviewers: readonly string[];
  /** Where the code-owners file was read from, if any. */
  readonly codeownersPath: string | null;
  readonly insecureChangesAllowed: boolean;
  readonly result: ResultNode;
  /**
   * The break-glass override that meets this decision's approval requirements (DESIGN 3.11), or null. Set even when the
   * decision still fails for a reason it does not lift (incomplete evidence, a shared head).
   */
  readonly breakGlass: BreakGlassOverride | null;
  /** Every other review asking for an override, most recent first, with why it did not override (at most MAX_LISTED_REVIEWS_PER_SET). */
  readonly breakGlassRefusals: readonly BreakGlassRefusal[];
}
