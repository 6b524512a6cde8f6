import { type Checkpoint, checkpointHash, checkpointLeafHash, MerkleTreeBuilder, RECORD_FIELDS, type RecordKind, toHex } from "../../records/tamper-evidence.ts";
import { all, type Dialect, dialect, one, type Op, type Row, run } from "../op.ts";
import { attestCoveredMerges, type MergeToAttest, type SignedMerge } from "./attestation-ops.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";
import { storedRecordDigestSql } from "./record-digest.ts";

/**
 * Checkpoints of the decision and merge records (migration 0014; server/records/tamper-evidence.ts says what is hashed).
 *
 * Written by the elected reconciler, fenced by its lease, at most once per CHECKPOINT_INTERVAL_MS and only when records were
 * added: a checkpoint covers every record that is final and not covered yet (a decision once confirmed, a merge once its
 * enrollment is settled: the service never changes either again), in one transaction. Each such record is given the new
 * checkpoint's ID and its leaf (0, 1, …: the decisions in ID order, then the merges) in bounded batches (each statement well
 * inside the ordinary statement bound, the leaves hashed as they come back, so a backlog of a million records costs one
 * subtree hash per bit of memory); then the checkpoint row: its sequence number (the previous one's + 1, the primary key: two
 * writers could never both write one), its time, its count, the RFC 6962 root over its leaves, and the previous checkpoint's
 * hash. A record written before migration 0014 has no digest yet: covering it computes it. Nothing here touches a record that
 * is not final, so the publication path never waits on a checkpoint: the writers of records change only records that are not.
 *
 * A record that is never final (a decision whose write never reached the forge, a merge whose enrollment is never read) is
 * never covered: it proves nothing anyone saw.
 */

/** At most one checkpoint per this interval (and none when nothing was added). */
export const CHECKPOINT_INTERVAL_MS = 600_000;
/** Records given their leaf per statement. */
export const CHECKPOINT_BATCH = 5_000;

/** A checkpoint as stored: its hash, and its DSSE envelope (JSON) when a signing key was configured when it was written. */
export type WrittenCheckpoint = Checkpoint & { readonly hash: string; readonly envelope?: string | null };
export type CheckpointOutcome =
  | { readonly kind: "lost" }
  /** The last checkpoint is younger than the interval. */
  | { readonly kind: "not_due"; readonly last: WrittenCheckpoint }
  | { readonly kind: "nothing_new" }
  | { readonly kind: "written"; readonly checkpoint: WrittenCheckpoint };

const TABLES: { readonly [K in RecordKind]: { readonly table: string; readonly final: string } } = {
  decision: { table: "decision_records", final: "confirmed_at_ms is not null" },
  merge: { table: "merge_records", final: "enrollment is not null" },
};
export const RECORD_KINDS: readonly RecordKind[] = ["decision", "merge"];

/**
 * $1 checkpoint ID, $2 the first leaf of this batch, $3 the batch size, $4 the last ID the batch before marked (keyset: each
 * batch starts its scan of the uncovered rows after the rows the batches before it left behind).
 */
function markSql(kind: RecordKind, which: Dialect): string {
  const { table, final } = TABLES[kind];
  return `update ${table} set checkpoint_id = $1, checkpoint_leaf = $2 + p.n - 1,
      record_sha256 = coalesce(${table}.record_sha256, ${storedRecordDigestSql(kind, which, table)})
    from (select pid, row_number() over (order by pid) as n from (select id as pid from ${table} where checkpoint_id is null and id > $4 and ${final} order by id limit $3) s) p
    where ${table}.id = p.pid
    returning id, checkpoint_leaf, record_sha256`;
}

export function checkpointOf(row: Row): WrittenCheckpoint {
  return {
    id: Number(row.id), createdAtMs: Number(row.created_at_ms), count: Number(row.record_count), root: String(row.root),
    previous: row.previous === null ? null : String(row.previous), hash: String(row.hash),
    envelope: row.envelope === null || row.envelope === undefined ? null : String(row.envelope),
  };
}

const CHECKPOINT_COLUMNS = "id, created_at_ms, record_count, root, previous, hash, envelope";

export function* readLastCheckpoint(): Op<WrittenCheckpoint | null> {
  const row = yield* one(`select ${CHECKPOINT_COLUMNS} from history_checkpoints order by id desc limit 1`);
  return row === null ? null : checkpointOf(row);
}

/**
 * The reconciler's checkpoint (above), when due: fenced by its lease (renewed first). One transaction: on PostgreSQL the
 * lease row stays locked until it commits, so no other process can take the lease and write a checkpoint meanwhile.
 */
export function* writeCheckpoint(
  lease: ElectionLease, now: number,
  options: {
    readonly intervalMs?: number; readonly batch?: number;
    /** With a signing key: the checkpoint's DSSE envelope (JSON), and the statements of the approved merges it covers. */
    readonly sign?: { readonly checkpoint: (checkpoint: Checkpoint) => string; readonly merges: (merges: readonly MergeToAttest[]) => SignedMerge[] };
  } = {},
): Op<CheckpointOutcome> {
  if (!(yield* renewElectionLease(lease, now))) return { kind: "lost" };
  const last = yield* readLastCheckpoint();
  if (last !== null && now - last.createdAtMs < (options.intervalMs ?? CHECKPOINT_INTERVAL_MS)) return { kind: "not_due", last };
  const which = yield* dialect();
  const batch = options.batch ?? CHECKPOINT_BATCH;
  const id = (last?.id ?? 0) + 1;
  const tree = new MerkleTreeBuilder();
  for (const kind of RECORD_KINDS) {
    let after = 0;
    for (;;) {
      const rows = yield* all<{ id: unknown; checkpoint_leaf: unknown; record_sha256: string }>(markSql(kind, which), id, tree.size, batch, after);
      // RETURNING promises no order: the leaves go into the tree by their number.
      const leaves = rows.map((row) => ({ id: Number(row.id), leaf: Number(row.checkpoint_leaf), digest: row.record_sha256 })).sort((a, b) => a.leaf - b.leaf);
      for (const leaf of leaves) {
        if (leaf.leaf !== tree.size) throw new Error(`writeCheckpoint: leaf ${leaf.leaf} where ${tree.size} was due`);
        tree.add(checkpointLeafHash({ kind, id: leaf.id, digest: leaf.digest }));
        after = Math.max(after, leaf.id);
      }
      if (rows.length < batch) break;
    }
  }
  if (tree.size === 0) return { kind: "nothing_new" };
  const checkpoint: Checkpoint = { id, createdAtMs: now, count: tree.size, root: toHex(tree.root()), previous: last?.hash ?? null };
  const hash = checkpointHash(checkpoint);
  // Signed in the same transaction that seals them: the approved merges this checkpoint covers, then the checkpoint itself.
  if (options.sign !== undefined) yield* attestCoveredMerges(id, now, options.sign.merges);
  const envelope = options.sign?.checkpoint(checkpoint) ?? null;
  yield* run(
    `insert into history_checkpoints (${CHECKPOINT_COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7)`,
    checkpoint.id, checkpoint.createdAtMs, checkpoint.count, checkpoint.root, checkpoint.previous, hash, envelope,
  );
  return { kind: "written", checkpoint: { ...checkpoint, hash, envelope } };
}

/** The columns a verifier reads of a record: its digest's fields, its ID, digest and place. */
function recordColumns(kind: RecordKind): string {
  return `id, record_sha256, checkpoint_id, checkpoint_leaf, ${Object.keys(RECORD_FIELDS[kind]).join(", ")}`;
}

/** Checkpoints after `afterId`, oldest first (keyset pages). */
export function* readCheckpoints(afterId: number, limit: number): Op<WrittenCheckpoint[]> {
  return (yield* all(`select ${CHECKPOINT_COLUMNS} from history_checkpoints where id > $1 order by id limit $2`, afterId, limit)).map(checkpointOf);
}

/** The first checkpoint written at or after `atMs` (a verification's starting point); null when none is. */
export function* readCheckpointAt(atMs: number): Op<WrittenCheckpoint | null> {
  const row = yield* one(`select ${CHECKPOINT_COLUMNS} from history_checkpoints where created_at_ms >= $1 order by id limit 1`, atMs);
  return row === null ? null : checkpointOf(row);
}

/**
 * The records of one kind a checkpoint covers, after (leaf, ID) `after`, by leaf and ID (keyset pages): two records claiming
 * one leaf are both read.
 */
export function* readCoveredRecords(kind: RecordKind, checkpointId: number, after: { readonly leaf: number; readonly id: number }, limit: number): Op<Row[]> {
  return yield* all(
    `select ${recordColumns(kind)} from ${TABLES[kind].table} where checkpoint_id = $1 and (checkpoint_leaf, id) > ($2, $3) order by checkpoint_leaf, id limit $4`,
    checkpointId, after.leaf, after.id, limit,
  );
}

/** The records of one kind no checkpoint covers, after ID `afterId`, by ID (keyset pages). */
export function* readUncoveredRecords(kind: RecordKind, afterId: number, limit: number): Op<Row[]> {
  return yield* all(`select ${recordColumns(kind)} from ${TABLES[kind].table} where checkpoint_id is null and id > $1 order by id limit $2`, afterId, limit);
}

/** A record naming a checkpoint that is not among 1..lastId (none: null). */
export function* readStrayRecord(lastId: number): Op<{ kind: RecordKind; id: number; checkpointId: number } | null> {
  for (const kind of RECORD_KINDS) {
    const row = yield* one<{ id: unknown; checkpoint_id: unknown }>(
      `select id, checkpoint_id from ${TABLES[kind].table} where checkpoint_id is not null and (checkpoint_id > $1 or checkpoint_id < 1) order by id limit 1`, lastId,
    );
    if (row !== null) return { kind, id: Number(row.id), checkpointId: Number(row.checkpoint_id) };
  }
  return null;
}
