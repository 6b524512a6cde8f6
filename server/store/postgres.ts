import { readFileSync } from "node:fs";
import postgres from "postgres";
import type { PostgresTarget } from "../config/index.ts";
import type { QueueGauges } from "../observability/metrics.ts";
import { MIGRATION_HEAD, pendingMigrations, RELEASE_CONTRACT } from "./migrations.ts";
import { isBatch, isDialectQuestion, type Op, type OpOptions, type Query, type Step } from "./op.ts";
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

/**
 * A lone statement on the pipelining pool: it waits for no reservation, but may queue behind statements already sent on its
 * connection, so the whole wait is bounded by the acquisition and statement bounds together; past that it is cancelled.
 */
async function bounded<T>(query: postgres.PendingQuery<postgres.Row[]> & Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      query,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          void Promise.resolve(query.cancel()).catch(() => {});
          reject(new StoreError("timeout", "a database statement did not complete within its bounds"));
        }, ACQUIRE_TIMEOUT_MS + STATEMENT_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    throw classify(error);
  } finally {
    clearTimeout(timer);
  }
}

/** postgres.js has no pool-acquisition timeout: race reserve() against a timer and release a connection that arrives late. */
export async function acquire(sql: Sql, timeoutMs = ACQUIRE_TIMEOUT_MS): Promise<postgres.ReservedSql> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const reservation = sql.reserve();
  try {
    return await Promise.race([
      reservation,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new StoreError("timeout", "no database connection became free within 2 seconds"));
        }, timeoutMs);
      }),
    ]);
  } catch (error) {
    if (timedOut) reservation.then((connection) => connection.release(), () => {});
    throw classify(error);
  } finally {
    clearTimeout(timer);
  }
}

function guardError(error: unknown): Error {
  if ((error as { code?: string }).code === "55P03") return new StoreError("guard_timeout", "the publication guard was not granted in time");
  return classify(error);
}

/** Turns driver errors into StoreErrors by SQLSTATE / error code, never by message text. */
export function classify(error: unknown): Error {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === "57014") return new StoreError("timeout", "a database statement exceeded its time bound");
  if (code === "55P03") return new StoreError("timeout", "a database lock was not granted within its time bound");
  if (typeof code === "string" && /^(CONNECT_TIMEOUT|CONNECTION_|ECONNREFUSED|ENOTFOUND|ECONNRESET|EHOSTUNREACH|ETIMEDOUT|57P0|08)/.test(code)) {
    return new StoreError("unreachable", "the database cannot be reached");
  }
  if (code === "28P01" || code === "28000") return new StoreError("unreachable", "the database refused the credentials");
  if (code === "3D000") return new StoreError("unreachable", "the database named in the URL does not exist");
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
export async function inTransaction<T>(sql: postgres.ReservedSql, fn: () => Promise<T>): Promise<T> {
  await sql.unsafe("begin");
  try {
    const result = await fn();
    await sql.unsafe("commit");
    return result;
  } catch (error) {
    await sql.unsafe("rollback").catch(() => {});
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

  /** Runs `fn` on a connection acquired within the acquisition bound. */
  async withConnection<T>(fn: (sql: postgres.ReservedSql) => Promise<T>): Promise<T> {
    const connection = await acquire(this.sql);
    try {
      return await fn(connection);
    } catch (error) {
      throw classify(error);
    } finally {
      connection.release();
    }
  }

  async acquireSharedGuard(installationId: number, timeoutMs: number): Promise<() => Promise<void>> {
    return this.holdAdvisoryLocks([{ key: publicationGuardKey(installationId), shared: true }], timeoutMs);
  }

  async acquirePublicationGuards(installationId: number, repositoryId: number, headSha: string, timeoutMs: number): Promise<() => Promise<void>> {
    return this.holdAdvisoryLocks(
      [{ key: publicationGuardKey(installationId), shared: true }, { key: headGuardKey(installationId, repositoryId, headSha), shared: false }],
      timeoutMs,
    );
  }

  /**
   * Session advisory locks taken in order on one reserved connection, each waited for at most timeoutMs; resolves to a
   * release that unlocks them in reverse order on the same session before the connection returns to the pool (RECIPES 5).
   */
  private async holdAdvisoryLocks(locks: readonly { key: string; shared: boolean }[], timeoutMs: number): Promise<() => Promise<void>> {
    const connection = await acquire(this.sql);
    const held: typeof locks[number][] = [];
    const unlock = async () => {
      for (const lock of held.splice(0).reverse()) {
        await connection.unsafe(`select ${lock.shared ? "pg_advisory_unlock_shared" : "pg_advisory_unlock"}($1::bigint)`, [lock.key]).catch(() => {});
      }
    };
    try {
      await connection.unsafe(`set lock_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      for (const lock of locks) {
        await connection.unsafe(`select ${lock.shared ? "pg_advisory_lock_shared" : "pg_advisory_lock"}($1::bigint)`, [lock.key]);
        held.push(lock);
      }
      await connection.unsafe("reset lock_timeout");
    } catch (error) {
      await unlock();
      await connection.unsafe("reset lock_timeout").catch(() => {});
      connection.release();
      throw guardError(error);
    }
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      await unlock();
      connection.release();
    };
  }

  async ping(): Promise<void> {
    await this.withConnection((sql) => sql`select 1`);
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
        if (!allowed || performance.now() - started > RETRY_WINDOW_MS) throw error;
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
      const result = await bounded(this.statements.unsafe(textOf(query), query.params as never[], { prepare: true }));
      const after = steps.next([shapeResult(query, result)]);
      if (!after.done) throw new Error("an operation sent a statement after its last batch");
      return after.value;
    }
    return this.withConnection((sql) => this.runOp(sql, steps, first, options));
  }

  /**
   * One operation, from its first statement on, in one transaction on a reserved connection. BEGIN goes out in the same
   * write as the first statements and COMMIT with a last batch (op.ts).
   */
  private async runOp<T>(sql: postgres.ReservedSql, steps: Op<T>, first: Step, options: OpOptions): Promise<T> {
    let opened = false;
    let ended = false;
    const statement = (query: Query) => sql.unsafe(textOf(query), query.params as never[], { prepare: true });
    try {
      if (options.exclusiveGuard) {
        await sql.unsafe("begin");
        opened = true;
        await sql.unsafe(`set local lock_timeout = ${Math.max(1, Math.floor(options.exclusiveGuard.timeoutMs))}`);
        try {
          await sql.unsafe("select pg_advisory_xact_lock($1::bigint)", [publicationGuardKey(options.exclusiveGuard.installationId)]);
        } catch (error) {
          if ((error as { code?: string }).code === "55P03") throw new StoreError("guard_timeout", "the installation publication guard was not granted in time");
          throw error;
        }
        await sql.unsafe(`set local lock_timeout = ${ACQUIRE_TIMEOUT_MS}`);
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
        // Every statement is checked before any is sent: a statement the driver refused to send would otherwise let a
        // pipelined COMMIT keep the ones around it.
        for (const query of queries) assertSendable(query);
        const opening = opened ? [] : [sql.unsafe("begin")];
        opened = true;
        const sent = [...opening, ...queries.map(statement), ...(last ? [sql.unsafe("commit")] : [])];
        const settled = await Promise.allSettled(sent);
        // A COMMIT after a failed statement ends the aborted transaction as a rollback: either way it is over.
        ended = last;
        const failed = settled.find((outcome) => outcome.status === "rejected");
        if (failed) throw failed.reason;
        const results = queries.map((query, i) => shapeResult(query, (settled[opening.length + i] as PromiseFulfilledResult<postgres.RowList<postgres.Row[]>>).value));
        step = steps.next(isBatch(value) ? results : results[0]);
        if (last && !step.done) throw new Error("an operation sent a statement after its last batch");
      }
      if (opened && !ended) await sql.unsafe("commit");
      ended = true;
      return step.value;
    } catch (error) {
      if (opened && !ended) await sql.unsafe("rollback").catch(() => {});
      throw error;
    }
  }

  async schemaIdentity(): Promise<SchemaIdentity | null> {
    return this.withConnection(async (sql) => {
      const [exists] = await sql`select to_regclass('public.service_schema') is not null as present`;
      if (!exists?.present) return null;
      const [row] = await sql`select migration_head, release_contract from service_schema`;
      if (!row) return null;
      const versions = await sql`select version from service_migrations order by version`;
      return { migrationHead: row.migration_head, releaseContract: row.release_contract, appliedVersions: versions.map((v) => Number(v.version)) };
    });
  }

  async queueGauges(): Promise<QueueGauges> {
    return this.withConnection(async (sql) => {
      const [row] = await sql`
        select (select count(*) from jobs where state in ('pending', 'leased'))::int as queue_depth,
               (select count(*) from jobs where kind = 'head_invalidation' and state in ('pending', 'leased'))::int as invalidation_depth,
               (select count(*) from jobs where state = 'dead')::int as dead_jobs`;
      return { queueDepth: row!.queue_depth, sharedHeadInvalidationDepth: row!.invalidation_depth, deadJobs: row!.dead_jobs };
    });
  }

  /**
   * Applies the embedded migrations not yet applied. A session advisory lock (waited for up to 60 s) serialises concurrent
   * runners; each migration runs in its own transaction with a 60 s statement bound, then the schema identity is recorded.
   */
  async migrate(now: number): Promise<MigrationReport> {
    return this.withConnection(async (sql) => {
      await sql.unsafe(`set lock_timeout = ${MIGRATION_LOCK_WAIT_MS}; set statement_timeout = ${MIGRATION_LOCK_WAIT_MS}`);
      try {
        await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY.toString()}::bigint)`;
      } catch (error) {
        await sql.unsafe("reset lock_timeout; reset statement_timeout").catch(() => {});
        throw classify(error);
      }
      try {
        const [exists] = await sql`select to_regclass('public.service_migrations') is not null as present`;
        const done = new Map<number, string>();
        if (exists?.present) {
          for (const row of await sql`select version, checksum from service_migrations`) done.set(Number(row.version), row.checksum);
        }
        const applied: string[] = [];
        for (const { migration, sum } of pendingMigrations(done, "postgres")) {
          await inTransaction(sql, async () => {
            await sql.unsafe(`set local statement_timeout = ${MIGRATION_STATEMENT_TIMEOUT_MS}`);
            await sql.unsafe(migration.postgres);
            await sql`insert into service_migrations (version, name, checksum, applied_at_ms) values (${migration.version}, ${migration.name}, ${sum}, ${now})`;
          });
          applied.push(migration.name);
        }
        await sql`
          insert into service_schema (singleton, migration_head, release_contract, updated_at_ms) values (true, ${MIGRATION_HEAD}, ${RELEASE_CONTRACT}, ${now})
          on conflict (singleton) do update set migration_head = excluded.migration_head, release_contract = excluded.release_contract, updated_at_ms = excluded.updated_at_ms`;
        return { applied, head: MIGRATION_HEAD };
      } finally {
        // Unlock on the same connection before it returns to the pool (RECIPES 5), then restore the ordinary bounds.
        await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY.toString()}::bigint)`.catch(() => {});
        await sql.unsafe("reset lock_timeout; reset statement_timeout").catch(() => {});
      }
    });
  }

  async close(): Promise<void> {
    await Promise.all([this.sql.end({ timeout: 5 }), this.statements === this.sql ? null : this.statements.end({ timeout: 5 })]);
  }
}
