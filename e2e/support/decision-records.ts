import { type DecisionRecordBody, encodeRecordBody } from "../../server/records/codec.ts";
import type { RecordId } from "../../server/records/schema.ts";
import { one, type Store } from "../../server/store/index.ts";

/**
 * Decision and merge records for the readers' tests (history ops, the routes, the decisions page), stored as the writers
 * store them (migration 0008: the body gzip JSON through the codec, the filter columns beside it), by plain SQL: the readers
 * are tested on rows of every shape, including ones the writers only make in rare paths (unconfirmed, summarised, recovered).
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

/** A decision record published at `at` (epoch ms); confirmed unless told otherwise. */
export async function seedDecision(store: Store, at: number, over: SeedDecision = {}): Promise<RecordId> {
  const { confirmed = true, breakGlass = false, ...fields } = over;
  const record = recordBody({ published_at: new Date(at).toISOString(), ...fields });
  const { bytes, size } = encodeRecordBody(record);
  const generation = ++sequence;
  const row = await store.execute(() => one<{ id: number }>(
    `insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest,
       pending_token, conclusion, break_glass, published_at_ms, confirmed_at_ms, body_bytes, body)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) returning id`,
    record.installation_id, record.repository.id, record.repository.full_name, record.pull_request, record.head_sha, generation, `digest-${generation}`,
    "token", record.conclusion, breakGlass, at, confirmed ? at + 1 : null, size, bytes,
  ));
  return `d${row!.id}`;
}

export type SeedMerge = {
  readonly repository?: string; readonly repositoryId?: number; readonly pull?: number; readonly head?: string; readonly mergeCommit?: string | null;
  readonly unapproved?: boolean; readonly breakGlass?: boolean; readonly decisionId?: RecordId | null; readonly decisionConclusion?: "success" | "failure" | null;
  readonly mergedBy?: { readonly id: number; readonly login: string } | null; readonly recovered?: boolean;
};

/** A merge record at `at` (epoch ms), merged 5 ms before; its pull request number is unique unless given. */
export async function seedMerge(store: Store, at: number, over: SeedMerge = {}): Promise<RecordId> {
  const mergedBy = over.mergedBy === undefined ? { id: 501, login: "octocat" } : over.mergedBy;
  const decisionId = over.decisionId == null ? null : Number(over.decisionId.slice(1));
  const row = await store.execute(() => one<{ id: number }>(
    `insert into merge_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, merge_commit_sha, merged_by_id,
       merged_by_login, merged_at_ms, decision_id, decision_conclusion, unapproved, break_glass, recovered, recorded_at_ms)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) returning id`,
    4, over.repositoryId ?? 40, over.repository ?? "Acme/Web", over.pull ?? 100_000 + ++sequence, over.head ?? RECORD_HEAD,
    over.mergeCommit === undefined ? RECORD_MERGE_COMMIT : over.mergeCommit, mergedBy?.id ?? null, mergedBy?.login ?? null, at - 5,
    decisionId, over.decisionConclusion ?? (decisionId === null ? null : "success"), over.unapproved ?? false, over.breakGlass ?? false, over.recovered ?? false, at,
  ));
  return `m${row!.id}`;
}
