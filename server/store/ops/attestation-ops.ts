import { all, one, type Op, run } from "../op.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";

/**
 * The signed statements of approved merges (migration 0015). The elected reconciler attests, after its lease, the merges a
 * checkpoint covers that are approved (not unapproved, enrolled, with a merge commit and a decision), a bounded batch per
 * attempt; each is written once (a merge record no longer changes once covered). Reads for the route, the export and
 * `history verify --attestations`.
 */

/** Merges attested per reconciler attempt. */
export const ATTEST_BATCH = 200;

export type MergeToAttest = {
  readonly id: number; readonly recordSha256: string; readonly repositoryFullName: string; readonly mergeCommitSha: string;
  readonly baseSha: string | null; readonly mergedAtMs: number | null; readonly breakGlass: boolean;
  readonly decisionId: number; readonly decisionSha256: string; readonly decisionBody: Uint8Array;
};

export function* readMergesToAttest(limit: number = ATTEST_BATCH): Op<MergeToAttest[]> {
  const rows = yield* all<{
    id: unknown; record_sha256: string; repository_full_name: string; merge_commit_sha: string; base_sha: string | null; merged_at_ms: unknown;
    break_glass: unknown; decision_id: unknown; decision_sha256: string; body: Uint8Array;
  }>(
    `select m.id, m.record_sha256, m.repository_full_name, m.merge_commit_sha, m.base_sha, m.merged_at_ms, m.break_glass, m.decision_id,
       d.record_sha256 as decision_sha256, d.body
     from merge_records m join decision_records d on d.id = m.decision_id
     where m.checkpoint_id is not null and m.unapproved = false and m.enrollment = 'enrolled' and m.merge_commit_sha is not null
       and d.record_sha256 is not null and m.record_sha256 is not null
       and not exists (select 1 from merge_attestations a where a.merge_id = m.id)
     order by m.id limit $1`,
    limit,
  );
  return rows.map((row) => ({
    id: Number(row.id), recordSha256: row.record_sha256, repositoryFullName: row.repository_full_name, mergeCommitSha: row.merge_commit_sha, baseSha: row.base_sha,
    mergedAtMs: row.merged_at_ms === null ? null : Number(row.merged_at_ms), breakGlass: row.break_glass === true || Number(row.break_glass) === 1,
    decisionId: Number(row.decision_id), decisionSha256: row.decision_sha256, decisionBody: new Uint8Array(row.body),
  }));
}

/** Writes signed statements, fenced by the reconciler's lease; false when the lease was lost (nothing written). */
export function* writeMergeAttestations(lease: ElectionLease, now: number, attestations: readonly { readonly mergeId: number; readonly keyId: string; readonly envelope: string }[]): Op<boolean> {
  if (!(yield* renewElectionLease(lease, now))) return false;
  for (const a of attestations) {
    yield* run("insert into merge_attestations (merge_id, key_id, envelope, created_at_ms) values ($1, $2, $3, $4) on conflict (merge_id) do nothing", a.mergeId, a.keyId, a.envelope, now);
  }
  return true;
}

/** A merge's envelope (JSON), or null when it has none. */
export function* readMergeAttestation(mergeId: number): Op<string | null> {
  const row = yield* one<{ envelope: string }>("select envelope from merge_attestations where merge_id = $1", mergeId);
  return row?.envelope ?? null;
}

/** The envelopes of these merges (at most a thousand IDs), by merge ID. */
export function* readMergeAttestations(mergeIds: readonly number[]): Op<Map<number, string>> {
  const rows = yield* all<{ merge_id: unknown; envelope: string }>(`select merge_id, envelope from merge_attestations where merge_id in (${mergeIds.map((_, i) => `$${i + 1}`).join(", ")})`, ...mergeIds);
  return new Map(rows.map((row) => [Number(row.merge_id), row.envelope]));
}

export type StoredAttestation = { readonly mergeId: number; readonly envelope: string; readonly mergeCommitSha: string | null; readonly recordSha256: string | null; readonly exists: boolean };

/** Attestations after merge ID `after`, by merge ID, with their merge record's commit and digest (keyset pages). */
export function* readAttestationsAfter(after: number, limit: number): Op<StoredAttestation[]> {
  const rows = yield* all<{ merge_id: unknown; envelope: string; merge_commit_sha: string | null; record_sha256: string | null; id: unknown }>(
    `select a.merge_id, a.envelope, m.merge_commit_sha, m.record_sha256, m.id from merge_attestations a left join merge_records m on m.id = a.merge_id
     where a.merge_id > $1 order by a.merge_id limit $2`,
    after, limit,
  );
  return rows.map((row) => ({ mergeId: Number(row.merge_id), envelope: row.envelope, mergeCommitSha: row.merge_commit_sha, recordSha256: row.record_sha256, exists: row.id !== null }));
}
