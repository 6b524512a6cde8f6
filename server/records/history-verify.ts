import {
  readCheckpointAt, readCheckpoints, readCoveredRecords, readLastCheckpoint, readStrayRecord, readUncoveredRecords, RECORD_KINDS, type Store, type WrittenCheckpoint,
} from "../store/index.ts";
import { CanonicalFormError, checkpointHash, checkpointLeafHash, MerkleTreeBuilder, recordDigest, type RecordKind, toHex } from "./tamper-evidence.ts";

/**
 * `service history verify`: recomputes every record's digest and every checkpoint from the database and answers the first
 * record or checkpoint that was changed, removed or inserted. It reads in keyset pages (memory stays bounded however many
 * records there are) and trusts nothing it reads: the checkpoints are walked from the first (or the one `since` names) in
 * order, each one's hash recomputed from its fields and compared with the next one's link; each checkpoint's records are read
 * by leaf, each digest recomputed from the record's fields (server/records/tamper-evidence.ts), a gap or a repeated leaf
 * named, and the Merkle root recomputed over them; then the records no checkpoint covers are checked the same way, and one
 * that was final before the last checkpoint was written (so that checkpoint would have covered it) is named as inserted.
 *
 * What it cannot see: anything rewritten together with every digest and checkpoint after it (the database's own contents
 * agree with themselves again). Comparing the last checkpoint's hash with one kept elsewhere is what catches that (the report
 * gives it).
 */

/** How far a record's final time may precede the checkpoint that covers it after the one it missed: commit delay and clocks. */
export const CHECKPOINT_SKEW_MS = 120_000;
export const VERIFY_PAGE = 500;

export type Finding = {
  readonly subject: "record" | "checkpoint";
  readonly change: "changed" | "removed" | "inserted";
  /** d<n>, m<n>, or checkpoint <n>: what is named (null when only a position is known). */
  readonly name: string | null;
  readonly message: string;
};

export type VerifyCounts = {
  /** Checkpoints verified (chain and root), and those of them whose records are past the retention (pruned, root not recomputed). */
  checkpoints: number;
  pruned: number;
  /** Records verified: covered by a verified checkpoint, and not covered yet. */
  covered: number;
  uncovered: number;
  /** Records not covered that have no digest: written before records had digests, and never final. */
  withoutDigest: number;
};

export type VerifyReport = VerifyCounts & {
  readonly finding: Finding | null;
  readonly first: WrittenCheckpoint | null;
  readonly last: WrittenCheckpoint | null;
};

export type VerifyOptions = {
  /** Start at this checkpoint (trusting the link to the one before it), or at the first one written at or after this time. */
  readonly since?: { readonly checkpoint: number } | { readonly atMs: number };
  /** The current time and SERVICE_DECISION_RETENTION_DAYS: a checkpoint older than the retention may have lost its records. */
  readonly nowMs: number;
  readonly retentionMs: number;
  readonly pageSize?: number;
  /** Called after every page read, with the counts so far. */
  readonly onProgress?: (counts: Readonly<VerifyCounts>, checkpoint: WrittenCheckpoint | null) => void;
};

type Row = Readonly<Record<string, unknown>>;
const nameOf = (kind: RecordKind, id: number) => `${kind === "decision" ? "d" : "m"}${id}`;
const recordWord = (kind: RecordKind) => `${kind} record`;

class Found extends Error {
  constructor(readonly finding: Finding) {
    super(finding.message);
  }
}
const found = (subject: Finding["subject"], change: Finding["change"], name: string | null, message: string): never => {
  throw new Found({ subject, change, name, message });
};

/** When a record became final (its confirmation, its merge's settling), or null when it is not, or it is older than that time. */
function finalAt(kind: RecordKind, row: Row): number | null {
  const at = kind === "decision" ? row.confirmed_at_ms : row.settled_at_ms;
  return at === null || at === undefined ? null : Number(at);
}
function isFinal(kind: RecordKind, row: Row): boolean {
  return kind === "decision" ? row.confirmed_at_ms !== null : row.enrollment !== null;
}

/** The record's digest recomputed, checked against the stored one (a changed record is named). */
function checkedDigest(kind: RecordKind, row: Row, where: string): string {
  const name = nameOf(kind, Number(row.id));
  let digest: string;
  try {
    digest = recordDigest(kind, row);
  } catch (error) {
    if (!(error instanceof CanonicalFormError)) throw error;
    return found("record", "changed", name, `${recordWord(kind)} ${name} was changed${where}: ${error.message}`);
  }
  if (row.record_sha256 !== digest) found("record", "changed", name, `${recordWord(kind)} ${name} was changed${where}: its fields do not hash to its digest`);
  return digest;
}

/** One checkpoint's records of both kinds, by leaf, read in pages. */
async function* coveredRecords(store: Store, checkpointId: number, pageSize: number): AsyncGenerator<{ kind: RecordKind; row: Row; leaf: number }> {
  async function* ofKind(kind: RecordKind) {
    let after = { leaf: -1, id: 0 };
    for (;;) {
      const rows = await store.execute(() => readCoveredRecords(kind, checkpointId, after, pageSize));
      for (const row of rows) yield { kind, row, leaf: Number(row.checkpoint_leaf) };
      if (rows.length < pageSize) return;
      const end = rows[rows.length - 1]!;
      after = { leaf: Number(end.checkpoint_leaf), id: Number(end.id) };
    }
  }
  const streams = RECORD_KINDS.map(ofKind);
  const heads = await Promise.all(streams.map((s) => s.next()));
  for (;;) {
    let at = -1;
    heads.forEach((head, i) => {
      if (!head.done && (at === -1 || head.value.leaf < (heads[at]!.value as { leaf: number }).leaf)) at = i;
    });
    if (at === -1) return;
    yield heads[at]!.value as { kind: RecordKind; row: Row; leaf: number };
    heads[at] = await streams[at]!.next();
  }
}

export async function verifyHistory(store: Store, options: VerifyOptions): Promise<VerifyReport> {
  const pageSize = options.pageSize ?? VERIFY_PAGE;
  const counts: VerifyCounts = { checkpoints: 0, pruned: 0, covered: 0, uncovered: 0, withoutDigest: 0 };
  const horizon = options.nowMs - options.retentionMs;
  let first: WrittenCheckpoint | null = null;
  let last: WrittenCheckpoint | null = null;
  try {
    // Where the walk starts, and what the first checkpoint walked must chain to.
    let afterId = 0;
    let previous: WrittenCheckpoint | null = null;
    let trustLink = false;
    if (options.since !== undefined) {
      const since = options.since;
      const start = "checkpoint" in since
        ? (await store.execute(() => readCheckpoints(since.checkpoint - 1, 1)))[0] ?? null
        : await store.execute(() => readCheckpointAt(since.atMs));
      if (start !== null) {
        afterId = start.id - 1;
        previous = start.id > 1 ? (await store.execute(() => readCheckpoints(start.id - 2, 1)))[0] ?? null : null;
        trustLink = true;
      } else {
        // Nothing to walk: only the records written since the last checkpoint are checked.
        last = await store.execute(() => readLastCheckpoint());
        afterId = Number.MAX_SAFE_INTEGER;
      }
    }
    // First the chain alone (a checkpoint edited with its hash recomputed is named by the next one's link before its records
    // are read), then each checkpoint's records.
    const startAfter = afterId;
    for (;;) {
      const page = await store.execute(() => readCheckpoints(afterId, pageSize));
      for (const checkpoint of page) {
        const expectedId = first === null ? (trustLink ? checkpoint.id : 1) : last!.id + 1;
        if (checkpoint.id !== expectedId) {
          const missing = expectedId === checkpoint.id - 1 ? `checkpoint ${expectedId} was` : `checkpoints ${expectedId} to ${checkpoint.id - 1} were`;
          found("checkpoint", "removed", `checkpoint ${expectedId}`, `${missing} removed (${first === null ? "the first one kept is" : `checkpoint ${last!.id} is followed by`} ${checkpoint.id})`);
        }
        if (checkpointHash(checkpoint) !== checkpoint.hash) found("checkpoint", "changed", `checkpoint ${checkpoint.id}`, `checkpoint ${checkpoint.id} was changed: its fields do not hash to its hash`);
        const link = first === null && trustLink ? checkpoint.previous : (last?.hash ?? null);
        if (checkpoint.previous !== link) {
          found("checkpoint", "changed", `checkpoint ${checkpoint.id}`, last === null
            ? `checkpoint ${checkpoint.id} was changed: the first checkpoint links to no earlier one`
            : `checkpoint ${checkpoint.id} does not link to checkpoint ${last.id}: one of them was changed (or inserted)`);
        }
        if (checkpoint.count < 1) found("checkpoint", "inserted", `checkpoint ${checkpoint.id}`, `checkpoint ${checkpoint.id} was inserted: it covers no record`);
        first ??= checkpoint;
        last = checkpoint;
      }
      if (page.length < pageSize) break;
      afterId = page[page.length - 1]!.id;
    }
    afterId = startAfter;
    for (;;) {
      const page = await store.execute(() => readCheckpoints(afterId, pageSize));
      for (const checkpoint of page) {
        if (last === null || checkpoint.id > last.id) break;
        await verifyCheckpoint(store, checkpoint, previous, checkpoint.createdAtMs < horizon, pageSize, counts, options);
        previous = checkpoint;
      }
      if (page.length < pageSize || last === null || page[page.length - 1]!.id >= last.id) break;
      afterId = page[page.length - 1]!.id;
    }
    const stray = await store.execute(() => readStrayRecord(last?.id ?? 0));
    if (stray !== null) {
      const name = nameOf(stray.kind, stray.id);
      if (stray.checkpointId < 1) found("record", "inserted", name, `${recordWord(stray.kind)} ${name} was inserted: it names checkpoint ${stray.checkpointId}, which the service never numbers`);
      found("checkpoint", "removed", `checkpoint ${stray.checkpointId}`, `checkpoint ${stray.checkpointId} was removed: ${recordWord(stray.kind)} ${name} names it, and the last checkpoint is ${last === null ? "none" : last.id}`);
    }
    for (const kind of RECORD_KINDS) {
      let afterRecord = 0;
      for (;;) {
        const rows = await store.execute(() => readUncoveredRecords(kind, afterRecord, pageSize));
        for (const row of rows) verifyUncovered(kind, row, last, counts);
        options.onProgress?.(counts, last);
        if (rows.length < pageSize) break;
        afterRecord = Number(rows[rows.length - 1]!.id);
      }
    }
  } catch (error) {
    if (error instanceof Found) return { ...counts, finding: error.finding, first, last };
    throw error;
  }
  return { ...counts, finding: null, first, last };
}

async function verifyCheckpoint(
  store: Store, checkpoint: WrittenCheckpoint, before: WrittenCheckpoint | null, prunable: boolean, pageSize: number, counts: VerifyCounts, options: VerifyOptions,
): Promise<void> {
  const tree = new MerkleTreeBuilder();
  const where = ` (covered by checkpoint ${checkpoint.id})`;
  let expected = 0;
  let pruned = false;
  let previousName: string | null = null;
  let read = 0;
  for await (const { kind, row, leaf } of coveredRecords(store, checkpoint.id, pageSize)) {
    const name = nameOf(kind, Number(row.id));
    if (leaf < expected || leaf >= checkpoint.count) {
      found("record", "inserted", name, `${recordWord(kind)} ${name} was inserted into checkpoint ${checkpoint.id}: ${leaf < expected ? `its leaf ${leaf} belongs to another record` : `its leaf ${leaf} is past the checkpoint's ${checkpoint.count} records`}`);
    }
    if (leaf > expected) {
      if (!prunable) found("record", "removed", null, removedMessage(checkpoint, expected, leaf, previousName, name));
      pruned = true;
    }
    const digest = checkedDigest(kind, row, where);
    if (!isFinal(kind, row)) found("record", "changed", name, `${recordWord(kind)} ${name} was changed${where}: a covered record is final, and this one is not`);
    const at = finalAt(kind, row);
    if (before !== null && at !== null && at < before.createdAtMs - CHECKPOINT_SKEW_MS) {
      found("record", "inserted", name, `${recordWord(kind)} ${name} was inserted: final at ${new Date(at).toISOString()}, before checkpoint ${before.id} was written, it is covered only by checkpoint ${checkpoint.id}`);
    }
    tree.add(checkpointLeafHash({ kind, id: Number(row.id), digest }));
    expected = leaf + 1;
    previousName = name;
    counts.covered++;
    if (++read % pageSize === 0) options.onProgress?.(counts, checkpoint);
  }
  if (expected < checkpoint.count) {
    if (!prunable) found("record", "removed", null, removedMessage(checkpoint, expected, checkpoint.count, previousName, null));
    pruned = true;
  }
  counts.checkpoints++;
  if (pruned) {
    counts.pruned++;
    return;
  }
  if (toHex(tree.root()) !== checkpoint.root) {
    found("checkpoint", "changed", `checkpoint ${checkpoint.id}`, `checkpoint ${checkpoint.id}'s records do not hash to its root: one of them was changed and its digest recomputed, records changed places, or the root was changed`);
  }
  options.onProgress?.(counts, checkpoint);
}

function removedMessage(checkpoint: WrittenCheckpoint, from: number, to: number, before: string | null, after: string | null): string {
  const leaves = to - from === 1 ? `the record at leaf ${from} was` : `the records at leaves ${from} to ${to - 1} were`;
  const around = [before === null ? null : `after ${before}`, after === null ? null : `before ${after}`].filter((s) => s !== null).join(", ");
  return `${leaves} removed from checkpoint ${checkpoint.id} (of its ${checkpoint.count} records${around === "" ? "" : `; ${around}`})`;
}

function verifyUncovered(kind: RecordKind, row: Row, last: WrittenCheckpoint | null, counts: VerifyCounts): void {
  const name = nameOf(kind, Number(row.id));
  const final = isFinal(kind, row);
  if (row.record_sha256 === null) {
    // Only a record from before digests that was never final has none: covering, confirming or settling gives it one.
    if (final && last !== null) found("record", "inserted", name, `${recordWord(kind)} ${name} was inserted: it is final and has no digest, yet checkpoint ${last.id} did not cover it`);
    counts.withoutDigest++;
    return;
  }
  checkedDigest(kind, row, " (not covered by a checkpoint yet)");
  const at = finalAt(kind, row);
  if (final && last !== null && at !== null && at < last.createdAtMs - CHECKPOINT_SKEW_MS) {
    found("record", "inserted", name, `${recordWord(kind)} ${name} was inserted: final at ${new Date(at).toISOString()}, before checkpoint ${last.id} was written, no checkpoint covers it`);
  }
  counts.uncovered++;
}
