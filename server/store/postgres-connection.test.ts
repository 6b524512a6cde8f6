import { afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import type { PostgresTarget } from "../config/index.ts";
import { createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { waitUntil } from "../../e2e/support/service.ts";
import { startTcpProxy, type TcpProxy } from "../../e2e/support/tcp-proxy.ts";
import { type DatabaseFailureReason, databaseFailureReason } from "./failures.ts";
import { migrateDatabase, run } from "./index.ts";
import { acquire, connect, PostgresStore, REPLY_MARGIN_MS, type Sql, STATEMENT_TIMEOUT_MS } from "./postgres.ts";

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

describe("reserved connections of the store on postgresql", () => {
  let database: TestDatabase;
  let proxy: TcpProxy | null = null;
  const stores: PostgresStore[] = [];
  const failures: DatabaseFailureReason[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => {});
    await proxy?.close();
    proxy = null;
    await database?.drop();
  });
  /**
   * A migrated database and a store whose main pool has one connection, so an operation after a failure can only succeed if
   * the failed connection was not handed back; `proxied` puts a TcpProxy between the store and the server.
   */
  const open = async (options: { proxied?: boolean } = {}) => {
    failures.length = 0;
    database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    const target = database.target as PostgresTarget;
    if (options.proxied) proxy = await startTcpProxy({ host: target.hostaddr ?? target.host, port: target.port });
    const store = PostgresStore.open(proxy ? { ...target, host: "127.0.0.1", hostaddr: null, port: proxy.port } : target, {
      max: 1,
      onFailure: (error) => failures.push(databaseFailureReason(error)),
    });
    stores.push(store);
    return store;
  };
  const admin = () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    pools.push(sql);
    return sql;
  };
  const pools: Sql[] = [];
  afterEach(async () => {
    for (const pool of pools.splice(0)) await pool.end({ timeout: 1 }).catch(() => {});
  });
  /** An operation of two statements: it runs in a transaction on a reserved connection of the main pool. */
  const twoStatements = () =>
    (function* () {
      yield* run("select 1");
      return yield* run("select 2");
    })();

  test("an operation whose connection stops answering fails as a timeout within its bound, and the next runs on a fresh connection", async () => {
    const store = await open({ proxied: true });
    await store.execute(twoStatements);
    proxy!.freeze();
    const started = performance.now();
    // BEGIN and the first statement go out together: two statement bounds and the reply margin.
    const bound = 2 * STATEMENT_TIMEOUT_MS + REPLY_MARGIN_MS;
    expect(await within(store.execute(twoStatements), bound + 5_000)).toMatchObject({ status: "rejected", code: "timeout" });
    expect(performance.now() - started).toBeLessThan(bound + 1_000);
    expect(failures).toEqual(["timeout"]);
    expect(await within(store.execute(twoStatements))).toMatchObject({ status: "fulfilled" });
  }, 30_000);

  test("an operation whose backend is terminated mid-statement fails as unreachable at once, and the next one runs", async () => {
    const store = await open();
    const sql = admin();
    const running = store.execute(() =>
      (function* () {
        yield* run("select pg_sleep(2)");
        return yield* run("select 1");
      })(),
    );
    let pid = 0;
    await waitUntil(async () => {
      const [row] = await sql`select pid from pg_stat_activity where query like 'select pg_sleep(2)%' and application_name = 'codeowner-approval'`;
      pid = row?.pid ?? 0;
      return pid !== 0;
    }, "the operation's statement to run");
    await sql`select pg_terminate_backend(${pid})`;
    const terminated = performance.now();
    expect(await within(running)).toMatchObject({ status: "rejected", code: "unreachable" });
    // Well before the statement's own bound: the lost connection settles what was waiting on it, the rollback included.
    expect(performance.now() - terminated).toBeLessThan(1_000);
    expect(failures).toEqual(["connection"]);
    expect(await within(store.execute(twoStatements))).toMatchObject({ status: "fulfilled" });
  }, 30_000);

  test("held publication guards whose backend is terminated release at once, and can be taken again", async () => {
    const store = await open();
    const sql = admin();
    const release = await store.acquirePublicationGuards(7, 70, "a".repeat(40), 1_000);
    const [row] = await sql`select distinct pid from pg_locks where locktype = 'advisory' and granted`;
    await sql`select pg_terminate_backend(${row!.pid})`;
    await waitUntil(async () => (await sql`select 1 from pg_stat_activity where pid = ${row!.pid}`).length === 0, "the backend to exit");
    const started = performance.now();
    expect((await within(release())).status).toBe("fulfilled");
    expect(performance.now() - started).toBeLessThan(1_000);
    const again = await within(store.acquirePublicationGuards(7, 70, "a".repeat(40), 1_000));
    expect(again.status).toBe("fulfilled");
    await (again as { value: () => Promise<void> }).value();
  }, 30_000);

  test("held guards whose connection stops answering release within the unlock bound, and the store keeps working", async () => {
    const store = await open({ proxied: true });
    const release = await store.acquirePublicationGuards(7, 70, "a".repeat(40), 1_000);
    proxy!.freeze();
    const started = performance.now();
    expect((await within(release(), 15_000)).status).toBe("fulfilled");
    // The first unlock waits out its bound; the connection is then terminated and the second settles at once.
    expect(performance.now() - started).toBeLessThan(STATEMENT_TIMEOUT_MS + REPLY_MARGIN_MS + 1_000);
    expect(await within(store.ping())).toMatchObject({ status: "fulfilled" });
  }, 30_000);
});
