import type { QueueGauges } from "../observability/metrics.ts";
import type { Op, OpOptions } from "./op.ts";

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
  /** Runs one whole operation (server/store/ops) in one transaction, under the exclusive installation guard when asked. */
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
  ) {
    super(message);
  }
}
