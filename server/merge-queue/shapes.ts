// The shapes of a merge group's judgement (DESIGN 3.14): the queue's entries as the forge answers them, the evidence the
// worker gathers for each pull request of a group, and the verdict. Plain data only; the rules are in judge.ts.

/** The forge's merge queue holds at most this many entries we read (one GraphQL page); more is incomplete evidence. */
export const MAX_QUEUE_ENTRIES = 100;

/** One entry of the queue, as GraphQL's `MergeQueueEntry` answers it (null where the forge sent nothing). */
export interface QueueEntry {
  readonly position: number;
  readonly state: string | null;
  /** The entry's group commit. */
  readonly headCommit: string | null;
  /** The commit the entry's group commit is built on. */
  readonly baseCommit: string | null;
  readonly pullNumber: number | null;
  /** The pull request's head commit now. */
  readonly headRefOid: string | null;
}

/** The queue's entries for the group's base branch; `complete` false when the forge said there are more than were read. */
export interface QueueAnswer {
  readonly entries: readonly QueueEntry[];
  readonly complete: boolean;
}

/** The group a `merge_group` delivery named. */
export interface GroupFacts {
  readonly headSha: string;
  /** The group's parent commit: the base with every entry ahead of the group's own. */
  readonly baseSha: string;
}

/** A pull request of the group: its head in the group and the commit its changes merge onto. */
export interface GroupMember {
  readonly pullNumber: number;
  readonly headSha: string;
  readonly mergesOnto: string;
  /** True for the entry whose group commit is the group's head (the last of the group). */
  readonly own: boolean;
}

/** The rules a decision is made under: the code-owners file (path and blob SHA) and the repository policy's blob SHA. */
export interface RuleSource {
  /** Null: no code-owners file. */
  readonly codeowners: { readonly path: string; readonly blobSha: string | null } | null;
  /** Null: no repository policy file. */
  readonly policyBlobSha: string | null;
  /** False when a file was found but the forge gave no blob SHA (then the rules cannot be compared). */
  readonly known: boolean;
}

/**
 * The service's newest decision on the member's head, as the store holds it:
 * `approved`: a confirmed success that no reset followed; `refused`: a failure; `revoked`: a success that a reset followed,
 * with no evaluation of the pull request left to run; `pending`: a decision is on its way (an unconfirmed write, or a reset
 * whose evaluation is queued or running); `none`: no decision on that head and none on its way.
 */
export type HeadDecision =
  | { readonly kind: "approved"; readonly recordId: number; readonly rules: RuleSource }
  | { readonly kind: "refused"; readonly recordId: number }
  | { readonly kind: "revoked"; readonly recordId: number }
  | { readonly kind: "pending" }
  | { readonly kind: "none" };

/** A re-evaluation of the member's recorded inputs under the rules it merges onto. */
export type Reevaluation = { readonly kind: "success" } | { readonly kind: "failure" } | { readonly kind: "incomplete"; readonly detail: string };

export interface MemberEvidence {
  readonly member: GroupMember;
  readonly decision: HeadDecision;
  /** The rules at `member.mergesOnto`; null when they could not be read (incomplete). */
  readonly rulesOnto: RuleSource | null;
  /** Present when the decision's rules differ from `rulesOnto` and the worker re-evaluated it. */
  readonly reevaluation?: Reevaluation;
}

/** Why a pull request of a group may not merge with it. */
export type GroupReason =
  /** The newest decision on its head is a failure. */
  | "not_approved"
  /** The service has decided nothing on its head in the group. */
  | "no_decision"
  /** Its approval was revoked after it succeeded (dismissal, push, authority change) and nothing re-approved it. */
  | "approval_revoked"
  /** A pull request ahead of it in the queue changes the rules, and its owners under them did not approve it. */
  | "rules_changed_ahead"
  /** Its base branch's rules changed since it was approved, and its owners under them did not approve it. */
  | "rules_changed";

/** Why a group cannot be judged yet (retried within the queue's timeout, never success). */
export type IncompleteReason =
  | "queue_unavailable"
  | "queue_over_bound"
  | "group_not_found"
  | "queue_malformed"
  | "decision_pending"
  | "rules_unavailable"
  | "reevaluation_incomplete"
  /** A pull request ahead of the group's own is refused: its own group fails it and the forge rebuilds this one. */
  | "refused_ahead";

export interface JudgedMember {
  readonly pullNumber: number;
  readonly headSha: string;
  readonly recordId: number | null;
  /** Which rules approved it: the ones it was decided under, or a re-evaluation under the ones it merges onto. */
  readonly ruleSource: "recorded" | "reevaluated" | null;
  readonly outcome: "passed" | "refused" | "incomplete";
  readonly reason: GroupReason | IncompleteReason | null;
  /** For `rules_changed_ahead`: the pull request ahead whose merge changed the rules. */
  readonly changedBy: number | null;
}

export type GroupVerdict =
  | { readonly kind: "success"; readonly members: readonly JudgedMember[] }
  /** `refused`: the group's own pull request, which the forge removes from the queue. */
  | { readonly kind: "failure"; readonly refused: JudgedMember; readonly members: readonly JudgedMember[] }
  | { readonly kind: "incomplete"; readonly reason: IncompleteReason; readonly pullNumber: number | null; readonly members: readonly JudgedMember[] };
