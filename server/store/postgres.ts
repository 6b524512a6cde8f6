import { readFileSync } from "node:fs";
import postgres from "postgres";
import type { PostgresTarget } from "../config/index.ts";
import type { QueueGauges } from "../observability/metrics.ts";
import { CONNECTION_CODE, databaseCode, type DatabaseFailureRecorder, databaseFailureReason } from "./failures.ts";
import { MIGRATION_HEAD, pendingMigrations, RELEASE_CONTRACT } from "./migrations.ts";
import { guardWaitMs, isBatch, isDialectQuestion, type Op, type OpOptions, type Query, remainingMs, type Step } from "./op.ts";
import { type MigrationReport, type SchemaIdentity, type Store, StoreError } from "./store.ts";

/**
 * PostgreSQL through postgres.js (spec "Limits": connect 3 s, pool acquisition 2 s, ordinary statement 3 s; migration lock
 * wait 60 s and 60 s per migration statement). Sessions pin search_path to public. GSS encryption needs no switch: postgres.js
 * never sends a GSSENCRequest (RECIPES 5), and the libpq-only URL parameters were validated by the config and never reach it.
 */
export const CONNECT_TIMEOUT_SECONDS = 3;
export const ACQUIRE_TIMEOUT_MS = 2_000;
export const STATEMENT_TIMEOUT_MS = 3_000;
export const MIGRATION_LOCK_WAIT_MS = 60_000;
export const MIGRATION_STATEMENT_TIMEOUT_MS = 60_000;
/**
 * Past the server's own bound on a statement (statement_timeout, lock_timeout), how long its answer may still take before
 * the store stops waiting: every statement on a reserved connection is bounded by a timer too, since a backend that died
 * or a network that dropped it may never answer at all (issue 17).
 */
export const REPLY_MARGIN_MS = 2_000;
/** The longest postgres.js waits before reconnecting a connection that failed (its default grows to 20 s while a database is down). */
export const RECONNECT_BACKOFF_CAP_SECONDS = 2;
/** pg_advisory_lock key serialising `database migrate` across processes ("cao-migr" as bytes). */
export const MIGRATION_LOCK_KEY = 0x63616f2d6d696772n;

export type Sql = postgres.Sql;

/** Advisory-lock key of an installation's publication guard (shared: check writes; exclusive: authority acceptance). */
export function publicationGuardKey(installationId: number): string {
  // 0x6361 ("ca") in the high bits keeps these keys apart from the migration lock; installation IDs fit the low 48 bits.
  return (0x6361n * 2n ** 48n + BigInt(installationId)).toString();
}

export function connect(target: PostgresTarget, options: { max?: number; applicationName?: string } = {}): Sql {
  const ssl = target.tls
    ? {
        rejectUnauthorized: true,
        ...(target.tls.caFile ? { ca: readFileSync(target.tls.caFile, "utf8") } : {}),
        // With hostaddr the IP is dialled, but the certificate must still name `host`.
        ...(target.hostaddr ? { servername: target.host } : {}),
      }
    : false;
  return postgres({
    ...(target.socket ? { path: `${target.host}/.s.PGSQL.${target.port}` } : { host: target.hostaddr ?? target.host }),
    port: target.port,
    database: target.database,
    username: target.user,
    ...(target.password !== null ? { password: target.password } : {}),
    ssl,
    max: options.max ?? 10,
    connect_timeout: CONNECT_TIMEOUT_SECONDS,
    // postgres.js's own jittered backoff, capped: after a database restart the pool must reconnect within seconds.
    backoff: (retries: number) => (0.5 + Math.random() / 2) * Math.min(3 ** retries / 100, RECONNECT_BACKOFF_CAP_SECONDS),
    idle_timeout: 30,
    max_lifetime: 30 * 60,
    connection: {
      application_name: options.applicationName ?? APPLICATION_NAME,
      search_path: "public",
      statement_timeout: STATEMENT_TIMEOUT_MS,
    },
    onnotice: () => {},
    // int8 columns (IDs, generations, epoch milliseconds) as numbers: every value the service stores is a safe integer.
    types: { int8: { to: 20, from: [20], serialize: (value: unknown) => String(value), parse: (value: string) => Number(value) } },
  });
}

export type StoreOptions = {
  /** How many times an operation aborted by a deadlock or a serialization failure runs again (default DEADLOCK_RETRIES). */
  readonly deadlockRetries?: number;
  /** Told of every operation the store runs again, with why. */
  readonly onRetry?: (reason: RetryReason) => void;
  /** Told of every failed database attempt (metrics and logs: failures.ts). */
  readonly onFailure?: DatabaseFailureRecorder;
};

/** Runs of one operation after a deadlock (40P01) or serialization failure (40001), each after a jittered, doubling pause. */
export const DEADLOCK_RETRIES = 4;
const RETRY_BASE_DELAY_MS = 10;
/** No operation starts again later than this after its first attempt started: a webhook's answer and a job's lease wait on it. */
export const RETRY_WINDOW_MS = 3_000;

export type RetryReason = "deadlock" | "serialization" | "unique";

function retryReason(error: unknown): RetryReason | null {
  const code = (error as { code?: unknown })?.code;
  return code === "40P01" ? "deadlock" : code === "40001" ? "serialization" : code === "23505" ? "unique" : null;
}

/** Connections of the pool lone statements are pipelined on (PostgresStore.statements). */
export const STATEMENT_POOL_CONNECTIONS = 4;
const APPLICATION_NAME = "codeowner-approval";

/** Settles as `work` does, or fails with StoreError("timeout") after `ms`, calling `onTimeout` first (to cancel or discard). */
function withinBound<T>(work: Promise<T>, ms: number, message: string, onTimeout: () => void = () => {}): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new StoreError("timeout", message));
    }, ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

const PAST_DEADLINE = "the database operation did not end by its deadline";

/**
 * A lone statement on the pipelining pool: it waits for no reservation, but may queue behind statements already sent on its
 * connection, so the whole wait is bounded by the acquisition and statement bounds together, and by the operation's
 * deadline; past that it is cancelled.
 */
async function bounded<T>(query: postgres.PendingQuery<postgres.Row[]> & Promise<T>, deadline?: number): Promise<T> {
  const cut = remainingMs(deadline) < ACQUIRE_TIMEOUT_MS + STATEMENT_TIMEOUT_MS;
  try {
    return await withinBound(query, Math.min(ACQUIRE_TIMEOUT_MS + STATEMENT_TIMEOUT_MS, remainingMs(deadline)), cut ? PAST_DEADLINE : "a database statement did not complete within its bounds", () => {
      void Promise.resolve(query.cancel()).catch(() => {});
    });
  } catch (error) {
    throw classify(error);
  }
}

/** postgres.js has no pool-acquisition timeout: race reserve() against a timer and release a connection that arrives late. */
export async function acquire(sql: Sql, timeoutMs = ACQUIRE_TIMEOUT_MS): Promise<postgres.ReservedSql> {
  if (timeoutMs <= 0) throw new StoreError("timeout", PAST_DEADLINE);
  const reservation = sql.reserve();
  try {
    return await withinBound(reservation, timeoutMs, "no database connection became free within 2 seconds", () => {
      reservation.then((connection) => connection.release(), () => {});
    });
  } catch (error) {
    throw classify(error);
  }
}

/**
 * A connection reserved from the pool, every statement on it bounded by a timer: the server's own bound on the statement
 * plus REPLY_MARGIN_MS (issue 17: a backend that died, or a network that dropped it, may never answer). A connection whose
 * backend was lost, whose statement outlived that bound, or that could not clean up after itself (rollback, unlock, reset)
 * is terminated when it ends, never released to the pool: its session state (an open transaction, a held advisory lock, a
 * changed setting) is unknown, and PostgreSQL rolls back and unlocks whatever a session held when the session ends. A
 * statement that failed with an ordinary SQLSTATE leaves the connection sound, and it is released once cleaned up.
 */
export class Reservation {
  private sound = true;
  /** @param deadline when the operation on this connection must have ended (OpOptions): no statement is waited for past it. */
  constructor(readonly sql: postgres.ReservedSql, private readonly deadline?: number) {}

  /**
   * `statement` (or several sent together), failing with StoreError("timeout") once past serverBoundMs + REPLY_MARGIN_MS
   * or past the deadline. Either way the connection is terminated: what it had not committed, PostgreSQL rolls back.
   */
  async run<T>(statement: Promise<T>, serverBoundMs = STATEMENT_TIMEOUT_MS): Promise<T> {
    const left = remainingMs(this.deadline);
    const cut = left < serverBoundMs + REPLY_MARGIN_MS;
    try {
      return await withinBound(statement, cut ? left : serverBoundMs + REPLY_MARGIN_MS, cut ? PAST_DEADLINE : "the database did not answer a statement within its bound", () => this.discard());
    } catch (error) {
      this.failed(error);
      throw error;
    }
  }

  /** A cleanup statement (rollback, unlock, reset): bounded like any other, never throws; if it fails the connection is terminated. */
  async cleanUp(statement: Promise<unknown>): Promise<void> {
    await this.run(statement).catch(() => {
      this.sound = false;
    });
  }

  /** Notes an error met on this connection: a lost connection is never given back. */
  failed(error: unknown): void {
    if (databaseFailureReason(error) === "connection") this.sound = false;
  }

  /** Terminates the connection at once: what is pending on it fails, and it never returns to the pool. */
  discard(): void {
    this.sound = false;
    this.sql.terminate();
  }

  /** Gives a sound connection back to the pool and terminates any other (the patched postgres.js: patches/). */
  end(): void {
    if (this.sound) this.sql.release();
    else this.sql.terminate();
  }
}

/**
 * The server-side bounds of a guard wait of waitMs: lock_timeout ends it (55P03, a guard timeout), and statement_timeout is
 * lifted above it, since the ordinary 3 s statement bound would otherwise end any longer wait first, as a statement timeout
 * (57014) that reads as a database fault (issue 25 item 9). `local`: for the transaction; `session`: until reset.
 */
function guardBounds(waitMs: number, scope: "local" | "session"): string {
  const set = scope === "local" ? "set local" : "set";
  return `${set} lock_timeout = ${waitMs}; ${set} statement_timeout = ${waitMs + STATEMENT_TIMEOUT_MS}`;
}

function guardError(error: unknown): Error {
  if ((error as { code?: string }).code === "55P03") return new StoreError("guard_timeout", "the publication guard was not granted in time");
  return classify(error);
}

/** Turns driver errors into StoreErrors by SQLSTATE / error code, never by message text. */
export function classify(error: unknown): Error {
  if (error instanceof StoreError) return error;
  const code = databaseCode(error);
  if (code === "57014") return new StoreError("timeout", "a database statement exceeded its time bound", code);
  if (code === "55P03") return new StoreError("timeout", "a database lock was not granted within its time bound", code);
  if (code !== null && CONNECTION_CODE.test(code)) return new StoreError("unreachable", "the database cannot be reached", code);
  if (code === "28P01" || code === "28000") return new StoreError("unreachable", "the database refused the credentials", code);
  if (code === "3D000") return new StoreError("unreachable", "the database named in the URL does not exist", code);
  return error instanceof Error ? error : new Error("database error");
}

function textOf(query: Query): string {
  return typeof query.sql === "string" ? query.sql : query.sql.postgresql;
}

function shapeResult(query: Query, result: postgres.RowList<postgres.Row[]>): unknown {
  return query.mode === "one" ? (result[0] ?? null) : query.mode === "all" ? [...result] : result.count;
}

/** postgres.js refuses undefined parameters only when it builds the message; refuse them before anything is sent. */
function assertSendable(query: Query): void {
  if (query.params.some((param) => param === undefined)) throw new Error("a store statement has an undefined parameter");
}

/** A transaction on a reserved connection (postgres.js offers begin() only on the pool, not on a reserved connection). */
export async function inTransaction<T>(connection: Reservation, fn: () => Promise<T>, serverBoundMs = STATEMENT_TIMEOUT_MS): Promise<T> {
  await connection.run(connection.sql.unsafe("begin"), serverBoundMs);
  try {
    const result = await fn();
    await connection.run(connection.sql.unsafe("commit"), serverBoundMs);
    return result;
  } catch (error) {
    await connection.cleanUp(connection.sql.unsafe("rollback"));
    throw error;
  }
}

/** Advisory-lock key of the head publication guard: "ch" in the high bits, 48 bits of a hash of installation, repository and head. */
export function headGuardKey(installationId: number, repositoryId: number, headSha: string): string {
  const digest = new Bun.CryptoHasher("sha256").update(`${installationId}:${repositoryId}:${headSha}`).digest();
  let low = 0n;
  for (let i = 0; i < 6; i++) low = (low << 8n) | BigInt(digest[i]!);
  return (0x6368n * 2n ** 48n + low).toString();
}

export class PostgresStore implements Store {
  readonly backend = "postgresql" as const;
  /**
   * @param sql the pool transactions reserve connections from.
   * @param statements the pool an operation that is one statement runs on, without reserving: postgres.js pipelines
   *   concurrent statements on its connections, so under webhook load several acceptances share one write and one wake-up
   *   of a backend. Separate from `sql` so that pipelined statements never keep a transaction from getting a connection.
   */
  constructor(readonly sql: Sql, private readonly statements: Sql = sql, private readonly storeOptions: StoreOptions = {}) {
    this.deadlockRetries = storeOptions.deadlockRetries ?? DEADLOCK_RETRIES;
  }

  private readonly deadlockRetries: number;

  static open(target: PostgresTarget, options: StoreOptions & { max?: number } = {}): PostgresStore {
    // postgres.js connects lazily: a process that never runs a lone statement never opens the second pool.
    return new PostgresStore(connect(target, options), connect(target, { max: STATEMENT_POOL_CONNECTIONS, applicationName: `${APPLICATION_NAME}/statements` }), options);
  }

  /**
   * Runs `fn` on a connection acquired within the acquisition bound (and by the deadline, if one is given); it ends
   * released, or terminated if it failed (Reservation).
   */
  async withConnection<T>(fn: (connection: Reservation) => Promise<T>, deadline?: number): Promise<T> {
    const connection = new Reservation(await acquire(this.sql, Math.min(ACQUIRE_TIMEOUT_MS, remainingMs(deadline))), deadline);
    try {
      return await fn(connection);
    } catch (error) {
      connection.failed(error);
      throw classify(error);
    } finally {
      connection.end();
    }
  }

  /** Tells the failure recorder of a failed attempt; a guard not granted in time is contention, not a database failure. */
  private reportFailure(error: unknown, retried: boolean): void {
    if (error instanceof StoreError && error.code === "guard_timeout") return;
    this.storeOptions.onFailure?.(error, retried);
  }

  private async reported<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      this.reportFailure(error, false);
      throw error;
    }
  }

  async acquireSharedGuard(installationId: number, timeoutMs: number): Promise<() => Promise<void>> {
    return this.reported(this.holdAdvisoryLocks([{ key: publicationGuardKey(installationId), shared: true }], timeoutMs));
  }

  async acquirePublicationGuards(installationId: number, repositoryId: number, headSha: string, timeoutMs: number): Promise<() => Promise<void>> {
    return this.reported(this.holdAdvisoryLocks(
      [{ key: publicationGuardKey(installationId), shared: true }, { key: headGuardKey(installationId, repositoryId, headSha), shared: false }],
      timeoutMs,
    ));
  }

  /**
   * Session advisory locks taken in order on one reserved connection, all of them waited for within timeoutMs together;
   * resolves to a release that unlocks them in reverse order on the same session before the connection returns to the pool
   * (RECIPES 5). Every statement is bounded (Reservation): a guard connection whose backend died fails its release at once,
   * and ends terminated, which frees whatever its session still held.
   */
  private async holdAdvisoryLocks(locks: readonly { key: string; shared: boolean }[], timeoutMs: number): Promise<() => Promise<void>> {
    const connection = new Reservation(await acquire(this.sql));
    const started = performance.now();
    const sql = connection.sql;
    const held: typeof locks[number][] = [];
    const unlock = async () => {
      for (const lock of held.splice(0).reverse()) {
        await connection.cleanUp(sql.unsafe(`select ${lock.shared ? "pg_advisory_unlock_shared" : "pg_advisory_unlock"}($1::bigint)`, [lock.key]));
      }
    };
    try {
      for (const lock of locks) {
        // What is left of the bound, set together with the lock statement (one round trip): guardBounds.
        const waitMs = Math.max(1, Math.floor(timeoutMs - (performance.now() - started)));
        const [bounds, locked] = await connection.run(
          Promise.allSettled([sql.unsafe(guardBounds(waitMs, "session")), sql.unsafe(`select ${lock.shared ? "pg_advisory_lock_shared" : "pg_advisory_lock"}($1::bigint)`, [lock.key])]),
          waitMs + STATEMENT_TIMEOUT_MS,
        );
        // A lock granted is held (and released below on failure) even if setting its bounds failed.
        if (locked.status === "fulfilled") held.push(lock);
        if (bounds.status === "rejected") throw bounds.reason;
        if (locked.status === "rejected") throw locked.reason;
      }
      await connection.run(sql.unsafe("reset lock_timeout; reset statement_timeout"));
    } catch (error) {
      connection.failed(error);
      await unlock();
      await connection.cleanUp(sql.unsafe("reset lock_timeout; reset statement_timeout"));
      connection.end();
      throw guardError(error);
    }
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await unlock();
      connection.end();
    };
  }

  /** Readiness' database check: one statement on each pool the store uses, each within its bounds; settles when both have. */
  async ping(): Promise<void> {
    const outcomes = await Promise.allSettled([
      this.withConnection((connection) => connection.run(connection.sql`select 1`)),
      this.statements === this.sql ? null : bounded(this.statements`select 1`),
    ]);
    const failed = outcomes.find((outcome) => outcome.status === "rejected");
    if (failed) {
      this.reportFailure(failed.reason, false);
      throw failed.reason;
    }
  }

  /**
   * Runs one operation in one transaction. The exclusive installation guard is a transaction-level advisory lock waited for
   * with a lock_timeout of the given bound (workers take the same key shared around a check write).
   */
  async execute<T>(op: () => Op<T>, options: OpOptions = {}): Promise<T> {
    const started = performance.now();
    let uniqueRetried = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.executeOnce(op, options);
      } catch (error) {
        // Operations are pure database work in one transaction, so one that PostgreSQL aborted changed nothing and may run
        // again. Two transactions racing to insert the same key (a delivery ID accepted twice at once): the loser runs again
        // once and now sees the winner's row. A deadlock or serialization failure (the lock order in store.ts makes them
        // rare, not impossible: the guard, a manual session) runs again a few times, within RETRY_WINDOW_MS of the start.
        const reason = retryReason(error);
        const allowed = reason === "unique" ? !uniqueRetried : reason !== null && attempt <= this.deadlockRetries;
        const retrying = allowed && performance.now() - started <= RETRY_WINDOW_MS && remainingMs(options.deadline) > 0;
        this.reportFailure(error, retrying);
        if (!retrying) throw error;
        if (reason === "unique") uniqueRetried = true;
        this.storeOptions.onRetry?.(reason!);
        if (reason !== "unique") await Bun.sleep(Math.round(RETRY_BASE_DELAY_MS * 2 ** (attempt - 1) * (0.5 + Math.random())));
      }
    }
  }

  private async executeOnce<T>(op: () => Op<T>, options: OpOptions): Promise<T> {
    const steps = op();
    let step = steps.next();
    while (!step.done && isDialectQuestion(step.value)) step = steps.next("postgresql");
    if (step.done) return step.value;
    const first = step.value;
    if (!options.exclusiveGuard && isBatch(first) && first.last && first.batch.length === 1) {
      // The whole operation is one statement: PostgreSQL makes it atomic without BEGIN and COMMIT.
      const query = first.batch[0]!;
      assertSendable(query);
      if (remainingMs(options.deadline) <= 0) throw new StoreError("timeout", PAST_DEADLINE);
      const result = await bounded(this.statements.unsafe(textOf(query), query.params as never[], { prepare: true }), options.deadline);
      const after = steps.next([shapeResult(query, result)]);
      if (!after.done) throw new Error("an operation sent a statement after its last batch");
      return after.value;
    }
    return this.withConnection((connection) => this.runOp(connection, steps, first, options), options.deadline);
  }

  /**
   * One operation, from its first statement on, in one transaction on a reserved connection. BEGIN goes out in the same
   * write as the first statements and COMMIT with a last batch (op.ts). Every write waits at most its statements' bounds.
   */
  private async runOp<T>(connection: Reservation, steps: Op<T>, first: Step, options: OpOptions): Promise<T> {
    const sql = connection.sql;
    let opened = false;
    let ended = false;
    const statement = (query: Query) => sql.unsafe(textOf(query), query.params as never[], { prepare: true });
    try {
      if (options.exclusiveGuard) {
        await connection.run(sql.unsafe("begin"));
        opened = true;
        const waitMs = Math.max(1, Math.floor(guardWaitMs(options.exclusiveGuard.timeoutMs, options.deadline)));
        await connection.run(sql.unsafe(guardBounds(waitMs, "local")));
        try {
          await connection.run(sql.unsafe("select pg_advisory_xact_lock($1::bigint)", [publicationGuardKey(options.exclusiveGuard.installationId)]), waitMs + STATEMENT_TIMEOUT_MS);
        } catch (error) {
          if ((error as { code?: string }).code === "55P03") throw new StoreError("guard_timeout", "the installation publication guard was not granted in time");
          throw error;
        }
        await connection.run(sql.unsafe(`set local lock_timeout = ${ACQUIRE_TIMEOUT_MS}; set local statement_timeout = ${STATEMENT_TIMEOUT_MS}`));
      }
      let step: IteratorResult<Step, T> = { done: false, value: first };
      while (!step.done) {
        const value = step.value;
        if (isDialectQuestion(value)) {
          step = steps.next("postgresql");
          continue;
        }
        const queries = isBatch(value) ? value.batch : [value];
        const last = isBatch(value) && value.last;
        // With a deadline the COMMIT waits until every statement answered in time (OpOptions), and goes alone below.
        const commitsHere = last && options.deadline === undefined;
        // Every statement is checked before any is sent: a statement the driver refused to send would otherwise let a
        // pipelined COMMIT keep the ones around it.
        for (const query of queries) assertSendable(query);
        const opening = opened ? [] : [sql.unsafe("begin")];
        opened = true;
        const sent = [...opening, ...queries.map(statement), ...(commitsHere ? [sql.unsafe("commit")] : [])];
        // The server runs the pipelined statements one after another, each within statement_timeout.
        const settled = await connection.run(Promise.allSettled(sent), STATEMENT_TIMEOUT_MS * sent.length);
        // A COMMIT after a failed statement ends the aborted transaction as a rollback: either way it is over.
        ended = commitsHere;
        const failed = settled.find((outcome) => outcome.status === "rejected");
        if (failed) throw failed.reason;
        const results = queries.map((query, i) => shapeResult(query, (settled[opening.length + i] as PromiseFulfilledResult<postgres.RowList<postgres.Row[]>>).value));
        step = steps.next(isBatch(value) ? results : results[0]);
        if (last && !step.done) throw new Error("an operation sent a statement after its last batch");
      }
      if (opened && !ended) await connection.run(sql.unsafe("commit"));
      ended = true;
      return step.value;
    } catch (error) {
      connection.failed(error);
      if (opened && !ended) await connection.cleanUp(sql.unsafe("rollback"));
      throw error;
    }
  }

  async schemaIdentity(): Promise<SchemaIdentity | null> {
    return this.reported(
      this.withConnection(async (connection) => {
        const sql = connection.sql;
        const [exists] = await connection.run(sql`select to_regclass('public.service_schema') is not null as present`);
        if (!exists?.present) return null;
        const [row] = await connection.run(sql`select migration_head, release_contract from service_schema`);
        if (!row) return null;
        const versions = await connection.run(sql`select version from service_migrations order by version`);
        return { migrationHead: row.migration_head, releaseContract: row.release_contract, appliedVersions: versions.map((v) => Number(v.version)) };
      }),
    );
  }

  async queueGauges(): Promise<QueueGauges> {
    return this.reported(
      this.withConnection(async (connection) => {
        const [row] = await connection.run(connection.sql`
          select (select count(*) from jobs where state in ('pending', 'leased'))::int as queue_depth,
                 (select count(*) from jobs where kind = 'head_invalidation' and state in ('pending', 'leased'))::int as invalidation_depth,
                 (select count(*) from jobs where state = 'dead')::int as dead_jobs`);
        return { queueDepth: row!.queue_depth, sharedHeadInvalidationDepth: row!.invalidation_depth, deadJobs: row!.dead_jobs };
      }),
    );
  }

  /**
   * Applies the embedded migrations not yet applied. A session advisory lock (waited for up to 60 s) serialises concurrent
   * runners; each migration runs in its own transaction with a 60 s statement bound, then the schema identity is recorded.
   */
  async migrate(now: number): Promise<MigrationReport> {
    return this.reported(
      this.withConnection(async (connection) => {
        const sql = connection.sql;
        // The session's statement_timeout is the migration bound here, so every statement may take that long on the server.
        const run = <T>(statement: Promise<T>, serverBoundMs = MIGRATION_STATEMENT_TIMEOUT_MS) => connection.run(statement, serverBoundMs);
        await run(sql.unsafe(`set lock_timeout = ${MIGRATION_LOCK_WAIT_MS}; set statement_timeout = ${MIGRATION_LOCK_WAIT_MS}`));
        try {
          await run(sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`, MIGRATION_LOCK_WAIT_MS);
        } catch (error) {
          await connection.cleanUp(sql.unsafe("reset lock_timeout; reset statement_timeout"));
          throw classify(error);
        }
        try {
          const [exists] = await run(sql`select to_regclass('public.service_migrations') is not null as present`);
          const done = new Map<number, string>();
          if (exists?.present) {
            for (const row of await run(sql`select version, checksum from service_migrations`)) done.set(Number(row.version), row.checksum);
          }
          const applied: string[] = [];
          for (const { migration, sum } of pendingMigrations(done, "postgres")) {
            await inTransaction(connection, async () => {
              await run(sql.unsafe(`set local statement_timeout = ${MIGRATION_STATEMENT_TIMEOUT_MS}`));
              // A simple query of several statements gets statement_timeout per statement: one bound per ';' (at least).
              await run(sql.unsafe(migration.postgres), MIGRATION_STATEMENT_TIMEOUT_MS * migration.postgres.split(";").length);
              await run(sql`insert into service_migrations (version, name, checksum, applied_at_ms) values (${migration.version}, ${migration.name}, ${sum}, ${now})`);
            }, MIGRATION_STATEMENT_TIMEOUT_MS);
            applied.push(migration.name);
          }
          await run(sql`
            insert into service_schema (singleton, migration_head, release_contract, updated_at_ms) values (true, ${MIGRATION_HEAD}, ${RELEASE_CONTRACT}, ${now})
            on conflict (singleton) do update set migration_head = excluded.migration_head, release_contract = excluded.release_contract, updated_at_ms = excluded.updated_at_ms`);
          return { applied, head: MIGRATION_HEAD };
        } finally {
          // Unlock on the same connection before it returns to the pool (RECIPES 5), then restore the ordinary bounds.
          await connection.cleanUp(sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`);
          await connection.cleanUp(sql.unsafe("reset lock_timeout; reset statement_timeout"));
        }
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all([this.sql.end({ timeout: 5 }), this.statements === this.sql ? null : this.statements.end({ timeout: 5 })]);
  }
}
