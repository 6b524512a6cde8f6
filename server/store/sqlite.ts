import { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import type { QueueGauges } from "../observability/metrics.ts";
import { sha256Hex } from "../records/tamper-evidence.ts";
import { MIGRATION_HEAD, pendingMigrations, RELEASE_CONTRACT } from "./migrations.ts";
import { guardWaitMs, isBatch, isDialectQuestion, type Op, type OpOptions, type Query, remainingMs, type Step } from "./op.ts";
import { RwLock } from "./rw-lock.ts";
import { type MigrationReport, type SchemaIdentity, type Store, StoreError } from "./store.ts";

/**
 * The embedded development database (bun:sqlite): single process only. Opening for `serve` never creates the file or changes
 * schema; `migrate` creates it, switches it to WAL and applies the embedded migrations under BEGIN IMMEDIATE (SQLite's
 * database-wide write lock plays the advisory lock's role, waiting up to the migration lock bound).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 3_000;
export const SQLITE_MIGRATION_LOCK_WAIT_MS = 60_000;

export class SqliteStore implements Store {
  readonly backend = "sqlite" as const;
  /** The installation publication guard of this process (DESIGN 4: an in-process read/write lock for SQLite). */
  readonly guard = new RwLock();
  private statements = new Map<string, ReturnType<Database["query"]>>();
  private constructor(readonly db: Database) {}

  /**
   * Runs one operation in one synchronous write transaction, under the exclusive guard when asked. A deadline bounds the
   * guard wait and refuses to start past it; the transaction itself cannot be cut (bun:sqlite runs it synchronously, and
   * only this process writes).
   */
  async execute<T>(op: () => Op<T>, options: OpOptions = {}): Promise<T> {
    if (remainingMs(options.deadline) <= 0) throw new StoreError("timeout", "the database operation did not end by its deadline");
    const release = options.exclusiveGuard
      ? await this.guard.acquireExclusive(String(options.exclusiveGuard.installationId), guardWaitMs(options.exclusiveGuard.timeoutMs, options.deadline))
      : null;
    try {
      return this.db.transaction(() => {
        const steps = op();
        let step = steps.next();
        while (!step.done) {
          const last = isBatch(step.value) && step.value.last;
          step = steps.next(this.step(step.value));
          if (last && !step.done) throw new Error("an operation sent a statement after its last batch");
        }
        return step.value;
      }).immediate();
    } finally {
      release?.();
    }
  }

  async acquireSharedGuard(installationId: number, timeoutMs: number): Promise<() => Promise<void>> {
    const release = await this.guard.acquireShared(String(installationId), timeoutMs);
    return async () => release();
  }

  /** Both guards within timeoutMs together, as on PostgreSQL. */
  async acquirePublicationGuards(installationId: number, repositoryId: number, headSha: string, timeoutMs: number): Promise<() => Promise<void>> {
    const started = performance.now();
    const releaseInstallation = await this.guard.acquireShared(String(installationId), timeoutMs);
    try {
      const releaseHead = await this.guard.acquireExclusive(`head:${installationId}:${repositoryId}:${headSha}`, timeoutMs - (performance.now() - started));
      return async () => {
        releaseHead();
        releaseInstallation();
      };
    } catch (error) {
      releaseInstallation();
      throw error;
    }
  }

  /** A batch runs in order in the same synchronous transaction: SQLite has no round trips to save. */
  private step(step: Step): unknown {
    if (isDialectQuestion(step)) return "sqlite";
    return isBatch(step) ? step.batch.map((query) => this.query(query)) : this.query(step);
  }

  private query(query: Query): unknown {
    const text = typeof query.sql === "string" ? query.sql : query.sql.sqlite;
    let statement = this.statements.get(text);
    if (!statement) {
      // $n placeholders become ?n; PostgreSQL casts (::jsonb, ::bigint) have no SQLite meaning.
      statement = this.db.query(text.replace(/\$(\d+)/g, "?$1").replace(/::[a-z]+/g, ""));
      this.statements.set(text, statement);
    }
    const params = query.params.map((p) => (typeof p === "boolean" ? (p ? 1 : 0) : p ?? null)) as never[];
    if (query.mode === "one") return statement.get(...params) ?? null;
    if (query.mode === "all") return statement.all(...params);
    return statement.run(...params).changes;
  }

  static open(path: string, options: { create: boolean }): SqliteStore {
    if (!options.create && path !== ":memory:" && !existsSync(path)) {
      throw new StoreError("missing_file", "the embedded database file does not exist; run `service database migrate` first");
    }
    let db: Database;
    try {
      db = new Database(path, { create: options.create, readwrite: true, strict: true });
    } catch {
      throw new StoreError("unreachable", "the embedded database file cannot be opened (check the path and its permissions)");
    }
    db.run(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    db.run("PRAGMA foreign_keys = ON");
    db.run("PRAGMA synchronous = NORMAL");
    // The record digests' SHA-256 (ops/record-digest.ts): SQLite has none built in. Text hashes as its UTF-8 bytes.
    db.function("sha256_hex", { deterministic: true, directOnly: true }, (value: unknown) => {
      if (typeof value !== "string" && !(value instanceof Uint8Array)) throw new TypeError("sha256_hex takes text or bytes");
      return sha256Hex(value);
    });
    return new SqliteStore(db);
  }

  async ping(): Promise<void> {
    this.db.query("SELECT 1").get();
  }

  async schemaIdentity(): Promise<SchemaIdentity | null> {
    const table = this.db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'service_schema'").get();
    if (!table) return null;
    const row = this.db.query("SELECT migration_head, release_contract FROM service_schema").get() as
      | { migration_head: string; release_contract: string }
      | null;
    if (!row) return null;
    const versions = (this.db.query("SELECT version FROM service_migrations ORDER BY version").all() as { version: number }[]).map((r) => r.version);
    return { migrationHead: row.migration_head, releaseContract: row.release_contract, appliedVersions: versions };
  }

  async queueGauges(): Promise<QueueGauges> {
    const row = this.db
      .query(
        `SELECT
           (SELECT count(*) FROM jobs WHERE state IN ('pending', 'leased')) AS queue_depth,
           (SELECT count(*) FROM jobs WHERE kind = 'head_invalidation' AND state IN ('pending', 'leased')) AS invalidation_depth,
           (SELECT count(*) FROM jobs WHERE state = 'dead') AS dead_jobs`,
      )
      .get() as { queue_depth: number; invalidation_depth: number; dead_jobs: number };
    return { queueDepth: row.queue_depth, sharedHeadInvalidationDepth: row.invalidation_depth, deadJobs: row.dead_jobs };
  }

  /** Applies every embedded migration not yet applied, in one write transaction. */
  migrate(now: number): MigrationReport {
    this.db.run("PRAGMA journal_mode = WAL");
    this.db.run(`PRAGMA busy_timeout = ${SQLITE_MIGRATION_LOCK_WAIT_MS}`);
    try {
      const applied: string[] = [];
      this.db.transaction(() => {
        const hasTable = this.db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'service_migrations'").get();
        const done = new Map<number, string>();
        if (hasTable) {
          for (const row of this.db.query("SELECT version, checksum FROM service_migrations").all() as { version: number; checksum: string }[]) {
            done.set(row.version, row.checksum);
          }
        }
        for (const { migration, sum } of pendingMigrations(done, "sqlite")) {
          this.db.run(migration.sqlite);
          this.db.query("INSERT INTO service_migrations (version, name, checksum, applied_at_ms) VALUES ($v, $n, $c, $t)").run({ v: migration.version, n: migration.name, c: sum, t: now });
          applied.push(migration.name);
        }
        this.db
          .query(
            `INSERT INTO service_schema (singleton, migration_head, release_contract, updated_at_ms) VALUES (1, $h, $c, $t)
             ON CONFLICT (singleton) DO UPDATE SET migration_head = excluded.migration_head, release_contract = excluded.release_contract, updated_at_ms = excluded.updated_at_ms`,
          )
          .run({ h: MIGRATION_HEAD, c: RELEASE_CONTRACT, t: now });
      }).immediate();
      return { applied, head: MIGRATION_HEAD };
    } finally {
      this.db.run(`PRAGMA busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
