// Decision records and merge records (DESIGN 3.10, issue 28): the JSON the store keeps (gzip-compressed in
// `decision_records.body`, migration 0008), the history commands print, `service history export` writes one per line, and
// `GET /api/decisions/{id}` answers. Plain JSON data only (no Date, Map, class instances). Identifiers and facts, never file
// contents, tokens or payloads: blob SHAs name the files. Changes are additive within a schema version; anything else bumps
// RECORD_SCHEMA_VERSION and the documented schema (docs/operations.md "Compliance evidence").

import type { BreakGlassRefusalCode, ReasonCode } from "../evaluation/decision.ts";
import type { CodeownersLocation, Evidence, FileRead } from "../evaluation/evidence.ts";
import { DEFAULT_FORGE_DIRECTORY } from "../policy/forge-directory.ts";

export const RECORD_SCHEMA_VERSION = 1 as const;

/** A record's JSON before compression is at most this; past it the per-path detail is summarised and the record says so. */
export const MAX_RECORD_BYTES = 256 * 1024;

/** Retention default and range (SERVICE_DECISION_RETENTION_DAYS). */
export const DEFAULT_DECISION_RETENTION_DAYS = 400;
export const MIN_DECISION_RETENTION_DAYS = 30;
export const MAX_DECISION_RETENTION_DAYS = 3650;

/** Identifiers as the routes and commands spell them: `d<number>` for a decision record, `m<number>` for a merge record. */
export type RecordId = `d${number}` | `m${number}`;

export interface RecordedRepository {
  readonly id: number;
  /** `owner/name` at the time of the record. */
  readonly full_name: string;
}

/** A policy or code-owners file the decision read: named by path and blob SHA (its content is never stored). */
export interface RecordedFile {
  readonly path: string;
  /** The forge's blob SHA of the content read; null only when the forge did not say (replay cannot fetch it then). */
  readonly blob_sha: string | null;
  readonly bytes: number;
}

/** What made a review count for an owner set. */
export type ApprovalRule = "direct_owner" | "team_membership" | "app_delegation" | "break_glass";

export interface RecordedApproval {
  readonly review_id: number;
  readonly reviewer_id: number;
  readonly reviewer_login: string;
  /** The commit the review was submitted on (always the head for a counted approval). */
  readonly commit_id: string | null;
  /** ISO 8601 as the forge gave it; null when the forge did not say. */
  readonly submitted_at: string | null;
  readonly rule: ApprovalRule;
  /** The owner it counted for (`@user`, `@org/team`) or the App slug for a delegation; the team slug for break-glass. */
  readonly via: string;
}

export interface RecordedOwnerSet {
  /** The CODEOWNERS patterns whose rules gave this owner set (as written, sorted). */
  readonly patterns: readonly string[];
  readonly owners: readonly string[];
  readonly required: number;
  readonly approvals: number;
  readonly status: "satisfied" | "missing" | "blocked" | "unknown";
  readonly satisfied_by: readonly RecordedApproval[];
  readonly path_count: number;
  /** The changed paths of the set, sorted; empty when the record is summarised (see `summarised`). */
  readonly paths: readonly string[];
}

export interface RecordedBreakGlass {
  readonly review_id: number;
  readonly reviewer_id: number;
  readonly reviewer_login: string;
  /** The reason as given (trimmed), bounded to 500 characters. */
  readonly reason: string;
  readonly team: string;
  /** Indexes into `owner_sets` of the sets their owners did not satisfy. */
  readonly unsatisfied_owner_sets: readonly number[];
}

/** A review that asked for a break-glass override and did not override, and why (`edited`: its body was edited). */
export interface RecordedBreakGlassRefusal {
  readonly review_id: number;
  readonly reviewer_login: string;
  readonly code: BreakGlassRefusalCode;
}

/** A file read as recorded: a found file keeps its path, size and blob SHA, never its text. */
export type RecordedFileRead =
  | { readonly kind: "found"; readonly path: string; readonly bytes: number; readonly blob_sha: string | null }
  | Exclude<FileRead, { readonly kind: "found" }>;

/**
 * The evaluation's inputs as recorded, for replay (DESIGN 3.10 "Replay"): the Evidence evaluate() was given, with every file
 * text replaced by its blob SHA. Reviews, the changed-files list and directory facts are kept as answered.
 */
export type RecordedInputs = Omit<Evidence, "codeowners" | "repositoryPolicy" | "organizationPolicy" | "headFiles"> & {
  readonly codeowners: Readonly<Record<CodeownersLocation, RecordedFileRead>>;
  readonly repositoryPolicy: RecordedFileRead;
  readonly organizationPolicy: RecordedFileRead;
};

/**
 * The service's settings the decision was evaluated under, as configured then: replay evaluates with them (DESIGN 3.10
 * "Replay"). Absent from records written before it was recorded (replay then uses today's).
 */
export interface RecordedSettings {
  /** SERVICE_CHECK_NAME. */
  readonly check_name: string;
  /** SERVICE_POLICY_PATH. */
  readonly policy_path: string;
  /**
   * SERVICE_FORGE_DIRECTORY. Added within schema version 1: absent from records written before the directory was a setting,
   * which were all evaluated under `.forge` (recordedForgeDirectory).
   */
  readonly forge_directory?: string;
  /** SERVICE_ALLOW_INSECURE_CHANGES. */
  readonly allow_insecure_changes: boolean;
}

/** The forge directory a decision was evaluated under: the recorded one, `.forge` for a record from before it was recorded. */
export function recordedForgeDirectory(record: Pick<DecisionRecord, "settings">): string {
  return record.settings?.forge_directory ?? DEFAULT_FORGE_DIRECTORY;
}

export interface DecisionRecord {
  readonly schema_version: typeof RECORD_SCHEMA_VERSION;
  readonly kind: "decision";
  readonly id: `d${number}`;
  /** False: written before the completing check write and not confirmed after it; the write may not have reached the forge. */
  readonly confirmed: boolean;
  readonly installation_id: number;
  readonly repository: RecordedRepository;
  readonly pull_request: number;
  readonly head_sha: string;
  readonly base_sha: string;
  readonly check_run_id: number | null;
  readonly conclusion: "success" | "failure";
  readonly title: string;
  readonly reasons: readonly ReasonCode[];
  /** ISO 8601, the service's clock when the record was written. */
  readonly published_at: string;
  readonly service: { readonly version: string; readonly revision: string | null };
  /** Added within schema version 1: absent from older records. */
  readonly settings?: RecordedSettings;
  readonly codeowners: RecordedFile | null;
  readonly repository_policy: RecordedFile | null;
  readonly organization_policy: (RecordedFile & { readonly repository: string; readonly commit_sha: string | null }) | null;
  readonly owner_sets: readonly RecordedOwnerSet[];
  readonly unowned_path_count: number;
  readonly non_delegable_path_count: number;
  readonly break_glass: RecordedBreakGlass | null;
  /**
   * The break-glass requests that did not override, with their refusal codes (most recent first). Added within schema
   * version 1: absent from older records and from records without a refused request.
   */
  readonly break_glass_refusals?: readonly RecordedBreakGlassRefusal[];
  /** Null when whole; otherwise what was left out to stay within MAX_RECORD_BYTES and whether replay is still possible. */
  readonly summarised: { readonly omitted: "owner_set_paths" | "inputs"; readonly replayable: boolean } | null;
  /** Null only when summarised with `omitted: "inputs"`. */
  readonly inputs: RecordedInputs | null;
}

export interface MergeRecord {
  readonly schema_version: typeof RECORD_SCHEMA_VERSION;
  readonly kind: "merge";
  readonly id: `m${number}`;
  readonly installation_id: number;
  readonly repository: RecordedRepository;
  readonly pull_request: number;
  /** The head at merge. */
  readonly head_sha: string;
  readonly merge_commit_sha: string | null;
  readonly merged_by: { readonly id: number; readonly login: string } | null;
  readonly merged_at: string | null;
  /** The decision record that was current for the head at merge (the newest for that pull request and head), if any. */
  readonly decision_id: `d${number}` | null;
  readonly decision_conclusion: "success" | "failure" | null;
  /** No current `success` record for the head at merge: an administrator bypass or the check not required. */
  readonly unapproved: boolean;
  /**
   * When the service reset the head's check to in progress after the decision's confirmed success, withdrawing it (the merge is
   * then unapproved); null when no reset followed it.
   */
  readonly reset_at: string | null;
  /** The base commit it merged onto, whose repository policy says whether the service was enabled there; null: not known. */
  readonly base_sha: string | null;
  /**
   * `enrolled`: the repository policy at the base commit enables the service; `not_enrolled`: it does not, so the merge is
   * not unapproved and not counted; `pending`: not read yet (the worker or the reconciler reads it shortly).
   */
  readonly enrollment: "enrolled" | "not_enrolled" | "pending";
  readonly break_glass: boolean;
  /** Found by the reconciler among recently closed pull requests (its `closed` delivery was missed). */
  readonly recovered: boolean;
  readonly recorded_at: string;
  /**
   * The newest merge-group record that verified this pull request at this head (a merge through the merge queue), if any.
   * Added within schema version 1: absent from older records.
   */
  readonly merge_group_id?: `d${number}` | null;
  /** In `service history export` only: the merge's signed statement (a DSSE envelope), when it is an attested approved merge. */
  readonly attestation?: unknown;
}

/** A pull request of a merge group as the group's judgement took it. */
export interface RecordedGroupMember {
  readonly pull_request: number;
  /** Its head in the group. */
  readonly head_sha: string;
  /** The decision record the judgement took for that head (null: none). */
  readonly decision_id: `d${number}` | null;
  /** Which rules approved it: those it was decided under (`recorded`) or a re-evaluation under those it merges onto. */
  readonly rule_source: "recorded" | "reevaluated" | null;
  readonly outcome: "passed" | "refused" | "incomplete";
  /** Why it did not pass (a reason code of the group's check), else null. */
  readonly reason: string | null;
  /** For `rules_changed_ahead`: the pull request ahead in the queue whose change of the rules it was judged under. */
  readonly changed_by: number | null;
}

/**
 * A merge group's judgement (the merge queue's temporary commit): written with the completing check write on the group's
 * head, in the same table and ID space as decisions, so history, export and the page list it with them. Never replayed:
 * each member's own decision record is.
 */
export interface MergeGroupRecord {
  readonly schema_version: typeof RECORD_SCHEMA_VERSION;
  readonly kind: "merge_group";
  readonly id: `d${number}`;
  /** Always true: it is written once the check write was answered. */
  readonly confirmed: boolean;
  readonly installation_id: number;
  readonly repository: RecordedRepository;
  /** The group's commit, on which the check was published. */
  readonly head_sha: string;
  readonly base_ref: string;
  /** The group's parent commit. */
  readonly base_sha: string;
  readonly check_run_id: number | null;
  readonly conclusion: "success" | "failure";
  readonly title: string;
  readonly published_at: string;
  readonly service: { readonly version: string; readonly revision: string | null };
  /** The pull requests of the group in queue order (the group's own last). */
  readonly members: readonly RecordedGroupMember[];
}

export type HistoryRecord = DecisionRecord | MergeRecord | MergeGroupRecord;

/** One line of `GET /api/decisions` (the full record is `GET /api/decisions/{id}`). */
export type HistorySummary =
  | (Pick<DecisionRecord, "schema_version" | "kind" | "id" | "confirmed" | "repository" | "pull_request" | "head_sha" | "conclusion" | "title" | "published_at"> & { readonly break_glass: boolean })
  | Pick<MergeRecord, "schema_version" | "kind" | "id" | "repository" | "pull_request" | "head_sha" | "merge_commit_sha" | "merged_by" | "merged_at" | "decision_id" | "decision_conclusion" | "unapproved" | "reset_at" | "enrollment" | "break_glass" | "recovered" | "recorded_at" | "merge_group_id">
  | (Pick<MergeGroupRecord, "schema_version" | "kind" | "id" | "confirmed" | "repository" | "head_sha" | "base_ref" | "conclusion" | "title" | "published_at"> & {
    /** Always false: a group is never overridden (its pull requests' decisions may be). */
    readonly break_glass: false;
    readonly pull_requests: readonly number[];
  });

/** The filters of the history routes and commands. `commit` matches a decision's head or a merge's head or merge commit. */
export interface HistoryFilter {
  readonly repository?: string;
  readonly pull?: number;
  readonly commit?: string;
  /** Epoch milliseconds, inclusive. */
  readonly sinceMs?: number;
  /** Epoch milliseconds, exclusive. */
  readonly untilMs?: number;
  readonly unapproved?: boolean;
  readonly overrides?: boolean;
  readonly kind?: "decision" | "merge";
  /** Only records of these repositories (by forge ID): what a signed-in person may read. Empty: none. */
  readonly repositoryIds?: readonly number[];
}

/** `GET /api/decisions` answer: newest first, keyset-paginated by an opaque cursor. */
export interface HistoryPage {
  readonly schema_version: typeof RECORD_SCHEMA_VERSION;
  readonly items: readonly HistorySummary[];
  readonly next_cursor: string | null;
}
