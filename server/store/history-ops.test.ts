import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { RECORD_HEAD as HEAD, RECORD_MERGE_COMMIT as MERGE_COMMIT, recordBody as body, type SeedDecision, type SeedMerge, seedDecision, seedMerge } from "../../e2e/support/decision-records.ts";
import { encodeRecordBody } from "../records/codec.ts";
import type { HistoryFilter, HistoryRecord, HistorySummary, RecordId } from "../records/schema.ts";
import {
  decodeHistoryCursor, encodeHistoryCursor, HistoryCursorError, listHistory, MAX_HISTORY_BATCH, MAX_HISTORY_BATCH_BYTES, MAX_HISTORY_PAGE, one,
  readHistoryBatch, readHistoryRecord, type Store,
} from "./index.ts";

/**
 * The read side of decision records (migration 0008): one history of decisions and merges, newest first for the routes and
 * oldest first for the export, keyset-paginated by an opaque cursor. Rows are seeded through the codec and plain SQL
 * (e2e/support/decision-records.ts), as the writers store them.
 */
const OTHER_HEAD = "b".repeat(40);

describe.each(BACKENDS)("decision history on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }

  const decision = (at: number, over: SeedDecision = {}) => seedDecision(store, at, over);
  const merge = (at: number, over: SeedMerge = {}) => seedMerge(store, at, over);
  const page = (filter: HistoryFilter, cursor: string | null = null, limit = MAX_HISTORY_PAGE) => store.execute(() => listHistory(filter, cursor, limit));
  async function walkAll(filter: HistoryFilter, limit: number): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const at: string | null = cursor;
      const result = await page(filter, at, limit);
      ids.push(...result.items.map((item: HistorySummary) => item.id));
      cursor = result.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 50);
    return { ids, pages };
  }
  async function exportAll(filter: HistoryFilter, limit: number): Promise<HistoryRecord[]> {
    const records: HistoryRecord[] = [];
    let after: string | null = null;
    let batches = 0;
    do {
      const at: string | null = after;
      const result: { records: HistoryRecord[]; next: string | null } = await store.execute(() => readHistoryBatch(filter, at, limit));
      records.push(...result.records);
      after = result.next;
    } while (after !== null && ++batches < 50);
    return records;
  }

  test("the history lists decisions and merges newest first, by time then kind then id, and each page goes on where the last ended", async () => {
    await open();
    const d1 = await decision(1000);
    const m1 = await merge(1000); // same millisecond as d1: the merge comes after the decision oldest first, so before it here
    const d2 = await decision(2000);
    const d3 = await decision(2000);
    const m2 = await merge(1500);
    const m3 = await merge(3000);
    const d4 = await decision(500);
    const expected = [m3, d3, d2, m2, m1, d1, d4];
    for (const limit of [1, 2, 3, 7, 100]) {
      const { ids, pages } = await walkAll({}, limit);
      expect({ limit, ids }).toEqual({ limit, ids: expected });
      expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
    }
  });

  test("the export reads the same history oldest first, whole records in batches", async () => {
    await open();
    const d1 = await decision(1000, { title: "first" });
    const m1 = await merge(1000, { pull: 7 }); // judged by d1, a confirmed success on its head
    const d2 = await decision(2000, { confirmed: false, conclusion: "failure", title: "Missing approval" });
    const m2 = await merge(1500); // no decision on its pull request: unapproved
    for (const limit of [1, 3, MAX_HISTORY_BATCH]) {
      expect((await exportAll({}, limit)).map((r) => r.id)).toEqual([d1, m1, m2, d2]);
    }
    const [first, second, , last] = await exportAll({}, 2);
    expect(first as unknown).toEqual({ ...body({ published_at: new Date(1000).toISOString(), title: "first" }), id: d1, confirmed: true });
    expect(second as unknown).toEqual({
      schema_version: 1, kind: "merge", id: m1, installation_id: 4, repository: { id: 40, full_name: "Acme/Web" }, pull_request: 7,
      head_sha: HEAD, merge_commit_sha: MERGE_COMMIT, merged_by: { id: 501, login: "octocat" }, merged_at: new Date(995).toISOString(),
      decision_id: d1, decision_conclusion: "success", unapproved: false, reset_at: null, base_sha: null, enrollment: "pending", break_glass: false, recovered: false, merge_group_id: null,
      recorded_at: new Date(1000).toISOString(),
    });
    expect(last).toMatchObject({ id: d2, confirmed: false, conclusion: "failure", title: "Missing approval" });
  });

  test("an export batch is bounded by the bytes of its records too, and the next batch goes on after the last one returned", async () => {
    await open();
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push(await decision(i * 100, { title: "t".repeat(5000) }));
    ids.splice(2, 0, await merge(250));
    const size = Number((await store.execute(() => one<{ body_bytes: number }>("select body_bytes from decision_records order by id limit 1")))!.body_bytes);
    const batches = async (maxBytes: number) => {
      const sizes: number[] = [];
      const seen: string[] = [];
      let after: string | null = null;
      do {
        const at: string | null = after;
        const batch: { records: HistoryRecord[]; next: string | null } = await store.execute(() => readHistoryBatch({}, at, MAX_HISTORY_BATCH, { maxBytes }));
        sizes.push(batch.records.length);
        seen.push(...batch.records.map((r) => r.id));
        after = batch.next;
      } while (after !== null && sizes.length < 20);
      return { sizes, seen };
    };
    // Two decisions (about 5 KB each) and a merge (counted 512 bytes) fit; a third decision does not.
    expect(size).toBeGreaterThan(5000);
    expect(await batches(size * 2 + 512)).toEqual({ sizes: [3, 2, 1], seen: ids });
    // A record larger than the bound still comes, alone.
    expect(await batches(1)).toEqual({ sizes: [1, 1, 1, 1, 1, 1], seen: ids });
    expect(await batches(MAX_HISTORY_BATCH_BYTES)).toEqual({ sizes: [6], seen: ids });
  });

  test("a record written after a page was read does not shift the pages after it", async () => {
    await open();
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push(await decision(i * 100));
    const first = await page({}, null, 2);
    expect(first.items.map((i): string => i.id)).toEqual([ids[4]!, ids[3]!]);
    await decision(10_000);
    await merge(10_000);
    const second = await page({}, first.next_cursor, 2);
    expect(second.items.map((i): string => i.id)).toEqual([ids[2]!, ids[1]!]);
    const third = await page({}, second.next_cursor, 2);
    expect(third.items.map((i): string => i.id)).toEqual([ids[0]!]);
    expect(third.next_cursor).toBeNull();
  });

  test("a summary names the record without its evidence; the merge's installation is only in the whole record", async () => {
    await open();
    const d = await decision(1000, { confirmed: false, breakGlass: true, title: "Approved by break-glass override" });
    const m = await merge(2000, { pull: 7, mergeCommit: null }); // judged by d, a success never confirmed: unapproved
    const { items, next_cursor } = await page({});
    expect(next_cursor).toBeNull();
    expect(items as unknown).toEqual([
      {
        schema_version: 1, kind: "merge", id: m, repository: { id: 40, full_name: "Acme/Web" }, pull_request: 7, head_sha: HEAD, merge_commit_sha: null,
        merged_by: { id: 501, login: "octocat" }, merged_at: new Date(1995).toISOString(), decision_id: d, decision_conclusion: "success", unapproved: true,
        reset_at: null, base_sha: null, enrollment: "pending", break_glass: true, recovered: false, merge_group_id: null, recorded_at: new Date(2000).toISOString(),
      },
      {
        schema_version: 1, kind: "decision", id: d, confirmed: false, repository: { id: 40, full_name: "Acme/Web" }, pull_request: 7, head_sha: HEAD,
        conclusion: "success", title: "Approved by break-glass override", published_at: new Date(1000).toISOString(), break_glass: true,
      },
    ]);
  });

  test("the filters select by repository (any letter case), pull request, commit, time, unapproved merges, overrides and kind", async () => {
    await open();
    const web7 = await decision(1000);
    const web8 = await decision(1100, { pull_request: 8, head_sha: OTHER_HEAD, conclusion: "failure" });
    const api = await decision(1200, { repository: { id: 41, full_name: "acme/api" } });
    const override = await decision(1300, { pull_request: 9, head_sha: "9".repeat(40) }, );
    const overrideRow = await decision(1350, { pull_request: 9, head_sha: "8".repeat(40), breakGlass: true });
    const merged = await merge(1400, { pull: 7 }); // approved by web7
    const bypass = await merge(1500, { pull: 8, head: OTHER_HEAD, mergeCommit: "e".repeat(40) }); // web8 failed: unapproved
    const overrideMerge = await merge(1600, { pull: 9, head: "8".repeat(40), mergeCommit: "5".repeat(40) }); // approved by the override
    const apiMerge = await merge(1700, { repository: "acme/api", repositoryId: 41, pull: 7, head: "7".repeat(40), mergeCommit: "6".repeat(40) }); // no decision: unapproved
    const ids = async (filter: HistoryFilter) => (await page(filter)).items.map((i) => i.id);
    expect(await ids({ repository: "ACME/WEB" })).toEqual([overrideMerge, bypass, merged, overrideRow, override, web8, web7]);
    expect(await ids({ repository: "acme/api" })).toEqual([apiMerge, api]);
    expect(await ids({ repository: "acme/we" })).toEqual([]);
    expect(await ids({ repository: "acme/web", pull: 8 })).toEqual([bypass, web8]);
    expect(await ids({ commit: HEAD.toUpperCase() })).toEqual([merged, api, web7]);
    expect(await ids({ repository: "acme/web", commit: HEAD })).toEqual([merged, web7]);
    expect(await ids({ commit: "e".repeat(40) })).toEqual([bypass]);
    expect(await ids({ commit: OTHER_HEAD })).toEqual([bypass, web8]);
    expect(await ids({ sinceMs: 1200, untilMs: 1400 })).toEqual([overrideRow, override, api]);
    expect(await ids({ unapproved: true })).toEqual([apiMerge, bypass]);
    expect(await ids({ unapproved: true, kind: "decision" })).toEqual([]);
    expect(await ids({ overrides: true })).toEqual([overrideMerge, overrideRow]);
    expect(await ids({ kind: "decision", repository: "acme/web" })).toEqual([overrideRow, override, web8, web7]);
    expect(await ids({ kind: "merge" })).toEqual([apiMerge, overrideMerge, bypass, merged]);
    expect(await ids({ unapproved: false, overrides: false })).toHaveLength(9);
    expect((await exportAll({ repository: "Acme/Web", kind: "merge" }, 1)).map((r) => r.id)).toEqual([merged, bypass, overrideMerge]);
  });

  test("one record is read by its id, and an id of nothing reads nothing", async () => {
    await open();
    const d = await decision(1000, { owner_sets: [{ patterns: ["*"], owners: ["@acme/web"], required: 1, approvals: 1, status: "satisfied", satisfied_by: [], path_count: 1, paths: ["a.ts"] }] });
    const m = await merge(2000);
    expect(await store.execute(() => readHistoryRecord(d))).toMatchObject({ id: d, kind: "decision", confirmed: true, owner_sets: [{ paths: ["a.ts"] }] });
    expect(await store.execute(() => readHistoryRecord(m))).toMatchObject({ id: m, kind: "merge", unapproved: true });
    expect(await store.execute(() => readHistoryRecord(`d${Number(d.slice(1)) + 10}`))).toBeNull();
    expect(await store.execute(() => readHistoryRecord(`m${Number(m.slice(1)) + 10}`))).toBeNull();
    expect(await store.execute(() => readHistoryRecord("d0" as RecordId))).toBeNull();
    expect(await store.execute(() => readHistoryRecord("x1" as RecordId))).toBeNull();
    expect(await store.execute(() => readHistoryRecord("d1 or 1=1" as RecordId))).toBeNull();
  });

  test("a cursor not written by this service, or written for the other direction, is refused", async () => {
    await open();
    await decision(1000);
    await decision(2000);
    const good = (await page({}, null, 1)).next_cursor!;
    const b64 = (text: string) => Buffer.from(text).toString("base64url");
    for (const bad of [
      "", "not a cursor", "x".repeat(200), b64("h1.n.1000.0.1 or 1=1"), b64("h1.n.1000;drop table decision_records.0.1"), b64("h1.n.99999999999999999.0.1"),
      b64("h1.n.1000.2.1"), b64("h1.n.1000.0.0"), b64("h2.n.1000.0.1"), `${good}=`, good.slice(0, -2),
    ]) {
      await expect(page({}, bad, 1), bad).rejects.toBeInstanceOf(HistoryCursorError);
    }
    await expect(store.execute(() => readHistoryBatch({}, good, 1))).rejects.toThrow("other direction");
    const oldest = (await store.execute(() => readHistoryBatch({}, null, 1))).next!;
    await expect(page({}, oldest, 1)).rejects.toThrow("other direction");
    expect((await page({}, good, 1)).items).toHaveLength(1);
  });

  test("a page or batch size out of its bounds is refused", async () => {
    await open();
    for (const limit of [0, -1, 1.5, MAX_HISTORY_PAGE + 1, Number.NaN]) await expect(page({}, null, limit)).rejects.toThrow(RangeError);
    for (const limit of [0, MAX_HISTORY_BATCH + 1]) await expect(store.execute(() => readHistoryBatch({}, null, limit))).rejects.toThrow(RangeError);
    await decision(1000);
    expect((await page({}, null, MAX_HISTORY_PAGE)).items).toHaveLength(1);
  });
});

test("a cursor names a position that decodes to itself", () => {
  const at = { time: 1_790_000_000_123, kind: 1 as const, id: 9_007_199_254_740_991 };
  expect(decodeHistoryCursor(encodeHistoryCursor("newest", at), "newest")).toEqual(at);
  expect(encodeHistoryCursor("newest", at)).toMatch(/^[A-Za-z0-9_-]+$/);
});

test("a decision pruned between a page's statements is left out of the page, not failed", () => {
  const op = listHistory({ kind: "decision" }, null, 10);
  const keys = op.next();
  expect(keys.done).toBe(false);
  const rows = [2, 1].map((id) => ({ id, confirmed_at_ms: 5, break_glass: false, t: 4, body_bytes: 10 }));
  const bodies = op.next(rows);
  expect(!bodies.done && "sql" in bodies.value && bodies.value.sql).toContain("where id in ($1, $2)");
  const kept = encodeRecordBody(body()).bytes;
  const end = op.next([{ id: 2, body: kept }]); // record 1 was pruned meanwhile
  expect(end.done && end.value.items.map((item) => item.id)).toEqual(["d2"]);
});
