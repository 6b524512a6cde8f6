import { all, one, type Op, run } from "../op.ts";

/**
 * The signed statements of approved merges (migration 0015). They are written only by the checkpoint that covers the merge,
 * in its transaction (checkpoint-ops.ts): the service signs a merge's verdict exactly when it seals the record, never a
 * record covered earlier. A signer that took any covered merge without a statement would sign a lie for whoever can write the
 * database: an old unapproved merge flipped to approved (digest recomputed), or a statement deleted and signed again. An
 * approved merge is one that is not unapproved, enrolled, with a merge commit and a decision record with its digest.
 * Reads for the route, the export and `history verify --attestations`.
 */

/** Merges signed per statement batch. */
export const ATTEST_BATCH = 200;

/** The condition of an approved merge `m` with its decision record `d` (both with digests). */
const APPROVED = "m.unapproved = false and m.enrollment = 'enrolled' and m.merge_commit_sha is not null and m.record_sha256 is not null and d.record_sha256 is not null";

export type MergeToAttest = {
  readonly id: number; readonly recordSha256: string; readonly repositoryFullName: string; readonly mergeCommitSha: string;
  readonly baseSha: string | null; readonly breakGlass: boolean;
  readonly decisionId: number; readonly decisionSha256: string; readonly decisionBody: Uint8Array;
};

/** The approved merges checkpoint `checkpointId` covers, after merge ID `after`, by ID (keyset pages). */
export function* readMergesToAttest(checkpointId: number, after: number, limit: number = ATTEST_BATCH): Op<MergeToAttest[]> {
  const rows = yield* all<{
    id: unknown; record_sha256: string; repository_full_name: string; merge_commit_sha: string; base_sha: string | null;
    break_glass: unknown; decision_id: unknown; decision_sha256: string; body: Uint8Array;
  }>(
    `select m.id, m.record_sha256, m.repository_full_name, m.merge_commit_sha, m.base_sha, m.break_glass, m.decision_id,
       d.record_sha256 as decision_sha256, d.body
     from merge_records m join decision_records d on d.id = m.decision_id
     where m.checkpoint_id = $1 and m.id > $2 and ${APPROVED}
     order by m.id limit $3`,
    checkpointId, after, limit,
  );
  return rows.map((row) => ({
    id: Number(row.id), recordSha256: row.record_sha256, repositoryFullName: row.repository_full_name, mergeCommitSha: row.merge_commit_sha, baseSha: row.base_sha,
    breakGlass: row.break_glass === true || Number(row.break_glass) === 1,
    decisionId: Number(row.decision_id), decisionSha256: row.decision_sha256, decisionBody: new Uint8Array(row.body),
  }));
}

export type SignedMerge = { readonly mergeId: number; readonly keyId: string; readonly envelope: string };

/**
 * Signs and writes the statements of the approved merges a checkpoint covers, in the checkpoint's transaction (after its
 * records were marked, before its row): batches of ATTEST_BATCH, one insert each. Answers how many were signed.
 */
export function* attestCoveredMerges(checkpointId: number, now: number, sign: (merges: readonly MergeToAttest[]) => SignedMerge[]): Op<number> {
  let after = 0;
  let signed = 0;
  for (;;) {
    const merges = yield* readMergesToAttest(checkpointId, after);
    if (merges.length === 0) return signed;
    const statements = sign(merges);
    const values = statements.map((_, i) => `($${4 * i + 1}, $${4 * i + 2}, $${4 * i + 3}, $${4 * i + 4})`).join(", ");
    yield* run(`insert into merge_attestations (merge_id, key_id, envelope, created_at_ms) values ${values} on conflict (merge_id) do nothing`, ...statements.flatMap((a) => [a.mergeId, a.keyId, a.envelope, now]));
    signed += statements.length;
    after = merges[merges.length - 1]!.id;
    if (merges.length < ATTEST_BATCH) return signed;
  }
}

/**
 * An approved merge covered by a signed checkpoint that has no statement (its statement was removed: the checkpoint signed
 * every approved merge it covered), the first by ID, or null.
 */
export function* readUnattestedSignedMerge(): Op<{ readonly mergeId: number; readonly checkpointId: number } | null> {
  const row = yield* one<{ id: unknown; checkpoint_id: unknown }>(
    `select m.id, m.checkpoint_id from merge_records m join decision_records d on d.id = m.decision_id
       join history_checkpoints c on c.id = m.checkpoint_id
     where c.envelope is not null and ${APPROVED} and not exists (select 1 from merge_attestations a where a.merge_id = m.id)
     order by m.id limit 1`,
  );
  return row === null ? null : { mergeId: Number(row.id), checkpointId: Number(row.checkpoint_id) };
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
