import { afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import type { PostgresTarget } from "../config/index.ts";
import { createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { waitUntil } from "../../e2e/support/service.ts";
import { startTcpProxy } from "../../e2e/support/tcp-proxy.ts";
import { acquire, connect, type Sql } from "./postgres.ts";

/**
 * Connections that heal (issue 17). A connection's backend can die under it (a database restart, an operator's
 * pg_terminate_backend, a proxy dropping it); whatever was asked of it must then settle as a connection error, and the pool
 * must connect afresh. These are PostgreSQL-only: SQLite has no connections to lose.
 */

/** How long anything here may take: a reconnect is one connect bound (3 s) plus its backoff. */
const BOUND_MS = 5_000;

type Outcome = { status: "fulfilled"; value: unknown } | { status: "rejected"; code: unknown } | { status: "pending" };

/** Where a promise stands after at most `ms`: a hang is an outcome a test can assert on, not a test timeout. */
async function within(promise: Promise<unknown>, ms = BOUND_MS): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Promise<Outcome>((resolve) => (timer = setTimeout(() => resolve({ status: "pending" }), ms)));
  try {
    return await Promise.race([
      promise.then(
        (value): Outcome => ({ status: "fulfilled", value }),
        (error): Outcome => ({ status: "rejected", code: (error as { code?: unknown })?.code }),
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The driver's codes for a connection that went away under a query. */
const CONNECTION_LOST = /^(CONNECTION_CLOSED|CONNECTION_DESTROYED|ECONNRESET|EPIPE|57P01)$/;

describe("postgres.js connections on postgresql", () => {
  let database: TestDatabase;
  const pools: Sql[] = [];
  // The upstream defect throws from a setImmediate callback, outside any promise: bun test fails the running test on it.
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end({ timeout: 1 }).catch(() => {});
    await database?.drop();
  });
  /** Reserves a connection of `pool` and terminates its backend from another connection. */
  const reserveAndTerminate = async (pool: Sql) => {
    const killer = postgres(database.url, { max: 1, onnotice: () => {} });
    pools.push(pool, killer);
    const reserved = await acquire(pool);
    const [row] = await reserved`select pg_backend_pid() as pid`;
    await killer`select pg_terminate_backend(${row!.pid})`;
    await waitUntil(async () => (await killer`select 1 from pg_stat_activity where pid = ${row!.pid}`).length === 0, "the backend to exit");
    return reserved;
  };
  const targetOf = async () => {
    database = await createTestDatabase("postgresql");
    if (database.target.backend !== "postgresql") throw new Error("unreachable");
    return database.target;
  };

  test("queries on a reserved connection whose backend was terminated fail as connection errors, and the pool connects again", async () => {
    // One connection: whatever the pool runs next must run on the very connection whose backend died.
    const pool = connect(await targetOf(), { max: 1 });
    const reserved = await reserveAndTerminate(pool);
    const first = await within(reserved`select 1`);
    const second = await within(reserved`select 1`);
    expect(first).toMatchObject({ status: "rejected", code: expect.stringMatching(CONNECTION_LOST) });
    expect(second).toMatchObject({ status: "rejected", code: expect.stringMatching(CONNECTION_LOST) });
    // The failed reservation is never released: the pool took the closed connection back and connects it afresh.
    expect(await within(pool`select 2 as two`)).toMatchObject({ status: "fulfilled", value: [{ two: 2 }] });
    const again = await within(acquire(pool));
    expect(again.status).toBe("fulfilled");
    const fresh = (again as { value: postgres.ReservedSql }).value;
    expect(await within(fresh`select 3 as three`)).toMatchObject({ status: "fulfilled", value: [{ three: 3 }] });
    fresh.release();
  }, 30_000);

  test("a connection lost while it starts up ends neither the process nor the reservation waiting for it", async () => {
    const target = (await targetOf()) as PostgresTarget;
    const proxy = await startTcpProxy({ host: target.hostaddr ?? target.host, port: target.port });
    try {
      // The client's second write, after the startup exchange, is the query for the server's array types.
      proxy.cutNext(2);
      const pool = connect({ ...target, host: "127.0.0.1", hostaddr: null, port: proxy.port }, { max: 1 });
      pools.push(pool);
      const reserved = await within(acquire(pool));
      expect(reserved.status).toBe("fulfilled");
      const connection = (reserved as { value: postgres.ReservedSql }).value;
      expect(await within(connection`select 1 as one`)).toMatchObject({ status: "fulfilled", value: [{ one: 1 }] });
      connection.release();
    } finally {
      await proxy.close();
    }
  }, 30_000);

  test("a reserved connection that closed is not handed out again when it is released", async () => {
    await targetOf();
    const closed = Promise.withResolvers<void>();
    const pool = postgres(database.url, { max: 1, onnotice: () => {}, onclose: () => closed.resolve() });
    const reserved = await reserveAndTerminate(pool);
    // The client has seen the close: the pool holds the connection as closed, while the reservation still names it.
    await closed.promise;
    reserved.release();
    expect(await within(pool`select 2 as two`)).toMatchObject({ status: "fulfilled", value: [{ two: 2 }] });
    expect(await within(pool`select 3 as three`)).toMatchObject({ status: "fulfilled", value: [{ three: 3 }] });
  }, 30_000);
});

