import { describe, expect, test } from "bun:test";
import { createLogger } from "../observability/logger.ts";
import { createMetrics } from "../observability/metrics.ts";
import { databaseCode, type DatabaseFailureReason, databaseFailureReason, databaseFailureRecorder } from "./failures.ts";
import { StoreError } from "./store.ts";

const coded = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error("database error"), { code, ...extra });

describe("database failure reasons", () => {
  test("SQLSTATEs and driver codes map to the fixed reasons", () => {
    const cases: [unknown, DatabaseFailureReason][] = [
      [coded("40P01"), "deadlock"],
      [coded("40001"), "serialization"],
      [coded("57014"), "timeout"],
      [coded("55P03"), "timeout"],
      [new StoreError("timeout", "no database connection became free within 2 seconds"), "timeout"],
      [coded("57P01"), "connection"],
      [coded("57P03"), "connection"],
      [coded("08006"), "connection"],
      [coded("CONNECTION_CLOSED"), "connection"],
      [coded("CONNECTION_DESTROYED"), "connection"],
      [coded("ECONNREFUSED"), "connection"],
      [coded("ECONNRESET"), "connection"],
      [coded("CONNECT_TIMEOUT"), "connection"],
      [new StoreError("unreachable", "the database cannot be reached", "57P01"), "connection"],
      [coded("23505"), "other"],
      [coded("42P01"), "other"],
      [new Error("not a database error"), "other"],
      [null, "other"],
    ];
    // The code rides along so that a failure names its case.
    for (const [error, reason] of cases) expect({ code: databaseCode(error), reason: databaseFailureReason(error) }).toEqual({ code: databaseCode(error), reason });
  });

  test("only a code-shaped value is ever taken as an error's code", () => {
    expect(databaseCode(coded("40P01"))).toBe("40P01");
    expect(databaseCode(new StoreError("unreachable", "the database cannot be reached", "ECONNREFUSED"))).toBe("ECONNREFUSED");
    expect(databaseCode(coded("duplicate key value (id)=(42)"))).toBeNull();
    expect(databaseCode({ code: 40 })).toBeNull();
  });

  test("a failure is counted by reason, a retried one also as a retry, and logged with its code and never its message", async () => {
    const metrics = createMetrics();
    const lines: string[] = [];
    const record = databaseFailureRecorder(metrics, createLogger("info", { write: (line: string) => void lines.push(line) }));
    const secret = "Key (delivery_id)=(d-7f3a-secret) already exists.";
    record(coded("40P01", { message: secret, detail: secret }), true);
    record(coded("23505", { message: secret, detail: secret }), false);
    const text = await metrics.registry.metrics();
    expect(text).toContain('service_database_errors_total{reason="deadlock"} 1');
    expect(text).toContain('service_database_errors_total{reason="other"} 1');
    expect(text).toContain('service_database_retries_total{reason="deadlock"} 1');
    expect(text).toContain('service_database_retries_total{reason="other"} 0');
    for (const reason of ["serialization", "connection", "timeout"]) expect(text).toContain(`service_database_errors_total{reason="${reason}"} 0`);
    expect(lines.map((line) => JSON.parse(line)).map(({ code, reason, retried, level }) => ({ code, reason, retried, level }))).toEqual([
      { code: "40P01", reason: "deadlock", retried: true, level: "warn" },
      { code: "23505", reason: "other", retried: false, level: "warn" },
    ]);
    expect(lines.join("")).not.toContain("d-7f3a-secret");
  });
});
