import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import {
  acceptDirectTrigger, acquireElectionLease, all, type DirectTrigger, indexListingComplete, indexListingPage, type IndexListing,
  type BaseRefCursor, type PullOnBase, type PullsOnBasePage, pruneIndexBatch, readIndexedForFanout, readIndexedOnHead, readIndexPage, readPullsOnBase, run, type Store,
} from "./index.ts";
import { indexWrite } from "./ops/open-pull-index.ts";
import { connect } from "./postgres.ts";

/** The open-pull-request index (DESIGN 3.9, migration 0006): acceptance writes, streamed listings, lookups and pruning. */
const repo = { installationId: 4, repositoryId: 40, owner: "acme", name: "web" };
const H1 = "1".repeat(40);
const H2 = "2".repeat(40);
const H3 = "3".repeat(40);
const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };

describe.each(BACKENDS)("open-pull-request index on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }
  let deliveries = 0;
  const deliver = (pullNumber: number, headSha: string, extra: Partial<DirectTrigger> = {}, now = 1_000) =>
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `d-${++deliveries}`, event: "pull_request", action: "opened", pullNumber, headSha, now, ...extra }));
  /** The index's open rows (a closing's tombstone is not one: `closed`, read by `tombstones`). */
  const rows = () => store.execute(function* () {
    return (yield* all<{ pull_number: number; head_sha: string; base_ref: string | null; listing_id: string | null }>("select pull_number, head_sha, base_ref, listing_id from open_pull_requests where closed = false order by pull_number"))
      .map((row) => ({ number: Number(row.pull_number), head: row.head_sha, base: row.base_ref, listing: row.listing_id }));
  });
  const tombstones = () => store.execute(function* () {
    return (yield* all<{ pull_number: number; seen_at_ms: number; listing_id: string | null }>("select pull_number, seen_at_ms, listing_id from open_pull_requests where closed = true order by pull_number"))
      .map((row) => ({ number: Number(row.pull_number), seen: Number(row.seen_at_ms), listing: row.listing_id }));
  });
  const onHead = (headSha: string) => store.execute(() => readIndexedOnHead(40, headSha));

  test("a pull_request delivery's acceptance upserts the pull request's row and a closing one leaves a tombstone in its place, in the same transaction", async () => {
    await open();
    await deliver(7, H1, { index: { kind: "upsert", baseRef: "main" } });
    await deliver(8, H1, { index: { kind: "upsert", baseRef: "release" } });
    expect(await onHead(H1)).toEqual([7, 8]);
    await deliver(7, H2, { action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: H1 });
    expect(await rows()).toEqual([{ number: 7, head: H2, base: "main", listing: null }, { number: 8, head: H1, base: "release", listing: null }]);
    await deliver(8, H1, { action: "closed", index: { kind: "delete" } }, 1_500);
    expect(await rows()).toEqual([{ number: 7, head: H2, base: "main", listing: null }]);
    expect(await tombstones()).toEqual([{ number: 8, seen: 1_500, listing: null }]);
    expect(await onHead(H1)).toEqual([]);
    // A review (no index write) and a duplicate delivery change nothing.
    await deliver(7, H3, { event: "pull_request_review", action: "submitted" });
    const duplicate = await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "d-1", event: "pull_request", action: "opened", pullNumber: 9, headSha: H3, now: 5, index: { kind: "upsert", baseRef: "main" } }));
    expect(duplicate.kind).toBe("duplicate");
    expect(await rows()).toEqual([{ number: 7, head: H2, base: "main", listing: null }]);
  });

  test("a closing delivery for a pull request the index does not hold is accepted with all its work", async () => {
    await open();
    const accepted = await deliver(9, H1, { action: "closed", index: { kind: "delete" } });
    expect(accepted).toMatchObject({ kind: "accepted", sharedGeneration: 1, evaluationGeneration: 1 });
    const work = await store.execute(function* () {
      return (yield* all<{ kind: string }>("select kind from jobs where repository_id = 40 order by kind")).map((row) => row.kind);
    });
    expect(work).toEqual(["evaluation", "head_invalidation"]);
    expect(await rows()).toEqual([]);
    expect(await tombstones()).toEqual([{ number: 9, seen: 1_000, listing: null }]);
  });

  test("a synchronize queues the invalidation of the head it left in the same acceptance, at that head's S, without advancing it", async () => {
    await open();
    await deliver(7, H2, { index: { kind: "upsert", baseRef: "main" } });
    await deliver(8, H2, { index: { kind: "upsert", baseRef: "main" } });
    await store.execute(() => run("delete from jobs"));
    const heads = () => store.execute(function* () {
      return (yield* all<{ head_sha: string; shared_generation: number }>("select head_sha, shared_generation from head_generations where repository_id = 40 order by head_sha"))
        .map((row) => [row.head_sha, Number(row.shared_generation)]);
    });
    const invalidations = () => store.execute(function* () {
      return (yield* all<{ head_sha: string; shared_generation: number; run_at_ms: number }>("select head_sha, shared_generation, run_at_ms from jobs where kind = 'head_invalidation' order by head_sha"))
        .map((row) => [row.head_sha, Number(row.shared_generation), Number(row.run_at_ms)]);
    });
    // The old head sorting after the new one, then before it; the new head's row is held for its fast path, the old one's is not.
    const outcome = await deliver(7, H1, { action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: H2, heldUntil: 5_000 }, 1_000);
    expect(outcome).toEqual({ kind: "accepted", sharedGeneration: 1, evaluationGeneration: 2, rememberedCheckRunId: null, holdsWork: true });
    expect(await heads()).toEqual([[H1, 1], [H2, 2]]);
    expect(await invalidations()).toEqual([[H1, 1, 5_000], [H2, 2, 1_000]]);
    await store.execute(() => run("delete from jobs"));
    await deliver(8, H3, { action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: H2, heldUntil: 5_000 }, 1_000);
    expect(await heads()).toEqual([[H1, 1], [H2, 2], [H3, 1]]);
    expect(await invalidations()).toEqual([[H2, 2, 1_000], [H3, 1, 5_000]]);
    // A live row of the old head keeps its run time (held by a fast path on it) and is marked to run again.
    await store.execute(() => run("update jobs set run_at_ms = 9000, merges = 0 where head_sha = $1", H2));
    await deliver(7, H3, { action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: H2 }, 1_000);
    const merged = await store.execute(function* () {
      return yield* all<{ run_at_ms: number; merges: number }>("select run_at_ms, merges from jobs where kind = 'head_invalidation' and head_sha = $1", H2);
    });
    expect(merged.map((row) => [Number(row.run_at_ms), Number(row.merges)])).toEqual([[9_000, 1]]);
    // A head never seen gets its row at S 0.
    await deliver(9, H2, { action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: "9".repeat(40) }, 1_000);
    expect((await invalidations()).find(([head]) => head === "9".repeat(40))).toEqual(["9".repeat(40), 0, 1_000]);
    expect(await onHead(H3)).toEqual([7, 8]);
  });

  test("a complete listing replaces the repository's rows, keeping what a delivery wrote after it started; an incomplete one removes nothing", async () => {
    await open();
    await deliver(1, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await deliver(2, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await deliver(3, H2, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await store.execute(() => acquireElectionLease(lease, 150));
    const first: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 200, lease };
    // Page 1 moves #1 to another head; a delivery after the listing started moves #3 and opens #9, which the pages never show.
    expect(await store.execute(() => indexListingPage(first, [{ number: 1, headSha: H3, baseRef: "main" }], 210))).toBe(true);
    await deliver(3, H3, { action: "synchronize", index: { kind: "upsert", baseRef: "dev" } }, 220);
    await deliver(9, H1, { index: { kind: "upsert", baseRef: "main" } }, 225);
    expect(await store.execute(() => indexListingPage(first, [{ number: 3, headSha: H2, baseRef: "main" }, { number: 4, headSha: H2, baseRef: null }], 230))).toBe(true);
    // Not complete yet: #2 (not seen so far) is still there.
    expect((await rows()).map((row) => row.number)).toEqual([1, 2, 3, 4, 9]);
    expect(await store.execute(() => indexListingComplete(first, 240))).toBe(1);
    expect(await rows()).toEqual([
      { number: 1, head: H3, base: "main", listing: "scan-1" },
      { number: 3, head: H3, base: "dev", listing: null },
      { number: 4, head: H2, base: null, listing: "scan-1" },
      { number: 9, head: H1, base: "main", listing: null },
    ]);
    // An incomplete second listing (its pages written, never completed) removes nothing, and a later complete one does.
    const second: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-2", startedAtMs: 300, lease };
    await store.execute(() => indexListingPage(second, [{ number: 1, headSha: H3, baseRef: "main" }], 310));
    expect((await rows()).map((row) => row.number)).toEqual([1, 3, 4, 9]);
    const third: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-3", startedAtMs: 400, lease };
    await store.execute(() => indexListingPage(third, [{ number: 3, headSha: H3, baseRef: "dev" }], 410));
    expect(await store.execute(() => indexListingComplete(third, 420))).toBe(3);
    expect((await rows()).map((row) => row.number)).toEqual([3]);
    expect(await store.execute(() => readIndexPage(40, null))).toEqual([{ number: 3, headSha: H3 }]);
  });

  test("a pull request closed while a listing is in flight does not come back: the listing's earlier page cannot overwrite the closing", async () => {
    await open();
    await deliver(5, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await deliver(6, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await store.execute(() => acquireElectionLease(lease, 150));
    const listing: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 200, lease };
    // The listing fetched a page naming #5 and #7 open (at 210); #5 and #7 close (220, 225) before that page is written (230).
    await deliver(5, H1, { action: "closed", index: { kind: "delete" } }, 220);
    await deliver(7, H2, { action: "closed", index: { kind: "delete" } }, 225);
    expect(await store.execute(() => indexListingPage(listing, [{ number: 5, headSha: H1, baseRef: "main" }, { number: 6, headSha: H1, baseRef: "main" }, { number: 7, headSha: H2, baseRef: "main" }], 230))).toBe(true);
    expect(await onHead(H1)).toEqual([6]);
    expect(await onHead(H2)).toEqual([]);
    await store.execute(() => indexListingComplete(listing, 240));
    expect(await onHead(H1)).toEqual([6]);
    expect(await onHead(H2)).toEqual([]);
    // No reader names a closed pull request: fan-out pages, base-ref work (only a recorded evaluation names it, as before).
    expect(await store.execute(() => readIndexPage(40, null))).toEqual([{ number: 6, headSha: H1 }]);
    expect((await store.execute(() => readIndexedForFanout(40, null))).map((row) => row.number)).toEqual([6]);
    await store.execute(() => run("insert into pull_evaluations (installation_id, repository_id, pull_number, head_sha, base_sha, evaluation_generation, evaluated_at_ms) values (4, 40, 5, $1, 'b', 1, 1)", H1));
    expect((await allOnBase("main", 500)).pulls).toEqual([{ number: 6, headSha: H1, source: "indexed" }, { number: 5, headSha: H1, source: "recorded" }]);
    // A listing that started after the closing shows what the forge says then: a pull request reopened (its delivery lost)
    // is indexed again, and one no longer listed is gone for good.
    const later: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-2", startedAtMs: 300, lease };
    await store.execute(() => indexListingPage(later, [{ number: 5, headSha: H3, baseRef: "main" }, { number: 6, headSha: H1, baseRef: "main" }], 310));
    await store.execute(() => indexListingComplete(later, 320));
    expect(await onHead(H3)).toEqual([5]);
    expect(await store.execute(() => readIndexPage(40, null))).toEqual([{ number: 5, headSha: H3 }, { number: 6, headSha: H1 }]);
    expect(await store.execute(() => all("select pull_number from open_pull_requests where pull_number = 7"))).toEqual([]);
  });

  test("a reopening delivery indexes a closed pull request again, and a closing one for a pull request never indexed still guards it", async () => {
    await open();
    await store.execute(() => acquireElectionLease(lease, 50));
    await deliver(5, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await deliver(5, H1, { action: "closed", index: { kind: "delete" } }, 200);
    await deliver(5, H2, { action: "reopened", index: { kind: "upsert", baseRef: "main" } }, 300);
    expect(await onHead(H2)).toEqual([5]);
    // Closed, never indexed before: a page of a listing started before the closing does not add it.
    await deliver(8, H1, { action: "closed", index: { kind: "delete" } }, 400);
    const listing: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 350, lease };
    await store.execute(() => indexListingPage(listing, [{ number: 8, headSha: H1, baseRef: "main" }], 410));
    expect(await onHead(H1)).toEqual([]);
  });

  test("closings are pruned with the index, by the hour they were last seen", async () => {
    await open();
    await store.execute(() => acquireElectionLease(lease, 1));
    await deliver(5, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await deliver(5, H1, { action: "closed", index: { kind: "delete" } }, 200);
    await deliver(6, H1, { action: "closed", index: { kind: "delete" } }, 2 * 3_600_000);
    const count = () => store.execute(function* () {
      return Number((yield* all<{ n: number }>("select count(*) as n from open_pull_requests"))[0]!.n);
    });
    expect(await count()).toBe(2);
    expect(await store.execute(() => pruneIndexBatch(lease, 3_600_000, 30))).toBe(1);
    expect(await count()).toBe(1);
    expect(await store.execute(() => pruneIndexBatch(lease, 3 * 3_600_000, 30))).toBe(1);
    expect(await count()).toBe(0);
  });

  test("a listing whose lease was lost writes and removes nothing", async () => {
    await open();
    await deliver(1, H1, { index: { kind: "upsert", baseRef: "main" } }, 100);
    await store.execute(() => acquireElectionLease({ ...lease, owner: "other" }, 150));
    const listing: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 200, lease };
    expect(await store.execute(() => indexListingPage(listing, [{ number: 2, headSha: H1, baseRef: "main" }], 210))).toBe(false);
    expect(await store.execute(() => indexListingComplete(listing, 220))).toBeNull();
    expect((await rows()).map((row) => row.number)).toEqual([1]);
  });

  test("a lookup by head reads the head's index entries, not the repository's rows in number order", async () => {
    await open();
    const plan = await store.execute(function* () {
      // An empty table would make PostgreSQL's planner scan it: with scans off, it names the index it would use.
      if (backend !== "sqlite") yield* run("set local enable_seqscan = off");
      return yield* all<Record<string, unknown>>(backend === "sqlite"
        ? "explain query plan select pull_number from open_pull_requests where repository_id = $1 and head_sha = $2 and closed = false order by pull_number limit $3"
        : "explain select pull_number from open_pull_requests where repository_id = $1::bigint and head_sha = $2::text and closed = false order by pull_number limit $3", 40, H1, 5);
    });
    // The head index (open rows only, migration 0011) covers the order (repository, head, number): no scan of every row of
    // the repository by its key.
    expect(JSON.stringify(plan)).toContain(backend === "sqlite" ? "COVERING INDEX open_pull_requests_head" : "open_pull_requests_head");
    expect(JSON.stringify(plan)).not.toContain(backend === "sqlite" ? "TEMP B-TREE" : "Sort");
    if (backend === "sqlite") expect(JSON.stringify(plan)).not.toContain("autoindex");
  });

  test("rows not seen within the retention are pruned in batches; a lookup by head is bounded", async () => {
    await open();
    await store.execute(() => acquireElectionLease(lease, 1));
    const listing: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 10, lease };
    await store.execute(() => indexListingPage(listing, Array.from({ length: 5 }, (_, i) => ({ number: i + 1, headSha: H1, baseRef: "main" })), 20));
    await deliver(6, H1, { index: { kind: "upsert", baseRef: "main" } }, 500);
    expect(await store.execute(() => readIndexedOnHead(40, H1, 3))).toEqual([1, 2, 3]);
    expect(await store.execute(() => pruneIndexBatch(lease, 100, 30, 2))).toBe(2);
    expect(await store.execute(() => pruneIndexBatch(lease, 100, 30, 2))).toBe(2);
    expect(await store.execute(() => pruneIndexBatch(lease, 100, 30, 2))).toBe(1);
    expect(await store.execute(() => pruneIndexBatch(lease, 100, 30, 2))).toBe(0);
    expect(await onHead(H1)).toEqual([6]);
    expect(await store.execute(() => pruneIndexBatch({ ...lease, owner: "other" }, 1_000, 30))).toBeNull();
  });

  /** Every page of readPullsOnBase from the start, `limit` rows a page: the pulls and the number of pages read. */
  async function allOnBase(baseRef: string, limit: number) {
    const pulls: PullOnBase[] = [];
    let pages = 0;
    for (let cursor: BaseRefCursor | null = null; ;) {
      const at: BaseRefCursor | null = cursor;
      const page: PullsOnBasePage = await store.execute(() => readPullsOnBase(40, baseRef, at, limit));
      pages += 1;
      expect(page.pulls.length).toBeLessThanOrEqual(limit);
      pulls.push(...page.pulls);
      if (page.next === null) break;
      cursor = page.next;
    }
    return { pulls, pages };
  }

  test("base-ref work reads the index's pull requests on the base, those of unknown base, and recorded ones the index does not name, page by page", async () => {
    await open();
    await deliver(1, H1, { index: { kind: "upsert", baseRef: "main" } });
    await deliver(2, H2, { index: { kind: "upsert", baseRef: "release" } });
    await deliver(4, H2, { index: { kind: "upsert", baseRef: "main" } });
    await store.execute(() => indexListingPage({ installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 1 }, [{ number: 3, headSha: H3, baseRef: null }], 2_000));
    // Another repository's row on the same base is not read.
    await store.execute(() => acceptDirectTrigger({ ...repo, repositoryId: 41, deliveryId: "other-repo", event: "pull_request", action: "opened", pullNumber: 9, headSha: H1, now: 1, index: { kind: "upsert", baseRef: "main" } }));
    // Recorded evaluations: #1 (indexed on the base: taken once, at the index's head), #2 (indexed on another base: not
    // taken), #5 and #6 (not indexed: their base is unknown, taken at the recorded head).
    for (const [number, head] of [[1, "old-1"], [2, "old-2"], [5, "h-5"], [6, "h-6"]] as const) {
      await store.execute(() => run("insert into pull_evaluations (installation_id, repository_id, pull_number, head_sha, base_sha, evaluation_generation, evaluated_at_ms) values (4, 40, $1, $2, 'b', 1, 1)", number, head));
    }
    const expected: PullOnBase[] = [
      { number: 1, headSha: H1, source: "indexed" },
      { number: 4, headSha: H2, source: "indexed" },
      { number: 3, headSha: H3, source: "unknown_base" },
      { number: 5, headSha: "h-5", source: "recorded" },
      { number: 6, headSha: "h-6", source: "recorded" },
    ];
    expect((await allOnBase("main", 500)).pulls).toEqual(expected);
    const paged = await allOnBase("main", 1);
    expect(paged.pulls).toEqual(expected);
    expect(paged.pages).toBeGreaterThanOrEqual(expected.length);
    expect((await allOnBase("release", 500)).pulls.map((pull) => pull.number)).toEqual([2, 3, 5, 6]);
    expect((await allOnBase("dev", 500)).pulls.map((pull) => pull.number)).toEqual([3, 5, 6]);
  });

  test("a lookup by base reads the base's index entries (migration 0007), not the repository's rows in number order", async () => {
    await open();
    const plan = await store.execute(function* () {
      // An empty table would make PostgreSQL's planner scan it: with scans off, it names the index it would use.
      if (backend !== "sqlite") yield* run("set local enable_seqscan = off");
      return yield* all<Record<string, unknown>>(backend === "sqlite"
        ? "explain query plan select pull_number, head_sha from open_pull_requests where repository_id = $1 and base_ref = $2 and pull_number > $3 and closed = false order by pull_number limit $4"
        : "explain select pull_number, head_sha from open_pull_requests where repository_id = $1::bigint and base_ref = $2::text and pull_number > $3::integer and closed = false order by pull_number limit $4", 40, "main", 0, 5);
    });
    expect(JSON.stringify(plan)).toContain(backend === "sqlite" ? "INDEX open_pull_requests_base" : "open_pull_requests_base");
    expect(JSON.stringify(plan)).not.toContain(backend === "sqlite" ? "TEMP B-TREE" : "Sort");
  });
});

describe("open-pull-request index under concurrency on postgresql", () => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  test("a listing page written while a closing of one of its pull requests commits leaves the closing in place", async () => {
    ({ database, store } = await openMigratedStore("postgresql"));
    if (database.target.backend !== "postgresql") throw new Error("postgresql only");
    await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "open-5", event: "pull_request", action: "opened", pullNumber: 5, headSha: H1, now: 100, index: { kind: "upsert", baseRef: "main" } }));
    const listing: IndexListing = { installationId: 4, repositoryId: 40, listingId: "scan-1", startedAtMs: 200 };
    const sql = connect(database.target, { max: 1 });
    try {
      let page: Promise<boolean> | null = null;
      // The closing's index write holds the row, uncommitted, while the page (fetched before it) is written and waits for it.
      await sql.begin(async (tx) => {
        const close = indexWrite(repo, 5, H1, { kind: "delete" }, 220);
        await tx.unsafe(close.sql as string, close.params as never[]);
        page = store.execute(() => indexListingPage(listing, [{ number: 5, headSha: H1, baseRef: "main" }, { number: 6, headSha: H2, baseRef: "main" }], 230));
        await Bun.sleep(300);
        const waiting = await tx.unsafe("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()");
        expect(waiting[0]!.n).toBe(1);
      });
      expect(await page!).toBe(true);
      expect(await store.execute(() => readIndexedOnHead(40, H1))).toEqual([]);
      expect(await store.execute(() => readIndexedOnHead(40, H2))).toEqual([6]);
    } finally {
      await sql.end();
    }
  });
});
