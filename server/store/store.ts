import type { QueueGauges } from "../observability/metrics.ts";
import type { Op, OpOptions } from "./op.ts";

/**
 * LOCK ORDER. Every operation that writes rows of several tables takes them in this one order, so that no two operations
 * can wait for each other in a cycle (PostgreSQL answers such a cycle with 40P01, and a webhook that gets it is lost):
 *
 *   0. advisory locks: the installation publication guard (exclusive for authority acceptance, as the transaction's first
 *      statement; shared for check writes, on a connection of its own), then the head publication guard (DESIGN 4). A
 *      worker holding the guards only reads fences, inserts audit rows, writes `head_checks` rows (7) and records a check
 *      creation on its head's `head_generations` row (3; one statement alone), which no transaction holds while it waits
 *      for a guard (authority acceptance takes its exclusive guard first), so it never waits long for a row while holding one;
 *   1. `leases`: the reconciler's election row (its writes renew it first);
 *   2. `installation_epochs` (A), by installation;
 *   3. `head_generations` (S, I), by repository and head; its `reset_at_ms` (migration 0010, the head's last reset of its
 *      managed check, which a merge's judgement reads) is written by the statements that advance I (the fast path's
 *      markHeadInvalidated, the invalidation's finish: no statement added), by a fan-out's supersession before its other
 *      rows (head by head, in head order), and by the worker's in-progress write on a shared head under the guards, one
 *      statement alone with the head's `head_checks` digest after it (markGuardedReset, as recordCheckCreation: no
 *      transaction holding the row waits for a guard);
 *   4. `pull_generations` (E), by repository and pull request number;
 *  4a. `open_pull_requests` (the open-pull-request index, DESIGN 3.9), by repository and pull request number: written by an
 *      acceptance from its pull request's E row (ops/ingress-ops.ts), and by the reconciler's listing pages and pruning
 *      after renewing its lease (1), each alone in its transaction (ops/open-pull-index.ts); its readers (the shared-head
 *      check, fan-out, base-ref work's readPullsOnBase) read it in transactions of their own and queue in the next, and
 *      read only open rows. A `closed` acceptance upserts the row as a tombstone (closed, listing_id null, seen then; DESIGN
 *      3.12) instead of deleting it: a listing page and a closing that race meet on that one row's key, and the page's
 *      upsert, re-checking the row as committed, leaves a tombstone newer than its listing's start alone, so a page fetched
 *      before the closing never brings the pull request back. Tombstones go with the index: a later complete listing that
 *      does not see them, or pruning by seen_hour;
 *  4b. `merge_groups` (migration 0012), by repository and group head: written by a `merge_group` acceptance after its group
 *      head's `head_generations` row (3) and before its work row (5), by an evaluation that queues the groups holding its
 *      pull request again (3, 4b, 5 per group, in group-head order), and by the merge-group worker alone, outside the
 *      publication guards (its judgement, then 4c; clearing its reset flag) (ops/merge-group-ops.ts);
 *  4c. `merge_group_members`, by repository, group head and pull request number: written after their group's row (4b) by
 *      the worker's judgement and deleted by a `destroyed` acceptance; the evaluation's requeue only reads them;
 *   5. `jobs`, by kind in claim order (exact-head invalidation, installation-wide, repository-wide, base-specific,
 *      evaluation and merge group), then by key (head, repository, base ref, pull request number, group head);
 *   6. `pull_evaluations`, by repository and pull request number: what the last decided evaluation saw (ops/published-ops.ts);
 *   7. `head_checks`, by repository and head: the managed check's ID and published digest. Mostly written by one-statement
 *      operations alone (the worker writes `head_checks` while it holds the publication guards: no transaction holding
 *      one of its rows ever awaits a guard); the head invalidation and the repository-wide fan-out clear digests after their
 *      work rows (5), and the reconciler's pruning renews its lease (1) and then takes 6 before 7;
 *  7a. `decision_records`, by repository and head (DESIGN 3.10): written only together with their head's `head_checks` row
 *      (7), by the worker under the head's publication guards, in the same statement (PostgreSQL) or batch (SQLite) as the
 *      pending token and the settled digest (ops/record-ops.ts), and deleted by the reconciler's pruning alone after its
 *      lease (1); the acceptance of a merge and the reconciler's recovery only read them (and the head's `reset_at_ms`, 3);
 *      a merge group's record is written last in the merge-group worker's judgement (after 4b and 4c), outside the guards,
 *      with the `merge_group_verified` rows naming what it verified (migration 0013), then the links of merge records (8).
 *      The reconciler's checkpoint (ops/checkpoint-ops.ts), after its lease (1), gives confirmed rows their checkpoint and
 *      leaf (then settled merge records, 8, then its `history_checkpoints` row, 9): rows no other writer changes again but
 *      for a merge record's link to its group record, which its digest does not cover;
 *   8. `webhook_deliveries`, `audit_events` and `merge_records`: rows of one acceptance or one job alone (a merge record is
 *      written last in its `closed` delivery's acceptance, or by the reconciler's recovery after its lease, and its enrollment
 *      settled once by one statement alone, by the worker or the reconciler: settleMergeEnrollment, ops/record-ops.ts). No two different operations lock
 *      the same delivery row (only the acceptance of that delivery, or the reconciler's pruning of expired ones), so where
 *      it is written does not close a cycle: the step forms retain it first, the PostgreSQL one-statement acceptance last;
 *   9. `history_checkpoints`: inserted only by the reconciler's checkpoint, last in its transaction.
 *
 * Reads take no row locks and may come anywhere. Work-row batches are built in this order by advanceAndQueue
 * (ops/work-rows.ts); a PostgreSQL one-statement form makes each part read the part before it, since PostgreSQL runs the
 * parts of a statement in no documented order. On top of the order, PostgresStore.execute runs an operation again after a
 * deadlock or serialization failure a bounded number of times (DEADLOCK_RETRIES within RETRY_WINDOW_MS), and once after a
 * unique violation (two copies of one delivery accepted at once); server/store/lock-order.test.ts drives the operations
 * concurrently with that retry off and reads PostgreSQL's deadlock counter. SQLite runs one transaction at a time.
 */

/**
 * The database seam. Each operation is one whole unit of work (one synchronous db.transaction on SQLite, one sql.begin on
 * PostgreSQL); no async callback crosses it, because bun:sqlite transactions cannot await (RECIPES 6).
 */
export interface Store {
  readonly backend: "postgresql" | "sqlite";
  /** A trivial query within the ordinary statement bound: readiness' `database` field. */
  ping(): Promise<void>;
  /** The recorded migration head and release contract, or null when the database has never been migrated. */
  schemaIdentity(): Promise<SchemaIdentity | null>;
  /**
   * Runs one whole operation (server/store/ops) in one transaction, under the exclusive installation guard when asked, and
   * ended by its deadline when given one (OpOptions: cut short, it commits nothing).
   */
  execute<T>(op: () => Op<T>, options?: OpOptions): Promise<T>;
  /**
   * Takes the installation publication guard shared (a check write in flight), waiting at most timeoutMs; resolves to its
   * release. Authority acceptance takes the same guard exclusively (OpOptions.exclusiveGuard), so it waits for the write.
   */
  acquireSharedGuard(installationId: number, timeoutMs: number): Promise<() => Promise<void>>;
  /**
   * The publication guards around a final check write, always in this order: the installation guard shared, then the head
   * publication guard exclusive (per installation and head). Resolves to the release of both, or rejects on timeout.
   */
  acquirePublicationGuards(installationId: number, repositoryId: number, headSha: string, timeoutMs: number): Promise<() => Promise<void>>;
  /** Depth gauges for /metrics, read at scrape time. */
  queueGauges(): Promise<QueueGauges>;
  close(): Promise<void>;
}

export type SchemaIdentity = { readonly migrationHead: string; readonly releaseContract: string; readonly appliedVersions: readonly number[] };

export type MigrationReport = { readonly applied: readonly string[]; readonly head: string };

/** A database that cannot be used by this binary: unmigrated, another head, another contract, or unreachable. */
export class StoreError extends Error {
  override readonly name = "StoreError";
  constructor(
    /** guard_timeout: an installation or head publication guard was not granted within its bound (not a database fault). */
    readonly code: "unreachable" | "unmigrated" | "incompatible" | "missing_file" | "migration_failed" | "timeout" | "guard_timeout",
    message: string,
    /** The SQLSTATE or driver code of the database error this one was classified from, if any (logged; never a message). */
    readonly databaseCode: string | null = null,
  ) {
    super(message);
  }
}
