import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { StoreError } from "./store.ts";

/**
 * Why a database statement or operation failed, in the fixed vocabulary of `service_database_errors_total{reason}` and
 * `service_database_retries_total{reason}` (issue 17). Decided by the SQLSTATE or the driver's error code alone, never by
 * message text, and only that code is ever logged: PostgreSQL's messages and details carry row values.
 */
export const DATABASE_FAILURE_REASONS = ["deadlock", "serialization", "connection", "timeout", "other"] as const;
export type DatabaseFailureReason = (typeof DATABASE_FAILURE_REASONS)[number];

/**
 * Codes of a connection that is lost or cannot be made: postgres.js's own (CONNECT_TIMEOUT, CONNECTION_CLOSED, ...), the
 * socket's, SQLSTATE class 08 (connection exception) and 57P01-57P05 (the backend was terminated, crashed or shut down).
 */
export const CONNECTION_CODE = /^(CONNECT_TIMEOUT|CONNECTION_|ECONNREFUSED|ENOTFOUND|ECONNRESET|EHOSTUNREACH|ETIMEDOUT|EPIPE|57P0|08)/;

/** The SQLSTATE or driver code an error carries (for a StoreError, the one it was classified from); null when it has none. */
export function databaseCode(error: unknown): string | null {
  const code = error instanceof StoreError ? error.databaseCode : (error as { code?: unknown } | null)?.code;
  // Codes are short upper-case identifiers; anything else is not a code and is never logged.
  return typeof code === "string" && /^[0-9A-Z_]{1,40}$/.test(code) ? code : null;
}

export function databaseFailureReason(error: unknown): DatabaseFailureReason {
  const code = databaseCode(error);
  if (code === "40P01") return "deadlock";
  if (code === "40001") return "serialization";
  // 57014: statement_timeout (or a cancel); 55P03: lock_timeout; a StoreError timeout: one of the store's own timers.
  if (code === "57014" || code === "55P03" || (error instanceof StoreError && error.code === "timeout")) return "timeout";
  if ((code !== null && CONNECTION_CODE.test(code)) || (error instanceof StoreError && error.code === "unreachable")) return "connection";
  return "other";
}

/**
 * Told of every failed attempt of a store operation: `retried` when the store runs it again. The retry code calls it too.
 */
export type DatabaseFailureRecorder = (error: unknown, retried: boolean) => void;

/** Counts each failure (and each retry) by reason and logs it with its SQLSTATE or driver code only. */
export function databaseFailureRecorder(metrics: Pick<Metrics, "databaseErrors" | "databaseRetries">, log: Logger): DatabaseFailureRecorder {
  return (error, retried) => {
    const reason = databaseFailureReason(error);
    metrics.databaseErrors.inc({ reason });
    if (retried) metrics.databaseRetries.inc({ reason });
    log.warn({ code: databaseCode(error), reason, retried }, retried ? "database operation failed; running it again" : "database operation failed");
  };
}
