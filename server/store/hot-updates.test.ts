import { afterEach, describe, expect, test } from "bun:test";
import { createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { acceptDirectTrigger, all, type DirectTrigger, indexListingPage, migrateDatabase, one, PostgresStore } from "./index.ts";
import { connect } from "./postgres.ts";

/**
 * Heap-only (HOT) updates on the webhook hot path (issue 26 item 8). An update that changes no indexed column and finds room
 * on its row's page writes no index entry; one that changes an indexed column writes an entry in every index of the table.
 * The acceptance rewrites a pull request's open-pull-request index row with every pull_request delivery, and a reconciler
 * listing rewrites every row it sees: when the head and base did not change, those rewrites must be HOT.
 * PostgreSQL only (SQLite has no such notion). One connection, so that its own statistics can be flushed and read back.
 */
const repo = { installationId: 4, repositoryId: 40, owner: "acme", name: "web" };
const H1 = "1".repeat(40);
const H2 = "2".repeat(40);

describe("HOT updates on PostgreSQL", () => {
  let database: TestDatabase;
  let store: PostgresStore;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    if (database.target.backend !== "postgresql") throw new Error("postgresql only");
    const sql = connect(database.target, { max: 1 });
    store = new PostgresStore(sql, sql);
  }
  let deliveries = 0;
  const deliver = (pullNumber: number, headSha: string, extra: Partial<DirectTrigger> = {}, now = 1_000) =>
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `d-${++deliveries}`, event: "pull_request", action: "synchronize", pullNumber, headSha, now, heldUntil: now + 3_000, index: { kind: "upsert", baseRef: "main" }, ...extra }));
  /** Updates and HOT updates per table so far: this session's pending statistics are flushed first (PostgreSQL 15). */
  const updates = async () => {
    await store.execute(() => one("select pg_stat_force_next_flush()"));
    await store.execute(() => one("select pg_stat_clear_snapshot()"));
    const rows = await store.execute(() => all<{ relname: string; upd: number; hot: number }>("select relname, n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_user_tables"));
    return Object.fromEntries(rows.map((row) => [row.relname, { updated: Number(row.upd), hot: Number(row.hot) }]));
  };
  const since = (before: Awaited<ReturnType<typeof updates>>, after: Awaited<ReturnType<typeof updates>>, table: string) => ({
    updated: after[table]!.updated - before[table]!.updated, hot: after[table]!.hot - before[table]!.hot,
  });

  test("a delivery that finds its pull request's index row on the same head and base rewrites it in place (HOT), as it does its fences and work rows", async () => {
    await open();
    for (let pull = 1; pull <= 8; pull++) await deliver(pull, H1, {}, 1_000 + pull);
    const before = await updates();
    // Later deliveries within the hour: seen_at_ms moves on, nothing indexed changes.
    for (let pull = 1; pull <= 8; pull++) await deliver(pull, H1, {}, 2_000 + pull);
    for (let pull = 1; pull <= 8; pull++) await deliver(pull, H1, {}, 3_599_000 + pull);
    const after = await updates();
    expect(since(before, after, "open_pull_requests")).toEqual({ updated: 16, hot: 16 });
    for (const table of ["head_generations", "pull_generations"]) expect(since(before, after, table)).toEqual({ updated: 16, hot: 16 });
    // Both work rows of each delivery merge into the pending ones, keeping their earlier run time: HOT as well.
    expect(since(before, after, "jobs")).toEqual({ updated: 32, hot: 32 });
  });

  test("a delivery that moves its pull request to another head, or comes in a later hour, rewrites the index row's entries (not HOT)", async () => {
    await open();
    await deliver(1, H1);
    await deliver(2, H1);
    const before = await updates();
    await deliver(1, H2, {}, 2_000);
    // The hour pruning reads by moved on: at most once an hour per row.
    await deliver(2, H1, {}, 3_601_000);
    expect(since(before, await updates(), "open_pull_requests")).toEqual({ updated: 2, hot: 0 });
  });

  test("a listing that sees unchanged pull requests rewrites their index rows in place (HOT)", async () => {
    await open();
    const listing = (id: string, startedAtMs: number) => ({ installationId: 4, repositoryId: 40, listingId: id, startedAtMs });
    const page = Array.from({ length: 50 }, (_, i) => ({ number: i + 1, headSha: H1, baseRef: "main" }));
    await store.execute(() => indexListingPage(listing("l1", 1_000), page, 1_000));
    for (let round = 2; round <= 4; round++) {
      const before = await updates();
      await store.execute(() => indexListingPage(listing(`l${round}`, round * 1_000), page, round * 1_000));
      expect(since(before, await updates(), "open_pull_requests")).toEqual({ updated: 50, hot: 50 });
    }
  });
});
