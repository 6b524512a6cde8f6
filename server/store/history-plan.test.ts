import { afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { encodeHistoryCursor, listHistory, migrateDatabase, openStore, readHistoryBatch, run, type Store } from "./index.ts";
import type { Query } from "./op.ts";

/**
 * A deep page of the history costs what a first page costs (issue 28 item 6: an export of a million records): the keyset
 * condition lets PostgreSQL start its index scan at the cursor instead of reading, and filtering out, every row before it.
 * Each walk's first statement is planned with EXPLAIN ANALYZE after 5,000 merge records.
 */
describe("history keyset plans on postgresql", () => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  const ROWS = 5_000;
  const DEEP = 4_000;

  /** The rows the plan of `op`'s first statement read and threw away by its filter. */
  async function rowsFilteredOut(op: Generator<unknown, unknown, unknown>): Promise<number> {
    const first = op.next().value as Query;
    op.return(undefined);
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql.unsafe(`explain (analyze, format json) ${first.sql as string}`, first.params as never[]);
      let removed = 0;
      const walk = (node: Record<string, unknown>) => {
        removed += Number(node["Rows Removed by Filter"] ?? 0);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk((row!["QUERY PLAN"] as { Plan: Record<string, unknown> }[])[0]!.Plan);
      return removed;
    } finally {
      await sql.end();
    }
  }

  test("an export batch deep in the history starts at its cursor (oldest first), and so does a deep page (newest first)", async () => {
    database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    store = openStore(database.target);
    await store.execute(() => run(
      `insert into merge_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, unapproved, recorded_at_ms)
       select 4, 40, 'acme/web', g, md5(g::text) || substr(md5('h' || g), 1, 8), false, g * 1000 from generate_series(1, ${ROWS}) g`,
    ));
    await store.execute(() => run("analyze merge_records"));
    const oldest = encodeHistoryCursor("oldest", { time: DEEP * 1000, kind: 1, id: DEEP });
    expect(await rowsFilteredOut(readHistoryBatch({ kind: "merge" }, oldest, 200))).toBeLessThan(10);
    const newest = encodeHistoryCursor("newest", { time: (ROWS - DEEP) * 1000, kind: 1, id: ROWS - DEEP });
    expect(await rowsFilteredOut(listHistory({ kind: "merge" }, newest, 100))).toBeLessThan(10);
  });
});
