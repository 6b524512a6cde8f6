import type { DecisionRecordBody } from "../../server/records/codec.ts";
import type { RecordId } from "../../server/records/schema.ts";
import { confirmDecision, one, recordMerge, recordPendingDecision, settleMergeEnrollment, type Store } from "../../server/store/index.ts";

/**
 * Decision and merge records for the readers' tests (history ops, the routes, the decisions page), written through the
 * writers' own store operations (ops/record-ops.ts) at chosen times.
 */
export const RECORD_HEAD = "a".repeat(40);
export const RECORD_BASE = "f".repeat(40);
export const RECORD_MERGE_COMMIT = "c".repeat(40);

export function recordBody(over: Partial<DecisionRecordBody> = {}): DecisionRecordBody {
  return {
    schema_version: 1, kind: "decision", installation_id: 4, repository: { id: 40, full_name: "Acme/Web" }, pull_request: 7,
    head_sha: RECORD_HEAD, base_sha: RECORD_BASE, check_run_id: 99, conclusion: "success", title: "Approved by code owners",
    reasons: [], published_at: "2026-11-27T00:00:00.000Z", service: { version: "1.2.3", revision: "abc" }, codeowners: null,
    repository_policy: null, organization_policy: null, owner_sets: [], unowned_path_count: 0, non_delegable_path_count: 0,
    break_glass: null, summarised: null, inputs: null, ...over,
  };
}

let sequence = 0;

export type SeedDecision = Partial<DecisionRecordBody> & { readonly confirmed?: boolean; readonly breakGlass?: boolean };

/** A break-glass override as a record carries it. */
export const RECORD_BREAK_GLASS = { review_id: 77, reviewer_id: 707, reviewer_login: "oncall", reason: "production outage, rollback needs to ship now", team: "sre", unsatisfied_owner_sets: [0] } as const;

/**
 * A decision record published at `at` (epoch ms), written as the worker writes it (recordPendingDecision with a token of
 * its own) and confirmed 1 ms later unless told otherwise (confirmDecision), so the row is the writers' own.
 */
export async function seedDecision(store: Store, at: number, over: SeedDecision = {}): Promise<RecordId> {
  const { confirmed = true, breakGlass = false, ...fields } = over;
  const body = recordBody({ published_at: new Date(at).toISOString(), ...(breakGlass ? { break_glass: RECORD_BREAK_GLASS } : {}), ...fields });
  const n = ++sequence;
  const token = `seed-${n}`;
  await store.execute(() => recordPendingDecision({ body, sharedGeneration: n, digest: `digest-${n}`, token }));
  if (confirmed) await store.execute(() => confirmDecision({ repositoryId: body.repository.id, headSha: body.head_sha, token, now: at + 1 }));
  const row = await store.execute(() => one<{ id: number }>("select id from decision_records where repository_id = $1 and head_sha = $2 and digest = $3", body.repository.id, body.head_sha, `digest-${n}`));
  return `d${row!.id}`;
}

export type SeedMerge = {
  readonly repository?: string; readonly repositoryId?: number; readonly pull?: number; readonly head?: string; readonly mergeCommit?: string | null;
  readonly mergedBy?: { readonly id: number; readonly login: string } | null; readonly recovered?: boolean;
  /** The base commit it merged onto, and its enrollment settled as the worker settles it (absent: not read yet). */
  readonly baseSha?: string; readonly enrollment?: "enrolled" | "not_enrolled";
};

/**
 * A merge record at `at` (epoch ms), merged 5 ms before, written by recordMerge: it is judged by the newest decision record
 * of its pull request on the head at merge (unapproved unless that is a confirmed success). Its pull request number is
 * unique unless given.
 */
export async function seedMerge(store: Store, at: number, over: SeedMerge = {}): Promise<RecordId> {
  const merged = await store.execute(() => recordMerge({
    installationId: 4, repositoryId: over.repositoryId ?? 40, repositoryFullName: over.repository ?? "Acme/Web", pullNumber: over.pull ?? 100_000 + ++sequence,
    headSha: over.head ?? RECORD_HEAD, baseSha: over.baseSha ?? null, mergeCommitSha: over.mergeCommit === undefined ? RECORD_MERGE_COMMIT : over.mergeCommit,
    mergedBy: over.mergedBy === undefined ? { id: 501, login: "octocat" } : over.mergedBy, mergedAtMs: at - 5, recovered: over.recovered ?? false, now: at,
  }));
  if (merged === null) throw new Error("seedMerge: the merge was recorded already");
  if (over.enrollment !== undefined) await store.execute(() => settleMergeEnrollment(merged.id, over.enrollment!, at));
  return `m${merged.id}`;
}
