import { afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { all, encodeHistoryCursor, listHistory, readHistoryBatch, run, type Store } from "./index.ts";
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
    ({ database, store } = await openMigratedStore("postgresql"));
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

/**
 * The history's searches by repository and by commit use migration 0008's name-first and SHA-first indexes on both backends,
 * never a scan of the table (nor a walk of the whole time index): 5,000 records of each kind over 100 repositories, ANALYZEd,
 * and each search's statements planned (EXPLAIN on PostgreSQL, EXPLAIN QUERY PLAN on SQLite).
 */
describe.each(BACKENDS)("history search plans on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  const ROWS = 5_000;
  const SEARCH_INDEXES = [
    "decision_records_repository_name", "decision_records_name_pull", "decision_records_head_only",
    "merge_records_repository_name", "merge_records_head_only", "merge_records_commit_only",
  ];
  const sha = (n: number) => n.toString(16).padStart(40, "0");

  async function seed(): Promise<void> {
    ({ database, store } = await openMigratedStore(backend));
    const postgresql = backend === "postgresql";
    const series = postgresql ? `generate_series(1, ${ROWS}) g` : "s";
    const prefix = postgresql ? "" : `with recursive s(g) as (select 1 union all select g + 1 from s where g < ${ROWS}) `;
    const hex = (offset: number) => (postgresql ? `lpad(to_hex(g + ${offset}), 40, '0')` : `printf('%040x', g + ${offset})`);
    await store.execute(() => run(
      `${prefix}insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest, conclusion,
         published_at_ms, body_bytes, body)
       select 4, g % 100, 'acme/repo' || (g % 100), g, ${hex(0)}, 1, 'dg', 'success', g * 1000, 1, ${postgresql ? "'\\x00'::bytea" : "x'00'"} from ${series}`,
    ));
    await store.execute(() => run(
      `${prefix}insert into merge_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, merge_commit_sha, unapproved, recorded_at_ms)
       select 4, g % 100, 'acme/repo' || (g % 100), g, ${hex(0)}, ${hex(1_000_000)}, false, g * 1000 + 1 from ${series}`,
    ));
    await store.execute(() => run("analyze"));
  }

  /** The plan of `op`'s first statement: the scans it makes, as [kind, index or null]. */
  async function scans(op: Generator<unknown, unknown, unknown>): Promise<[string, string | null][]> {
    const first = op.next().value as Query;
    op.return(undefined);
    const params = first.params as unknown[];
    if (backend === "sqlite") {
      const rows = await store.execute(() => all<{ detail: string }>(`explain query plan ${first.sql as string}`, ...params));
      return rows.filter((row) => /^(SCAN|SEARCH) /.test(row.detail)).map((row) => [row.detail.split(" ")[0]!, /USING (?:COVERING )?INDEX (\w+)/.exec(row.detail)?.[1] ?? null]);
    }
    const [row] = await store.execute(() => all<{ "QUERY PLAN": unknown }>(`explain (format json) ${first.sql as string}`, ...params));
    const plan = typeof row!["QUERY PLAN"] === "string" ? JSON.parse(row!["QUERY PLAN"] as string) : row!["QUERY PLAN"];
    const found: [string, string | null][] = [];
    const walk = (node: Record<string, unknown>) => {
      // A Bitmap Heap Scan reads the rows its Bitmap Index Scans (its children, listed) found.
      const type = String(node["Node Type"]);
      if (/Scan$/.test(type) && type !== "Bitmap Heap Scan") found.push([type, (node["Index Name"] as string | undefined) ?? null]);
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((plan as { Plan: Record<string, unknown> }[])[0]!.Plan);
    return found;
  }

  const usesSearchIndexes = (found: [string, string | null][]) => {
    expect(found.length).toBeGreaterThan(0);
    for (const [kind, index] of found) {
      expect(kind).not.toMatch(/^(SCAN|Seq Scan)$/);
      expect(SEARCH_INDEXES).toContain(index!);
    }
  };

  test("a search by repository and a search by commit use an index, on decisions and on merges", async () => {
    await seed();
    usesSearchIndexes(await scans(listHistory({ repository: "Acme/Repo7" }, null, 50)));
    usesSearchIndexes(await scans(listHistory({ repository: "acme/repo7", kind: "merge" }, null, 50)));
    usesSearchIndexes(await scans(listHistory({ repository: "acme/repo7", pull: 707 }, null, 50)));
    usesSearchIndexes(await scans(listHistory({ repository: "acme/repo7", commit: sha(707) }, null, 50)));
    usesSearchIndexes(await scans(listHistory({ repository: "acme/repo7", commit: sha(1_000_707), kind: "merge" }, null, 50)));
    usesSearchIndexes(await scans(readHistoryBatch({ repository: "acme/repo7" }, null, 200)));
  });
});
