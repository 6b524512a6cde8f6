import { type DecisionRecordBody, encodeRecordBody } from "../../records/codec.ts";
import { all, batch, type Dialect, dialect, lone, one, type Op, type Query, query, run } from "../op.ts";
import { BEGIN_CHECK_WRITE_SQL, REMEMBER_HEAD_CHECK_SQL, rememberHeadCheckParams, SETTLE_CHECK_DIGEST_SQL } from "./published-ops.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";
import { digestStatement, recordDigestSql, storedRecordDigestSql } from "./record-digest.ts";

/**
 * The write side of decision records and merge records (DESIGN 3.10, issue 28; migration 0008). The readers are
 * ops/history-ops.ts.
 *
 * A decision record is written before the completing check write, carrying that write's pending token, by the same
 * statement that puts the token in `head_checks` (beginCheckWrite's, or rememberHeadCheck's when the check is found or
 * created under the guards), and confirmed after the write by the statement that settles the digest: recording adds no
 * statement to the publication path on PostgreSQL, where the worker holding the publication guards sends only lone statements
 * (op.ts `lone`: both writes are one statement of data-modifying CTEs). SQLite runs the same two writes as one batch in its one
 * transaction. `decision_records` comes right after `head_checks` in the store's lock order (store.ts, 7a): its rows are
 * written only with their head's `head_checks` row, under that head's publication guard, or by the reconciler's pruning alone.
 *
 * The unique key (repository, head, shared generation, digest) keeps a republication of the same result on the same head and
 * generation from writing a second record. A record still unconfirmed (its write failed or was uncertain) adopts the next
 * attempt's token and body, so the attempt that does reach the forge confirms it; a confirmed record is never touched again.
 * It keeps its first `published_at_ms` (the readers show that time as the record's `published_at`, whatever the adopted body
 * says): the history is ordered and paged by it, and a record that moved on a retry would be seen twice, or skipped, by a
 * client or export paging past it. When the write did land is `confirmed_at_ms`.
 */

/** A decision record about to be written: the body, and the publication facts that key it. */
export type PendingDecision = {
  readonly body: DecisionRecordBody;
  /** The head's shared generation S the result was computed at. */
  readonly sharedGeneration: number;
  /** The check digest of the result (ingress checkDigest). */
  readonly digest: string;
  /** The publication's pending token (null: a record written outside a publication, e.g. a test's seed). */
  readonly token: string | null;
};

/** The `head_checks` write the record is folded into (see above). The repository and head are the record's. */
export type PendingCheckWrite =
  | { readonly kind: "begin"; readonly now: number }
  | { readonly kind: "remember"; readonly checkRunId: number; readonly now: number };

/**
 * Which parameter of the insert below carries each column (confirmed_at_ms: none, a new record is unconfirmed); those of
 * the integer columns (not bigint) are cast to it: PostgreSQL gives a parameter one type.
 */
const INSERT_DECISION_VALUES: Readonly<Record<string, string>> = {
  installation_id: "$1", repository_id: "$2", repository_full_name: "$3", pull_number: "CAST($4 AS integer)", head_sha: "$5", shared_generation: "$6", digest: "$7",
  conclusion: "$9", break_glass: "$10", published_at_ms: "$11", confirmed_at_ms: "null", body_bytes: "CAST($12 AS integer)", body: "$13",
};
/** What an adoption (below) takes from the new attempt; the rest of the record stays. */
const ADOPTED = ["pull_number", "conclusion", "break_glass", "body_bytes", "body"];

/**
 * The decision record's insert, with its digest (record_sha256, ops/record-digest.ts) computed by the same statement from the
 * values it writes, and recomputed by an adoption from the record as it becomes.
 */
function insertDecisionSql(dialect: Dialect): string {
  return digestStatement(`insert-decision:${dialect}`, () => buildInsertDecisionSql(dialect));
}

function buildInsertDecisionSql(dialect: Dialect): string {
  const adopted = Object.fromEntries(ADOPTED.map((column) => [column, `excluded.${column}`]));
  return `insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest,
       pending_token, conclusion, break_glass, published_at_ms, confirmed_at_ms, body_bytes, body, record_sha256)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, null, $12, $13, ${recordDigestSql("decision", dialect, (column) => INSERT_DECISION_VALUES[column]!)})
     on conflict (repository_id, head_sha, shared_generation, digest) do update set pending_token = excluded.pending_token,
       ${ADOPTED.map((column) => `${column} = excluded.${column}`).join(", ")},
       record_sha256 = ${storedRecordDigestSql("decision", dialect, "decision_records", adopted)}
     where decision_records.confirmed_at_ms is null`;
}
const INSERT_DECISION_PARAMS = 13;

function decisionParams(record: PendingDecision): unknown[] {
  const { body } = record;
  const encoded = encodeRecordBody(body);
  const publishedAtMs = Date.parse(body.published_at);
  if (!Number.isFinite(publishedAtMs)) throw new RangeError("recordPendingDecision: published_at is not a time");
  const breakGlass = body.break_glass !== null;
  return [
    body.installation_id, body.repository.id, body.repository.full_name, body.pull_request, body.head_sha, record.sharedGeneration, record.digest,
    record.token, body.conclusion, breakGlass, publishedAtMs, encoded.size,
    // postgres.js sends a Buffer as bytea; bun:sqlite binds it as a BLOB.
    Buffer.from(encoded.bytes.buffer, encoded.bytes.byteOffset, encoded.bytes.byteLength),
  ];
}

/** `$n` becomes `$(n + by)`, so that two statements' texts can be one statement's parts. */
function shifted(sql: string, by: number): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);
}

function checkWriteOf(record: PendingDecision, write: PendingCheckWrite): { readonly sql: string; readonly params: unknown[] } {
  const { body } = record;
  if (record.token === null) throw new Error("recordPendingDecision: a record folded into a check write needs its pending token");
  if (write.kind === "begin") return { sql: BEGIN_CHECK_WRITE_SQL, params: [body.repository.id, body.head_sha, record.token, write.now] };
  return {
    sql: REMEMBER_HEAD_CHECK_SQL,
    params: rememberHeadCheckParams({ installationId: body.installation_id, repositoryId: body.repository.id, headSha: body.head_sha, checkRunId: write.checkRunId, digest: record.token, now: write.now }),
  };
}

/**
 * Writes the decision record (unconfirmed), and with `alongside` the head's pending token in the same statement (PostgreSQL)
 * or batch (SQLite). One statement sent alone on PostgreSQL: runnable under the publication guards.
 */
export function* recordPendingDecision(record: PendingDecision, alongside?: PendingCheckWrite): Op<void> {
  const which = yield* dialect();
  const insert = insertDecisionSql(which);
  const params = decisionParams(record);
  if (alongside === undefined) {
    yield* lone(run(insert, ...params));
    return;
  }
  const check = checkWriteOf(record, alongside);
  if (which === "sqlite") {
    yield* batch([query("run", insert, ...params), query("run", check.sql, ...check.params)], { last: true });
    return;
  }
  yield* lone(run(`with record as (${insert}) ${shifted(check.sql, INSERT_DECISION_PARAMS)}`, ...params, ...check.params));
}

/** The confirmation of the record carrying a token: `$now` is its time's parameter; the digest is recomputed with it. */
function confirmDecisionSql(dialect: Dialect, now: string): string {
  return digestStatement(`confirm-decision:${dialect}:${now}`, () => `update decision_records set confirmed_at_ms = ${now}, record_sha256 = ${storedRecordDigestSql("decision", dialect, "decision_records", { confirmed_at_ms: now })}
     where repository_id = $1 and head_sha = $2 and pending_token = $3 and confirmed_at_ms is null`);
}

/**
 * After a completing write that reached the forge: confirms the record that carries its token, and with `settle` settles the
 * head's digest in the same statement (PostgreSQL) or batch (SQLite), as settleCheckDigest does. Answers whether the digest
 * was settled (with `settle`), or whether a record was confirmed (without).
 */
export function* confirmDecision(input: {
  readonly repositoryId: number;
  readonly headSha: string;
  readonly token: string;
  readonly now: number;
  readonly settle?: { readonly digest: string; readonly generation: number };
}): Op<boolean> {
  const which = yield* dialect();
  const confirm = [input.repositoryId, input.headSha, input.token, input.now];
  if (input.settle === undefined) return (yield* lone(run(confirmDecisionSql(which, "$4"), ...confirm))) > 0;
  const settle = [input.repositoryId, input.headSha, input.token, input.settle.digest, input.settle.generation, input.now];
  if (which === "sqlite") {
    const [, settled] = yield* batch([query("run", confirmDecisionSql(which, "$4"), ...confirm), query("run", SETTLE_CHECK_DIGEST_SQL, ...settle)], { last: true });
    return (settled as number) > 0;
  }
  // The settle's parameters are the confirmation's first three, then its own: one parameter list for both parts.
  const sql = `with confirmed as (${confirmDecisionSql(which, "$6")}) ${SETTLE_CHECK_DIGEST_SQL}`;
  return (yield* lone(run(sql, ...settle))) > 0;
}

/** A merged pull request, from its `closed` delivery or the reconciler's listing of recently closed pull requests. */
export type MergeInput = {
  readonly installationId: number;
  readonly repositoryId: number;
  readonly repositoryFullName: string;
  readonly pullNumber: number;
  /** The head at merge. */
  readonly headSha: string;
  readonly mergeCommitSha: string | null;
  /** The base commit it merged onto: enrollment is read there (settleMergeEnrollment); null when the forge did not say. */
  readonly baseSha: string | null;
  readonly mergedBy: { readonly id: number; readonly login: string } | null;
  readonly mergedAtMs: number | null;
  /** Found by the reconciler (its `closed` delivery was missed). */
  readonly recovered: boolean;
  readonly now: number;
};

/** A merge record just written: its ID and whether it is an unapproved merge. Null from recordMerge: it was recorded already. */
export type RecordedMerge = { readonly id: number; readonly pullNumber: number; readonly headSha: string; readonly unapproved: boolean };

/**
 * The merge record's insert as one statement, for an acceptance to send in its own batch (ops/ingress-ops.ts). It names the
 * newest decision record of the pull request on the head at merge; the merge is unapproved unless that record is a confirmed
 * `success` (an unconfirmed one may never have reached the forge, so it approved nothing anyone could see) that no reset of
 * the head's check followed (head_generations.reset_at_ms, migration 0010: the check is judged as the service last wrote it,
 * and a reset to in_progress withdrew that success; the merge record keeps the reset's time); a recovered merge only by the
 * records published before its merge time, but by any reset after that record: a later reset may hide an earlier one, so it
 * fails closed. Clocks: the reset's time and the record's are the service's own, and the next success after a reset is
 * published only once the reset is written (the fences), so it is never older than the reset. A merge through the merge
 * queue also names the newest merge-group record that verified the pull request at that head (merge_group_id, from
 * merge_group_verified, migration 0013; a group record written after the merge links it then): evidence, not approval. Writes nothing
 * when the merge is recorded already (redelivery, or the reconciler and the delivery both saw it): then it answers no row.
 * CAST rather than `::`: both dialects read it.
 */
export function mergeRecordQuery(input: MergeInput): Query {
  return query(
    "one",
    { postgresql: mergeInsertSql("postgresql"), sqlite: mergeInsertSql("sqlite") },
    input.installationId, input.repositoryId, input.repositoryFullName, input.pullNumber, input.headSha, input.mergeCommitSha,
    input.mergedBy?.id ?? null, input.mergedBy?.login ?? null, input.mergedAtMs, input.recovered, input.now,
    // A recovered merge is judged by the records published before it (give or take the clocks' skew): a closed pull request
    // is evaluated again after its merge, and that later record must not decide whether the merge was approved.
    input.recovered && input.mergedAtMs !== null ? input.mergedAtMs + MERGE_CLOCK_SKEW_MS : null,
    input.baseSha,
  );
}

/**
 * The columns mergeRecordQuery writes, in order; its digest covers them (and enrollment and settled_at_ms, null until
 * settled) except merge_group_id: a link to the merge-group record that verified the pull request, which a group record
 * written after the merge sets later (possibly after a checkpoint covered the merge). It is evidence, not approval (the
 * verdict is `unapproved`), and the group record it names is covered by its own digest.
 */
const MERGE_COLUMNS = [
  "installation_id", "repository_id", "repository_full_name", "pull_number", "head_sha", "merge_commit_sha", "merged_by_id", "merged_by_login",
  "merged_at_ms", "decision_id", "decision_conclusion", "unapproved", "break_glass", "recovered", "recorded_at_ms", "reset_at_ms", "base_sha", "merge_group_id",
];

function mergeInsertSql(dialect: Dialect): string {
  return digestStatement(`insert-merge:${dialect}`, () => buildMergeInsertSql(dialect));
}

function buildMergeInsertSql(dialect: Dialect): string {
  const digest = storedRecordDigestSql("merge", dialect, "v", { enrollment: "null", settled_at_ms: "null" });
  return `insert into merge_records (${MERGE_COLUMNS.join(", ")}, record_sha256)
     select ${MERGE_COLUMNS.map((column) => `v.${column}`).join(", ")}, ${digest} from (
       select CAST($1 AS bigint) as installation_id, CAST($2 AS bigint) as repository_id, CAST($3 AS text) as repository_full_name, CAST($4 AS integer) as pull_number,
         CAST($5 AS text) as head_sha, CAST($6 AS text) as merge_commit_sha, CAST($7 AS bigint) as merged_by_id, CAST($8 AS text) as merged_by_login,
         CAST($9 AS bigint) as merged_at_ms, d.id as decision_id, d.conclusion as decision_conclusion,
         not coalesce(d.conclusion = 'success' and d.confirmed_at_ms is not null and (g.reset_at_ms is null or g.reset_at_ms <= d.published_at_ms), false) as unapproved,
         coalesce(d.break_glass, false) as break_glass, CAST($10 AS boolean) as recovered, CAST($11 AS bigint) as recorded_at_ms,
         case when d.conclusion = 'success' and d.confirmed_at_ms is not null and g.reset_at_ms > d.published_at_ms then g.reset_at_ms else null end as reset_at_ms,
         CAST($13 AS text) as base_sha,
         (select max(mv.record_id) from merge_group_verified mv where mv.repository_id = $2 and mv.pull_number = $4 and mv.head_sha = $5) as merge_group_id
       from (select 1 as here) one left join (
         select id, conclusion, confirmed_at_ms, break_glass, published_at_ms from decision_records
         where repository_id = $2 and head_sha = $5 and pull_number = $4 and (CAST($12 AS bigint) is null or published_at_ms <= CAST($12 AS bigint)) order by id desc limit 1
       ) d on 1 = 1
       left join head_generations g on g.repository_id = $2 and g.head_sha = $5
     ) v
     where true
     on conflict (repository_id, pull_number, head_sha) do nothing
     returning id, pull_number, head_sha, unapproved`;
}

/** How far the forge's merge time and this service's record times may disagree (a recovered merge's judgement allows it). */
export const MERGE_CLOCK_SKEW_MS = 60_000;

/** What mergeRecordQuery's result row says (null: recorded already). */
export function recordedMergeOf(row: unknown): RecordedMerge | null {
  if (row === null || row === undefined) return null;
  const { id, pull_number, head_sha, unapproved } = row as { id: number | string | bigint; pull_number: number; head_sha: string; unapproved: boolean | number };
  return { id: Number(id), pullNumber: Number(pull_number), headSha: head_sha, unapproved: unapproved === true || Number(unapproved) === 1 };
}

/** Writes a merge record alone (the reconciler's recovery, tests); null when the merge was recorded already. */
export function* recordMerge(input: MergeInput): Op<RecordedMerge | null> {
  const [row] = yield* batch([mergeRecordQuery(input)], { last: true });
  return recordedMergeOf(row);
}

/**
 * The reconciler's recovery of merges: writes the records of these merges, fenced by its lease (renewed first, store.ts 1).
 * Answers the records written (merges recorded already are left out), or null when the lease was lost.
 */
export function* recordRecoveredMerges(lease: ElectionLease, merges: readonly MergeInput[], now: number): Op<RecordedMerge[] | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  if (merges.length === 0) return [];
  const rows = yield* batch(merges.map(mergeRecordQuery), { last: true });
  return rows.map(recordedMergeOf).filter((merge): merge is RecordedMerge => merge !== null);
}

/** A merge whose enrollment (is the service enabled at its base commit?) is not read yet (migration 0010). */
export type MergeAwaitingEnrollment = {
  readonly id: number;
  readonly installationId: number;
  readonly repositoryId: number;
  readonly repositoryFullName: string;
  readonly pullNumber: number;
  readonly headSha: string;
  readonly baseSha: string | null;
  readonly recovered: boolean;
};

/** Merges read per settling pass (the worker's for one pull request, the reconciler's per attempt). */
export const ENROLLMENT_BATCH = 100;

/**
 * The merges whose enrollment is not read yet, oldest first: those of one pull request (the worker's evaluation of it), or
 * all (the reconciler). A read through the partial index of pending rows: no row lock.
 */
export function* readMergesAwaitingEnrollment(of: { readonly repositoryId: number; readonly pullNumber: number } | null, limit: number = ENROLLMENT_BATCH): Op<MergeAwaitingEnrollment[]> {
  const columns = "select id, installation_id, repository_id, repository_full_name, pull_number, head_sha, base_sha, recovered from merge_records where enrollment is null";
  const rows = of === null
    ? yield* all<Record<string, unknown>>(`${columns} order by id limit $1`, limit)
    : yield* all<Record<string, unknown>>(`${columns} and repository_id = $1 and pull_number = $2 order by id limit $3`, of.repositoryId, of.pullNumber, limit);
  return rows.map((row) => ({
    id: Number(row.id), installationId: Number(row.installation_id), repositoryId: Number(row.repository_id), repositoryFullName: String(row.repository_full_name),
    pullNumber: Number(row.pull_number), headSha: String(row.head_sha), baseSha: row.base_sha === null ? null : String(row.base_sha), recovered: row.recovered === true || Number(row.recovered) === 1,
  }));
}

/**
 * Settles a merge's enrollment once (the first settle wins; a merge settled already answers null). A `not_enrolled` merge is
 * never unapproved: the service was not enabled where it merged. Answers whether the settled merge is unapproved (the caller
 * reports it: only an enrolled merge is counted). One statement alone (merge_records, the store's lock order 8), which also
 * keeps when the merge was settled and its digest as it becomes (final: a checkpoint may cover it from then on).
 */
export function* settleMergeEnrollment(id: number, enrollment: "enrolled" | "not_enrolled", now: number): Op<{ readonly unapproved: boolean } | null> {
  const which = yield* dialect();
  const sql = digestStatement(`settle-merge:${which}`, () => {
    const unapproved = "case when CAST($2 AS text) = 'not_enrolled' then false else merge_records.unapproved end";
    const digest = storedRecordDigestSql("merge", which, "merge_records", { enrollment: "CAST($2 AS text)", unapproved, settled_at_ms: "CAST($3 AS bigint)" });
    return `update merge_records set enrollment = CAST($2 AS text), unapproved = ${unapproved}, settled_at_ms = CAST($3 AS bigint), record_sha256 = ${digest}
     where id = $1 and enrollment is null returning unapproved`;
  });
  const row = yield* lone(one<{ unapproved: unknown }>(sql, id, enrollment, now));
  return row === null ? null : { unapproved: row.unapproved === true || Number(row.unapproved) === 1 };
}

/** Rows removed per table per pruning transaction (as PUBLISHED_PRUNE_BATCH). */
export const HISTORY_PRUNE_BATCH = 1_000;

/**
 * Removes, fenced by the reconciler lease, up to `batch` decision records and up to `batch` merge records past the retention
 * (SERVICE_DECISION_RETENTION_DAYS): those a checkpoint written before `cutoffMs` covers, whole checkpoints oldest first, and
 * those no checkpoint covers that were published (recorded) before it. A covered record goes with its checkpoint, never
 * alone, so `service history verify` finds every checkpoint younger than the retention whole (ops/checkpoint-ops.ts); the
 * checkpoint rows themselves are kept. A merge record outliving its decision keeps the decision's conclusion. Returns the
 * number removed, or null when the lease was lost.
 */
export function* pruneHistory(lease: ElectionLease, cutoffMs: number, now: number, batchSize: number = HISTORY_PRUNE_BATCH): Op<number | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  const horizon = yield* one<{ id: unknown }>("select max(id) as id from history_checkpoints where created_at_ms < $1", cutoffMs);
  const covered = horizon?.id === null || horizon?.id === undefined ? null : Number(horizon.id);
  let removed = 0;
  for (const [table, time] of [["decision_records", "published_at_ms"], ["merge_records", "recorded_at_ms"]] as const) {
    const left = covered === null ? batchSize : batchSize - (yield* run(
      `delete from ${table} where id in (select id from ${table} where checkpoint_id <= $1 order by checkpoint_id, checkpoint_leaf limit $2)`, covered, batchSize,
    ));
    removed += batchSize - left;
    if (left > 0) removed += yield* run(`delete from ${table} where id in (select id from ${table} where checkpoint_id is null and ${time} < $1 order by id limit $2)`, cutoffMs, left);
  }
  // What the merge groups removed verified goes with them (a link from a kept merge record then names a pruned record).
  if (removed > 0) yield* run("delete from merge_group_verified where record_id in (select v.record_id from merge_group_verified v where not exists (select 1 from decision_records d where d.id = v.record_id) limit $1)", batchSize * 100);
  // The signed statement of a pruned merge goes with it.
  if (removed > 0) yield* run("delete from merge_attestations where merge_id in (select a.merge_id from merge_attestations a where not exists (select 1 from merge_records m where m.id = a.merge_id) limit $1)", batchSize);
  return removed;
}

/**
 * When this database began keeping decision records (migration 0008 applied), epoch milliseconds; null when unknown. The
 * reconciler recovers no merge from before it: no record could have approved it, and calling it unapproved would be noise.
 */
export function* readHistoryStart(): Op<number | null> {
  const row = yield* one<{ applied_at_ms: number | string }>("select applied_at_ms from service_migrations where version = 8");
  return row === null ? null : Number(row.applied_at_ms);
}
