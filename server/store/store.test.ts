import { afterEach, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { BACKENDS, createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { acquire } from "./postgres.ts";
import { waitUntil } from "../../e2e/support/service.ts";
import { acceptDirectTrigger, all, assertCompatible, batch, compatibilityProblem, MIGRATION_HEAD, query, run, MIGRATIONS, migrateDatabase, openStore, PostgresStore, RELEASE_CONTRACT, SqliteStore, type Store, StoreError } from "./index.ts";

/** Raw SQL for arranging test state that no store operation creates yet; both dialects accept these statements. */
async function raw(store: Store, statement: string): Promise<void> {
  if (store instanceof SqliteStore) store.db.run(statement);
  else await (store as PostgresStore).sql.unsafe(statement);
}

describe.each(BACKENDS)("store contract on %s", (backend) => {
  let database: TestDatabase;
  const opened: Store[] = [];
  const open = () => {
    const store = openStore(database.target);
    opened.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close().catch(() => {});
    await database?.drop();
  });

  test("an unmigrated database has no schema identity and is refused", async () => {
    database = await createTestDatabase(backend);
    if (backend === "sqlite") {
      // serve never creates the embedded file
      expect(() => open()).toThrow(StoreError);
      expect(existsSync(database.target.backend === "sqlite" ? database.target.path : "")).toBe(false);
      await migrateDatabase(database.target, 1);
      await raw(open(), "DELETE FROM service_schema");
    }
    const store = open();
    await store.ping();
    expect(await store.schemaIdentity()).toBeNull();
    expect(compatibilityProblem(null)).toContain("database migrate");
    await expect(assertCompatible(store)).rejects.toMatchObject({ code: "unmigrated" });
  });

  test("migrate records the binary's head and contract, and a second run applies nothing", async () => {
    database = await createTestDatabase(backend);
    const first = await migrateDatabase(database.target, 1000);
    expect(first.applied).toEqual(MIGRATIONS.map((m) => m.name));
    expect(first.head).toBe(MIGRATION_HEAD);
    const second = await migrateDatabase(database.target, 2000);
    expect(second.applied).toEqual([]);
    const store = open();
    expect(await store.schemaIdentity()).toEqual({ migrationHead: MIGRATION_HEAD, releaseContract: RELEASE_CONTRACT, appliedVersions: MIGRATIONS.map((m) => m.version) });
    await assertCompatible(store);
  });

  test("a database at another migration head is refused, naming both heads", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await raw(store, "UPDATE service_schema SET migration_head = '0099_future'");
    const error = await assertCompatible(store).catch((e) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect(error.code).toBe("incompatible");
    expect(error.message).toContain("0099_future");
    expect(error.message).toContain(MIGRATION_HEAD);
  });

  test("a database with another release contract is refused", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await raw(store, "UPDATE service_schema SET release_contract = 'other/9'");
    await expect(assertCompatible(store)).rejects.toMatchObject({ code: "incompatible" });
  });

  test("migrate refuses a database that ran a migration this binary does not know", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    await raw(open(), "INSERT INTO service_migrations (version, name, checksum, applied_at_ms) VALUES (99, '0099_future', 'x', 1)");
    await expect(migrateDatabase(database.target, 2)).rejects.toMatchObject({ code: "incompatible" });
  });

  test("migrate refuses an applied migration whose file changed", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    await raw(open(), "UPDATE service_migrations SET checksum = 'edited' WHERE version = 1");
    await expect(migrateDatabase(database.target, 2)).rejects.toThrow(/different file/);
  });

  test("the queue gauges count pending and leased work, unfinished exact-head invalidations and dead rows", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    expect(await store.queueGauges()).toEqual({ queueDepth: 0, sharedHeadInvalidationDepth: 0, deadJobs: 0 });
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, run_at_ms, created_at_ms, updated_at_ms) VALUES ('installation_fanout', 1, 'pending', 1, 0, 0, 0)`);
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, repository_id, pull_number, run_at_ms, lease_owner, lease_expires_at_ms, created_at_ms, updated_at_ms) VALUES ('evaluation', 4, 'leased', 1, 7, 3, 0, 'w1', 10, 0, 0)`);
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, repository_id, run_at_ms, created_at_ms, updated_at_ms) VALUES ('repository_fanout', 2, 'dead', 1, 9, 0, 0, 0)`);
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, repository_id, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms) VALUES ('head_invalidation', 0, 'pending', 1, 7, 'a', 3, 0, 0, 0)`);
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, repository_id, head_sha, shared_generation, run_at_ms, lease_owner, lease_expires_at_ms, created_at_ms, updated_at_ms) VALUES ('head_invalidation', 0, 'leased', 1, 7, 'b', 2, 0, 'w1', 10, 0, 0)`);
    await raw(store, `INSERT INTO jobs (kind, priority, state, installation_id, repository_id, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms) VALUES ('head_invalidation', 0, 'dead', 1, 7, 'c', 1, 0, 0, 0)`);
    expect(await store.queueGauges()).toEqual({ queueDepth: 4, sharedHeadInvalidationDepth: 2, deadJobs: 2 });
  });

  test("the schema rejects a job whose priority contradicts its kind", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await expect(raw(store, `INSERT INTO jobs (kind, priority, installation_id, run_at_ms, created_at_ms, updated_at_ms) VALUES ('evaluation', 0, 1, 0, 0, 0)`)).rejects.toThrow();
  });

  test("a batch's statements see each other's writes and each gives its own result", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await raw(store, "create table scratch (k text primary key, v integer not null)");
    const results = await store.execute(function* () {
      return yield* batch([
        query("one", "insert into scratch (k, v) values ($1, $2) returning v", "a", 1),
        query("run", "update scratch set v = v + 1 where k = $1", "a"),
        query("one", "select v from scratch where k = $1", "a"),
        query("all", "select k from scratch order by k"),
        query("one", "select v from scratch where k = $1", "missing"),
      ], { last: true });
    });
    expect(results).toEqual([{ v: 1 }, 1, { v: 2 }, [{ k: "a" }], null]);
  });

  test("a failing statement in a committing batch keeps nothing of the operation", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await raw(store, "create table scratch (k text primary key, v integer not null)");
    await store.execute(() => run("insert into scratch (k, v) values ($1, $2)", "a", 1));
    const failing = store.execute(function* () {
      yield* run("insert into scratch (k, v) values ($1, $2)", "b", 1);
      yield* batch([
        query("run", "insert into scratch (k, v) values ($1, $2)", "c", 1),
        query("run", "insert into scratch (k, v) values ($1, $2)", "a", 2),
        query("run", "insert into scratch (k, v) values ($1, $2)", "d", 1),
      ], { last: true });
    });
    await expect(failing).rejects.toThrow();
    expect(await store.execute(() => all("select k, v from scratch order by k"))).toEqual([{ k: "a", v: 1 }]);
    // The connection is usable again (on PostgreSQL: not left inside an aborted transaction).
    await store.execute(() => run("insert into scratch (k, v) values ($1, $2)", "e", 1));
    expect((await store.execute(() => all("select k from scratch order by k"))).map((r) => r.k)).toEqual(["a", "e"]);
  });

  test("an operation that sends a statement after its last batch is refused", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    await raw(store, "create table scratch (k text primary key, v integer not null)");
    const misuse = store.execute(function* () {
      yield* batch([query("run", "insert into scratch (k, v) values ($1, $2)", "a", 1)], { last: true });
      yield* run("insert into scratch (k, v) values ($1, $2)", "b", 1);
    });
    await expect(misuse).rejects.toThrow("after its last batch");
    expect((await store.execute(() => all("select k from scratch"))).map((r) => r.k)).not.toContain("b");
  });

  test("only one live evaluation row exists per pull request", async () => {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const store = open();
    const insert = `INSERT INTO jobs (kind, priority, installation_id, repository_id, pull_number, run_at_ms, created_at_ms, updated_at_ms) VALUES ('evaluation', 4, 1, 5, 8, 0, 0, 0)`;
    await raw(store, insert);
    await expect(raw(store, insert)).rejects.toThrow();
  });
});

describe("migration files", () => {
  test("every numbered file in both migration folders is embedded, in order, and none is missing", async () => {
    const { readdirSync } = await import("node:fs");
    const root = new URL("../../migrations/", import.meta.url).pathname;
    for (const dialect of ["postgres", "sqlite"]) {
      const files = readdirSync(root + dialect).filter((f) => f.endsWith(".sql")).sort().map((f) => f.replace(/\.sql$/, ""));
      expect(files).toEqual(MIGRATIONS.map((m) => m.name));
    }
  });
});

describe("postgresql specifics", () => {
  test("a delivery accepted at the same moment by another transaction is a duplicate that changes nothing", async () => {
    const database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    const store = openStore(database.target) as PostgresStore;
    const other = await store.sql.reserve();
    try {
      await other.unsafe("begin");
      await other.unsafe("insert into webhook_deliveries (delivery_id, event, received_at_ms) values ('same', 'pull_request', 1)");
      const head = "c".repeat(40);
      const racing = store.execute(() => acceptDirectTrigger({ installationId: 1, repositoryId: 2, owner: "acme", name: "web", deliveryId: "same", event: "pull_request", action: "opened", pullNumber: 3, headSha: head, now: 5 }));
      // The acceptance passed its "not yet retained" check and now waits on the uncommitted key.
      await waitUntil(async () => (await store.sql`select count(*)::int as n from pg_locks where not granted`)[0]!.n > 0, "the acceptance to wait on the key");
      await other.unsafe("commit");
      expect(await racing).toEqual({ kind: "duplicate" });
      const [counts] = await store.sql`select (select count(*) from head_generations)::int as heads, (select count(*) from pull_generations)::int as pulls, (select count(*) from jobs)::int as jobs`;
      expect(counts).toEqual({ heads: 0, pulls: 0, jobs: 0 });
    } finally {
      other.release();
      await store.close();
      await database.drop();
    }
  });

  test("two concurrent migrate runs serialise on the advisory lock and both succeed", async () => {
    const database = await createTestDatabase("postgresql");
    try {
      const results = await Promise.all([migrateDatabase(database.target, 1), migrateDatabase(database.target, 2)]);
      expect(results.map((r) => r.applied.length).sort()).toEqual([0, MIGRATIONS.length]);
    } finally {
      await database.drop();
    }
  });

  test("sessions pin the search path to public, bound ordinary statements to 3 seconds and never use GSS encryption", async () => {
    const database = await createTestDatabase("postgresql");
    const store = openStore(database.target) as PostgresStore;
    try {
      const [row] = await store.sql`select current_setting('search_path') as path, current_setting('statement_timeout') as timeout`;
      expect(row).toEqual({ path: "public", timeout: "3s" });
      // GSS encryption is never negotiated (postgres.js sends no GSSENCRequest).
      const [gss] = await store.sql`select encrypted from pg_stat_gssapi where pid = pg_backend_pid()`;
      expect(gss?.encrypted).toBe(false);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test("an operation that is one statement runs on the pipelining pool, in sessions with the same bounds and no transaction block", async () => {
    const database = await createTestDatabase("postgresql");
    const store = openStore(database.target) as PostgresStore;
    try {
      const session = () => batch([query("one", "select current_setting('application_name') as name, current_setting('search_path') as path, current_setting('statement_timeout') as timeout, now() = statement_timestamp() as autocommit")], { last: true });
      const [lone] = await store.execute(session);
      expect(lone).toEqual({ name: "codeowner-approval/statements", path: "public", timeout: "3s", autocommit: true });
      // Anything longer takes a reserved connection of the main pool and one transaction (now() is the transaction's start).
      const [inTransaction] = await store.execute(function* () {
        yield* run("select pg_sleep(0.01)");
        return yield* batch([query("one", "select current_setting('application_name') as name, now() = statement_timestamp() as autocommit")], { last: true });
      });
      expect(inTransaction).toEqual({ name: "codeowner-approval", autocommit: false });
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test("a lone statement past the 3 second bound is cancelled and classified as a timeout", async () => {
    const database = await createTestDatabase("postgresql");
    const store = openStore(database.target) as PostgresStore;
    try {
      const started = performance.now();
      const error = await store.execute(() => batch([query("run", "select pg_sleep(4)")], { last: true })).catch((e) => e);
      expect(error).toMatchObject({ code: "timeout" });
      expect(performance.now() - started).toBeLessThan(3_900);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test("a statement past the 3 second bound is cancelled and classified as a timeout", async () => {
    const database = await createTestDatabase("postgresql");
    const store = openStore(database.target) as PostgresStore;
    try {
      const started = performance.now();
      const error = await store.withConnection((connection) => connection.run(connection.sql`select pg_sleep(4)`)).catch((e) => e);
      expect(error).toMatchObject({ code: "timeout" });
      expect(performance.now() - started).toBeLessThan(3_900);
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test("waiting for a pool connection gives up after 2 seconds", async () => {
    const database = await createTestDatabase("postgresql");
    const store = PostgresStore.open(database.target as never, { max: 1 });
    const held = await acquire(store.sql);
    try {
      const started = performance.now();
      await expect(store.ping()).rejects.toMatchObject({ code: "timeout" });
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(1_900);
      expect(waited).toBeLessThan(2_900);
    } finally {
      held.release();
      await store.ping(); // the late reservation was handed back: the pool still works
      await store.close();
      await database.drop();
    }
  });

  test("an unreachable server fails within the connect bound with a classified error", async () => {
    const { parseDatabaseUrl } = await import("../config/index.ts");
    const store = openStore(parseDatabaseUrl("postgresql://u:p@127.0.0.1:1/none", false));
    const started = performance.now();
    await expect(store.ping()).rejects.toMatchObject({ code: "unreachable" });
    expect(performance.now() - started).toBeLessThan(4_000);
    await store.close();
  });

  test("TLS with verify-full and the cluster's CA connects, and a wrong CA is refused", async () => {
    const ca = process.env.TEST_POSTGRES_CA;
    if (!ca) throw new Error("TEST_POSTGRES_CA is not set: run the suite through `npm test`");
    const { parseDatabaseUrl } = await import("../config/index.ts");
    const base = new URL(process.env.TEST_POSTGRES_URL!);
    const url = `postgresql://postgres:x@localhost:${base.port}/postgres?sslmode=verify-full&sslrootcert=${ca}`;
    const store = openStore(parseDatabaseUrl(url, true)) as PostgresStore;
    try {
      const [row] = await store.sql`select ssl from pg_stat_ssl where pid = pg_backend_pid()`;
      expect(row?.ssl).toBe(true);
    } finally {
      await store.close();
    }
    const { writeFileSync, mkdtempSync } = await import("node:fs");
    const dir = mkdtempSync("/tmp/wrong-ca-");
    Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other", "-keyout", `${dir}/k`, "-out", `${dir}/ca.pem`]);
    writeFileSync(`${dir}/marker`, "");
    const wrong = openStore(parseDatabaseUrl(url.replace(ca, `${dir}/ca.pem`), true));
    await expect(wrong.ping()).rejects.toBeDefined();
    await wrong.close();
  });
});
