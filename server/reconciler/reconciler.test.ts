import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import type { ListResult } from "../forge/index.ts";
import {
  acceptDirectTrigger, acquireElectionLease, all, confirmDecision, migrateDatabase, one, openStore, readCheckpoints, readIndexedOnHead, readElectionLease, readEvaluations, recordEvaluation, recordMerge, recordPendingDecision, releaseElectionLease,
  renewElectionLease, run, type Store,
} from "../store/index.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";
import { MAX_RECONCILE_PULL_REQUESTS, MERGE_RECOVERY_PERIOD_MS, RECONCILE_QUEUE_BATCH, type ReconcileForge, recoveryStaggerMs } from "./attempt.ts";
import { createReconciler, RECONCILER_LEASE_NAME, RECONCILER_LEASE_TTL_MS, type Reconciler } from "./reconciler.ts";
import { latestSlotMs, sweepOffsetMs } from "./sweep.ts";
import {
  captureLog, HEAD_A, HEAD_B, HEAD_C, installationItem, manualClock, pullItem, reconcileMetrics, repositoryItem, scriptedForge, whole,
} from "./test-support.ts";

const INTERVAL_MS = 300_000;
const RETENTION_MS = 14 * 86_400_000;
const notList = (): ListResult => ({ complete: false, cause: "transient", detail: "malformed", retryAfterMs: null, notList: true });

type JobView = { kind: string; pull_number: number | null; head_sha: string | null; shared_generation: number | null; evaluation_generation: number | null; state: string; run_at_ms: number; merges: number };

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe.each(BACKENDS)("reconciler on %s", (backend) => {
  let database: TestDatabase;
  const stores: Store[] = [];
  const reconcilers: Reconciler[] = [];
  afterEach(async () => {
    for (const r of reconcilers.splice(0)) await r.stop();
    for (const s of stores.splice(0)) await s.close().catch(() => {});
    await database?.drop();
  });

  async function setup() {
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    return openOne();
  }
  function openOne() {
    const store = openStore(database.target);
    stores.push(store);
    return store;
  }

  function make(store: Store, forge: ReconcileForge, options: { clock?: ReturnType<typeof manualClock>; owner?: string; onQueued?: () => void; fullSweepMs?: number; decisionRetentionMs?: number } = {}) {
    const clock = options.clock ?? manualClock();
    const captured = captureLog();
    const m = reconcileMetrics();
    const reconciler = createReconciler(
      { store, forge, log: captured.log, metrics: m.metrics, clock, organizationPolicyRepository: ".forge", policyPath: ".forge/service-policy.toml", ...(options.owner ? { owner: options.owner } : {}), ...(options.onQueued ? { onQueued: options.onQueued } : {}) },
      { intervalMs: INTERVAL_MS, retentionMs: RETENTION_MS, ...(options.fullSweepMs ? { fullSweepMs: options.fullSweepMs } : {}), ...(options.decisionRetentionMs ? { decisionRetentionMs: options.decisionRetentionMs } : {}) },
    );
    reconcilers.push(reconciler);
    return { reconciler, clock, ...captured, ...m };
  }

  const jobs = (store: Store) =>
    store.execute(() => all<JobView>("select kind, pull_number, head_sha, shared_generation, evaluation_generation, state, run_at_ms, merges from jobs order by kind, pull_number, head_sha"));
  const heads = (store: Store) => store.execute(() => all<{ head_sha: string; shared_generation: number; invalidated_generation: number }>("select head_sha, shared_generation, invalidated_generation from head_generations order by head_sha"));
  const leaseRow = (store: Store) => store.execute(() => one<{ owner: string; expires_at_ms: number }>("select owner, expires_at_ms from leases where name = $1", RECONCILER_LEASE_NAME));

  test("an open pull request without work gets an exact-head invalidation and an evaluation, and the head's S advances with them", async () => {
    const store = await setup();
    let woken = 0;
    const t = make(store, scriptedForge({ pulls: () => whole([pullItem(1, HEAD_A), pullItem(2, HEAD_B), pullItem(3, HEAD_B)]) }), { onQueued: () => woken++ });
    const report = await t.reconciler.runOnce();
    expect(report).toMatchObject({ result: "success", problems: [], installations: 1, repositories: 1, pullRequests: 3, queued: 3 });
    const rows = await jobs(store);
    expect(rows.map((r) => [r.kind, r.pull_number, r.head_sha, r.shared_generation, r.evaluation_generation])).toEqual([
      ["evaluation", 1, HEAD_A, null, 1],
      ["evaluation", 2, HEAD_B, null, 1],
      ["evaluation", 3, HEAD_B, null, 1],
      ["head_invalidation", null, HEAD_A, 1, null],
      ["head_invalidation", null, HEAD_B, 1, null],
    ]);
    // One advance per head (a head shared by two pull requests advances once); I stays behind until the invalidation job runs.
    expect(await heads(store)).toEqual([{ head_sha: HEAD_A, shared_generation: 1, invalidated_generation: 0 }, { head_sha: HEAD_B, shared_generation: 1, invalidated_generation: 0 }]);
    expect(woken).toBe(1);
    expect(await t.count("success")).toBe(1);
    expect(await t.lastSuccess()).toBe(t.clock.now() / 1000);
  });

  test("a complete listing replaces the repository's open-pull-request index; an incomplete one leaves it as it was", async () => {
    const store = await setup();
    const index = () => store.execute(() => all<{ pull_number: number; head_sha: string; base_ref: string | null }>("select pull_number, head_sha, base_ref from open_pull_requests order by pull_number"))
      .then((rows) => rows.map((row) => [Number(row.pull_number), row.head_sha, row.base_ref]));
    let listing: () => ListResult = () => whole([pullItem(1, HEAD_A, { base: { ref: "main", sha: HEAD_B } }), pullItem(2, HEAD_B)]);
    const t = make(store, scriptedForge({ pulls: () => listing() }), { owner: "one-process" });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect(await index()).toEqual([[1, HEAD_A, "main"], [2, HEAD_B, null]]);
    listing = () => ({ complete: false, cause: "transient", detail: "status 502", retryAfterMs: null });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial" });
    expect(await index()).toEqual([[1, HEAD_A, "main"], [2, HEAD_B, null]]);
    t.clock.advance(1_000);
    listing = () => whole([pullItem(2, HEAD_A, { base: { ref: "dev", sha: HEAD_B } })]);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect(await index()).toEqual([[2, HEAD_A, "dev"]]);
  });

  test("existing active or delayed work is left unchanged", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({ pulls: () => whole([pullItem(1, HEAD_A), pullItem(2, HEAD_B)]) }));
    await t.reconciler.runOnce();
    // Pull request 1's evaluation is leased by a worker; pull request 2's evaluation is gone but its head's invalidation is delayed.
    await store.execute(function* () {
      yield* run("update jobs set state = 'leased', lease_owner = 'w', lease_expires_at_ms = $1 where kind = 'evaluation' and pull_number = 1", t.clock.now() + 30_000);
      yield* run("delete from jobs where kind = 'evaluation' and pull_number = 2");
      yield* run("update jobs set run_at_ms = $1 where kind = 'head_invalidation'", t.clock.now() + 3_600_000);
    });
    const before = await jobs(store);
    t.clock.advance(1_000);
    const report = await t.reconciler.runOnce();
    expect(report).toMatchObject({ result: "success", queued: 0 });
    expect(await jobs(store)).toEqual(before);
    expect(await heads(store)).toEqual([{ head_sha: HEAD_A, shared_generation: 1, invalidated_generation: 0 }, { head_sha: HEAD_B, shared_generation: 1, invalidated_generation: 0 }]);
  });

  test("work that finished is queued again on the next scan, with a new generation", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({}));
    await t.reconciler.runOnce();
    await store.execute(() => run("delete from jobs"));
    t.clock.advance(INTERVAL_MS);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", queued: 1 });
    expect((await jobs(store)).map((r) => [r.kind, r.shared_generation ?? r.evaluation_generation])).toEqual([["evaluation", 2], ["head_invalidation", 2]]);
  });

  /** A worker's published evaluation of each listed pull request, as the listing shows it now (what the worker records). */
  const evaluated = (store: Store, items: Array<Record<string, unknown>>, now: number) => store.execute(function* () {
    yield* run("delete from jobs");
    for (const item of items) {
      const head = item.head as { sha: string };
      const base = item.base as { sha: string };
      yield* recordEvaluation({ installationId: 1, repositoryId: 10, pullNumber: item.number as number, headSha: head.sha, baseSha: base.sha, updatedAtMs: Date.parse(item.updated_at as string), evaluationGeneration: 1, authoritySubjects: null, now });
    }
  });

  test("a pull request whose listing shows what its last evaluation saw is not queued again; another updated_at, head or base commit queues it", async () => {
    const store = await setup();
    const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
    let items = [1, 2, 3, 4].map((n) => pullItem(n, HEAD_A, { base: { ref: "main", sha: HEAD_B }, updated_at: at(n) }));
    const t = make(store, scriptedForge({ pulls: () => whole(items) }));
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 4, unchanged: 0, queued: 4 });
    await evaluated(store, items, t.clock.now());
    t.clock.advance(INTERVAL_MS);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 4, unchanged: 4, queued: 0 });
    expect(await jobs(store)).toEqual([]);

    // A review whose delivery was lost (updated_at moved), a push (head), a base move, and one left as it was.
    items = [
      pullItem(1, HEAD_A, { base: { ref: "main", sha: HEAD_B }, updated_at: at(60) }),
      pullItem(2, HEAD_C, { base: { ref: "main", sha: HEAD_B }, updated_at: at(2) }),
      pullItem(3, HEAD_A, { base: { ref: "main", sha: HEAD_C }, updated_at: at(3) }),
      items[3]!,
    ];
    t.clock.advance(INTERVAL_MS);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 4, unchanged: 1, queued: 3 });
    expect((await jobs(store)).filter((r) => r.kind === "evaluation").map((r) => r.pull_number)).toEqual([1, 2, 3]);
  });

  test("an unchanged pull request is evaluated again when its full-sweep slot comes round, not before", async () => {
    const store = await setup();
    const HOUR = 3_600_000;
    const items = [pullItem(5, HEAD_A, { base: { ref: "main", sha: HEAD_B }, updated_at: "2026-01-01T00:00:00Z" })];
    const t = make(store, scriptedForge({ pulls: () => whole(items) }), { fullSweepMs: HOUR });
    const slot = latestSlotMs(t.clock.now(), sweepOffsetMs(10, 5, HOUR), HOUR) + HOUR; // the next slot instant
    await evaluated(store, items, t.clock.now());
    t.clock.advance(slot - t.clock.now() - 1);
    expect(await t.reconciler.runOnce()).toMatchObject({ unchanged: 1, queued: 0 });
    t.clock.advance(1);
    expect(await t.reconciler.runOnce()).toMatchObject({ unchanged: 0, queued: 1 });
    await evaluated(store, items, t.clock.now());
    t.clock.advance(HOUR - 1);
    expect(await t.reconciler.runOnce()).toMatchObject({ unchanged: 1, queued: 0 });
  });

  test("an attempt prunes evaluation records no scan renewed for two sweep periods", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({ pulls: () => whole([]) }), { fullSweepMs: 3_600_000 });
    const item = pullItem(9, HEAD_A, { base: { ref: "main", sha: HEAD_B }, updated_at: "2026-01-01T00:00:00Z" });
    await evaluated(store, [item], t.clock.now() - 2 * 3_600_000 - 1);
    await evaluated(store, [{ ...item, number: 8 }], t.clock.now() - 2 * 3_600_000);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect((await store.execute(() => readEvaluations(10))).map((r) => r.pull_number)).toEqual([8]);
  });

  test("suspended installations, archived repositories and the organization policy repository are not scanned", async () => {
    const store = await setup();
    const forge = scriptedForge({
      installations: () => whole([installationItem(1), installationItem(2, { suspended_at: "2026-11-01T10:00:00+01:00" })]),
      repositories: () => whole([repositoryItem(10, "web"), repositoryItem(11, "old", { archived: true }), repositoryItem(12, ".Forge")]),
    });
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", installations: 1, repositories: 1 });
    expect(forge.calls).toEqual(["installations", "repositories:1", "pulls:1:acme/web", "closed:1:acme/web"]);
  });

  // Each malformed response: its fixed reason code in the log (never the value), the attempt's result, and no work.
  const SENTINEL = "sentinel-value-7f3a";
  const cases: Array<[string, Partial<Parameters<typeof scriptedForge>[0]>, string, "failure" | "partial"]> = [
    ["installation list not a list", { installations: notList }, "installations_not_list", "failure"],
    ["installation list with a non-object item", { installations: () => whole([installationItem(1), SENTINEL]) }, "installation_not_object", "failure"],
    ["installation ID a string", { installations: () => whole([installationItem(1), installationItem(SENTINEL as never)]) }, "installation_id_invalid", "failure"],
    ["installation ID a boolean", { installations: () => whole([installationItem(true as never)]) }, "installation_id_invalid", "failure"],
    ["installation ID null", { installations: () => whole([installationItem(null as never)]) }, "installation_id_invalid", "failure"],
    ["installation ID zero", { installations: () => whole([installationItem(0)]) }, "installation_id_invalid", "failure"],
    ["installation ID negative", { installations: () => whole([installationItem(-5)]) }, "installation_id_invalid", "failure"],
    ["suspended_at without a zone", { installations: () => whole([installationItem(1, { suspended_at: "2026-11-01T10:00:00" })]) }, "installation_suspended_at_invalid", "failure"],
    ["suspended_at not a timestamp", { installations: () => whole([installationItem(1, { suspended_at: SENTINEL })]) }, "installation_suspended_at_invalid", "failure"],
    ["repository list not a list", { repositories: notList }, "repositories_not_list", "partial"],
    ["repository list with a non-object item", { repositories: () => whole([repositoryItem(10, "web"), 7]) }, "repository_not_object", "partial"],
    ["archived a string", { repositories: () => whole([repositoryItem(10, "web", { archived: SENTINEL })]) }, "repository_archived_invalid", "partial"],
    ["archived null", { repositories: () => whole([repositoryItem(10, "web", { archived: null })]) }, "repository_archived_invalid", "partial"],
    ["repository ID a string", { repositories: () => whole([repositoryItem(SENTINEL as never, "web")]) }, "repository_id_invalid", "partial"],
    ["pull-request list not a list", { pulls: notList }, "pull_requests_not_list", "partial"],
    ["pull-request list with a non-object item", { pulls: () => whole([pullItem(1, HEAD_A), SENTINEL]) }, "pull_request_not_object", "partial"],
    ["pull-request number a string", { pulls: () => whole([pullItem(1, HEAD_A), pullItem(SENTINEL as never, HEAD_B)]) }, "pull_request_number_invalid", "partial"],
    ["pull-request number a boolean", { pulls: () => whole([pullItem(true as never, HEAD_A)]) }, "pull_request_number_invalid", "partial"],
    ["pull-request number null", { pulls: () => whole([pullItem(null as never, HEAD_A)]) }, "pull_request_number_invalid", "partial"],
    ["pull-request number zero", { pulls: () => whole([pullItem(0, HEAD_A)]) }, "pull_request_number_invalid", "partial"],
    ["pull-request number negative", { pulls: () => whole([pullItem(-2, HEAD_A)]) }, "pull_request_number_invalid", "partial"],
    ["head not an object", { pulls: () => whole([pullItem(1, HEAD_A), { ...pullItem(2, HEAD_B), head: SENTINEL }]) }, "pull_request_head_invalid", "partial"],
    ["head missing", { pulls: () => whole([{ number: 1, state: "open" }]) }, "pull_request_head_invalid", "partial"],
    ["head ID uppercase", { pulls: () => whole([pullItem(1, HEAD_A.toUpperCase())]) }, "pull_request_head_sha_invalid", "partial"],
    ["head ID abbreviated", { pulls: () => whole([pullItem(1, "abc1234")]) }, "pull_request_head_sha_invalid", "partial"],
    ["head ID of 50 hex digits", { pulls: () => whole([pullItem(1, "a".repeat(50))]) }, "pull_request_head_sha_invalid", "partial"],
  ];
  test.each(cases)("%s: rejected with its reason code and no work", async (_name, script, reason, result) => {
    const store = await setup();
    const t = make(store, scriptedForge(script));
    const report = await t.reconciler.runOnce();
    expect(report.result).toBe(result);
    expect(report.problems).toEqual([reason]);
    expect(report.queued).toBe(0);
    expect(await jobs(store)).toEqual([]);
    expect(await heads(store)).toEqual([]);
    expect(t.lines.some((l) => l.reason === reason)).toBe(true);
    expect(t.text()).not.toContain(SENTINEL);
    expect(await t.count(result)).toBe(1);
    expect(await t.lastSuccess()).toBe(0);
  });

  test("a rejected installation is skipped and the scan goes on with the next one (partial)", async () => {
    const store = await setup();
    const forge = scriptedForge({
      installations: () => whole([installationItem(1), installationItem(2)]),
      repositories: (id) => (id === 1 ? whole([repositoryItem(10, "web", { archived: "no" })]) : whole([repositoryItem(20, "api")])),
      pulls: () => whole([pullItem(4, HEAD_C)]),
    });
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["repository_archived_invalid"], queued: 1 });
    expect((await jobs(store)).map((r) => [r.kind, r.head_sha])).toEqual([["evaluation", HEAD_C], ["head_invalidation", HEAD_C]]);
  });

  test("an incomplete installation list is a failure; an incomplete repository or pull-request list makes the attempt partial", async () => {
    const store = await setup();
    const gap = (): ListResult => ({ complete: false, cause: "transient", detail: "status 502", retryAfterMs: null });
    const same = { owner: "one-process" };
    expect(await make(store, scriptedForge({ installations: gap }), same).reconciler.runOnce()).toMatchObject({ result: "failure", problems: ["installations_unavailable"] });
    expect(await make(store, scriptedForge({ repositories: gap }), same).reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["repositories_unavailable"] });
    expect(await make(store, scriptedForge({ pulls: gap }), same).reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["pull_requests_unavailable"] });
  });

  test("lease loss mid-scan makes the attempt partial; work queued before it stays, nothing is queued after it", async () => {
    const store = await setup();
    let t!: ReturnType<typeof make>;
    const forge = scriptedForge({
      repositories: () => whole([repositoryItem(10, "web"), repositoryItem(11, "api"), repositoryItem(12, "docs")]),
      pulls: async (_i, _o, repo) => {
        // Another process takes the lease while this one reads the second repository's pull requests.
        if (repo === "api") await store.execute(() => run("update leases set owner = 'another-process' where name = $1", RECONCILER_LEASE_NAME));
        return whole([pullItem(1, repo === "web" ? HEAD_A : HEAD_B)]);
      },
    });
    t = make(store, forge);
    const report = await t.reconciler.runOnce();
    expect(report).toMatchObject({ result: "partial", problems: ["lease_lost"], queued: 1 });
    expect((await jobs(store)).map((r) => r.head_sha)).toEqual([HEAD_A, HEAD_A]);
    expect(forge.calls).not.toContain("pulls:1:acme/docs");
    expect(await t.count("partial")).toBe(1);
    expect(await t.lastSuccess()).toBe(0);
    expect((await leaseRow(store))?.owner).toBe("another-process");
  });

  test("a lease that expired during a slow forge call is lost: partial", async () => {
    const store = await setup();
    const clock = manualClock();
    const forge = scriptedForge({
      pulls: async () => {
        clock.advance(RECONCILER_LEASE_TTL_MS + 1);
        return whole([pullItem(1, HEAD_A)]);
      },
    });
    const t = make(store, forge, { clock });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["lease_lost"], queued: 0 });
    expect(await jobs(store)).toEqual([]);
  });

  test("a scan longer than the lease TTL keeps the lease: every installation and repository renews it", async () => {
    const store = await setup();
    const clock = manualClock();
    const forge = scriptedForge({
      repositories: () => whole([repositoryItem(10, "web"), repositoryItem(11, "api"), repositoryItem(12, "docs")]),
      pulls: async (_i, _o, repo) => {
        clock.advance(RECONCILER_LEASE_TTL_MS - 1_000);
        return whole([pullItem(1, repo === "web" ? HEAD_A : repo === "api" ? HEAD_B : HEAD_C)]);
      },
    });
    const t = make(store, forge, { clock });
    const expiries: number[] = [];
    const started = clock.now();
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", queued: 3 });
    expiries.push((await leaseRow(store))!.expires_at_ms);
    expect(clock.now() - started).toBeGreaterThan(RECONCILER_LEASE_TTL_MS * 2);
    // After a finished attempt the leader keeps the lease until its next attempt is due.
    expect(expiries[0]).toBe(clock.now() + INTERVAL_MS + RECONCILER_LEASE_TTL_MS);
  });

  test("a single forge listing longer than the lease TTL keeps the lease through the background renewal", async () => {
    const store = await setup();
    const clock = manualClock();
    let renewals = 0;
    const forge = scriptedForge({
      installations: async () => {
        // The listing takes two TTLs; each third of a TTL the background renewal extends the lease.
        for (let step = 0; step < 6; step++) {
          clock.advance(RECONCILER_LEASE_TTL_MS / 3);
          for (let i = 0; i < 2_000 && (await leaseRow(store))!.expires_at_ms !== clock.now() + RECONCILER_LEASE_TTL_MS; i++) await Bun.sleep(1);
          if ((await leaseRow(store))!.expires_at_ms === clock.now() + RECONCILER_LEASE_TTL_MS) renewals++;
        }
        return whole([installationItem(1)]);
      },
    });
    const t = make(store, forge, { clock });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", queued: 1 });
    expect(renewals).toBe(6);
    // The renewal timer is gone with the attempt.
    expect(clock.pending()).toBe(0);
  });

  test("the background renewal finding the lease gone cuts the forge call short: partial", async () => {
    const store = await setup();
    const clock = manualClock();
    const forge = scriptedForge({
      installations: () => {
        const signal = forge.signals.at(-1)!;
        return new Promise<ListResult>((resolve) => {
          signal.addEventListener("abort", () => resolve({ complete: false, cause: "transient", detail: "aborted", retryAfterMs: null }));
          void store.execute(() => run("update leases set owner = 'another-process' where name = $1", RECONCILER_LEASE_NAME)).then(() => clock.advance(RECONCILER_LEASE_TTL_MS / 3));
        });
      },
    });
    const t = make(store, forge, { clock });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["lease_lost"], queued: 0 });
    expect(forge.calls).toEqual(["installations"]);
  });

  test("every listing of a scan is background work for the forge request governor", async () => {
    const store = await setup();
    const forge = scriptedForge({ repositories: () => whole([repositoryItem(10, "web"), repositoryItem(11, "api")]) });
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect(forge.calls).toEqual(["installations", "repositories:1", "pulls:1:acme/web", "closed:1:acme/web", "pulls:1:acme/api", "closed:1:acme/api"]);
    expect(forge.priorities).toEqual(["background", "background", "background", "background", "background", "background"]);
  });

  // The merge recovery's closed page (DESIGN 3.10) is asked only when a pull request may have closed unseen: the first scan,
  // a listing that changed or was incomplete, a recovery that failed, or the repository's periodic recovery.
  const LISTINGS = ["installations", "repositories:1", "pulls:1:acme/web"];
  const ASKED = [...LISTINGS, "closed:1:acme/web"];
  async function scanCalls(t: ReturnType<typeof make>, forge: ReturnType<typeof scriptedForge>, expected: Record<string, unknown> = { result: "success" }) {
    const from = forge.calls.length;
    expect(await t.reconciler.runOnce()).toMatchObject(expected);
    return forge.calls.slice(from);
  }

  test("a steady scan of an unchanged repository asks no recently closed pull requests; a changed page or an incomplete listing makes the scan ask", async () => {
    const store = await setup();
    let pulls: ListResult = whole([pullItem(1, HEAD_A), pullItem(2, HEAD_A)]);
    const forge = scriptedForge({ pulls: () => pulls });
    const t = make(store, forge);
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
    pulls = whole([pullItem(2, HEAD_A)]);
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
    pulls = { complete: false, cause: "transient", detail: "status 502", retryAfterMs: null };
    expect(await scanCalls(t, forge, { result: "partial", problems: ["pull_requests_unavailable"] })).toEqual(ASKED);
    pulls = whole([pullItem(2, HEAD_A)]);
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
  });

  test("a recovery that failed stays owed, however unchanged the listing, until one succeeds", async () => {
    const store = await setup();
    let failing = true;
    const forge = scriptedForge({
      closed: () => {
        if (failing) throw Object.assign(new Error("status 502"), { kind: "transient" });
        return { notModified: true, items: null };
      },
    });
    const t = make(store, forge);
    const partial = { result: "partial", problems: ["closed_pull_requests_unavailable"] };
    expect(await scanCalls(t, forge, partial)).toEqual(ASKED);
    expect(await scanCalls(t, forge, partial)).toEqual(ASKED);
    failing = false;
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
  });

  test("a listing cut short by a lost lease after a page changed leaves the recovery owed: the next scan asks, though its pages then answer 304", async () => {
    const store = await setup();
    let pulls = [pullItem(1, HEAD_A), pullItem(2, HEAD_A)];
    let takeLease = false;
    const forge = scriptedForge({
      pulls: async () => {
        if (takeLease) await store.execute(() => run("update leases set owner = 'another-process' where name = $1", RECONCILER_LEASE_NAME));
        return whole(pulls);
      },
    });
    const t = make(store, forge);
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    pulls = [pullItem(2, HEAD_A)];
    takeLease = true;
    expect(await scanCalls(t, forge, { result: "partial", problems: ["lease_lost"] })).toEqual(LISTINGS);
    takeLease = false;
    await store.execute(() => run("delete from leases where name = $1", RECONCILER_LEASE_NAME));
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
  });

  test("an unchanged repository's recovery is due once per period less its fixed stagger, and recovers a merge the open listing never showed", async () => {
    const store = await setup();
    const clock = manualClock();
    let closed: { notModified: boolean; items: unknown } = { notModified: true, items: null };
    const forge = scriptedForge({ closed: () => closed });
    const t = make(store, forge, { clock });
    const due = MERGE_RECOVERY_PERIOD_MS - recoveryStaggerMs(10);
    expect(due).toBeGreaterThan(MERGE_RECOVERY_PERIOD_MS / 2);
    expect(due).toBeLessThanOrEqual(MERGE_RECOVERY_PERIOD_MS);
    expect(await scanCalls(t, forge)).toEqual(ASKED);
    clock.advance(due - 1);
    // Opened and merged since the last scan: the open listing is unchanged, so only the periodic recovery finds it.
    closed = { notModified: false, items: [{ number: 7, head: { sha: HEAD_C }, merged_at: new Date(clock.now()).toISOString(), merge_commit_sha: HEAD_B.slice(0, 40) }] };
    expect(await scanCalls(t, forge)).toEqual(LISTINGS);
    clock.advance(1);
    expect(await scanCalls(t, forge, { result: "success", mergesRecovered: 1 })).toEqual(ASKED);
    expect(await store.execute(() => all<{ pull_number: number }>("select pull_number from merge_records"))).toEqual([{ pull_number: 7 }]);
    // The period starts again from that recovery.
    clock.advance(due - 1);
    expect(await scanCalls(t, forge, { result: "success", mergesRecovered: 0 })).toEqual(LISTINGS);
  });

  test("a repository no longer scanned is forgotten after a successful attempt; when it is scanned again its recovery is due at once", async () => {
    const store = await setup();
    let repositories = [repositoryItem(10, "web"), repositoryItem(11, "api")];
    const forge = scriptedForge({ repositories: () => whole(repositories) });
    const t = make(store, forge);
    expect((await scanCalls(t, forge)).filter((c) => c.startsWith("closed:"))).toEqual(["closed:1:acme/web", "closed:1:acme/api"]);
    expect((await scanCalls(t, forge)).filter((c) => c.startsWith("closed:"))).toEqual([]);
    repositories = [repositoryItem(10, "web")];
    expect((await scanCalls(t, forge)).filter((c) => c.startsWith("closed:"))).toEqual([]);
    repositories = [repositoryItem(10, "web"), repositoryItem(11, "api")];
    expect((await scanCalls(t, forge)).filter((c) => c.startsWith("closed:"))).toEqual(["closed:1:acme/api"]);
  });

  test("concurrent elections on one database elect exactly one owner", async () => {
    await setup();
    const contenders = Array.from({ length: 6 }, (_, i) => ({ store: openOne(), lease: { name: "race", owner: `p${i}`, ttlMs: 60_000 } }));
    const won = await Promise.all(contenders.map((c) => c.store.execute(() => acquireElectionLease(c.lease, 1_000))));
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = contenders[won.indexOf(true)]!;
    // The owner re-acquires its own lease (extending it); the others still cannot, until it expires.
    expect(await winner.store.execute(() => acquireElectionLease(winner.lease, 2_000))).toBe(true);
    const loser = contenders.find((c) => c !== winner)!;
    expect(await loser.store.execute(() => acquireElectionLease(loser.lease, 61_999))).toBe(false);
    expect(await loser.store.execute(() => acquireElectionLease(loser.lease, 62_001))).toBe(true);
    expect(await winner.store.execute(() => renewElectionLease(winner.lease, 62_002))).toBe(false);
    expect(await winner.store.execute(() => releaseElectionLease(winner.lease))).toBe(false);
    expect(await loser.store.execute(() => readElectionLease("race"))).toMatchObject({ owner: loser.lease.owner, acquired_at_ms: 62_001 });
  });

  test("a process that observes another lease owner records no attempt and reads nothing from the forge", async () => {
    const store = await setup();
    const forge = scriptedForge({});
    const t = make(store, forge);
    await store.execute(() => run("insert into leases (name, owner, expires_at_ms, acquired_at_ms) values ($1, 'another-process', $2, $3)", RECONCILER_LEASE_NAME, t.clock.now() + 10_000, t.clock.now()));
    expect((await t.reconciler.runOnce()).result).toBe("unelected");
    expect(forge.calls).toEqual([]);
    for (const result of ["success", "partial", "failure"]) expect(await t.count(result)).toBe(0);
    // Once that lease expires, this process is elected.
    t.clock.advance(10_001);
    expect((await t.reconciler.runOnce()).result).toBe("success");
    expect((await leaseRow(store))?.owner).toBe(t.reconciler.owner);
  });

  test("two reconcilers never scan at once: one is elected, the other records nothing, until the leader stops or dies", async () => {
    const store = await setup();
    const other = openOne(); // a second process: its own connection (pool or file handle)
    const clock = manualClock();
    let active = 0;
    let maxActive = 0;
    const scanning = new Set<string>();
    const forgeFor = (owner: string) => scriptedForge({
      installations: async () => {
        scanning.add(owner);
        active = scanning.size;
        maxActive = Math.max(maxActive, active);
        await Bun.sleep(5);
        return whole([installationItem(1)]);
      },
    });
    const a = make(store, forgeFor("a"), { clock, owner: "process-a" });
    const b = make(other, forgeFor("b"), { clock, owner: "process-b" });
    const attempt = async (t: typeof a, owner: string) => {
      const report = await t.reconciler.runOnce();
      scanning.delete(owner);
      return report.result;
    };
    const results: string[] = [];
    for (let round = 0; round < 10; round++) {
      results.push(...(await Promise.all([attempt(a, "a"), attempt(b, "b")])));
      clock.advance(INTERVAL_MS);
    }
    expect(maxActive).toBe(1);
    expect(results.filter((r) => r === "success")).toHaveLength(10);
    expect(results.filter((r) => r === "unelected")).toHaveLength(10);
    const leader = (await leaseRow(store))!.owner;
    const [lead, follow] = leader === "process-a" ? [a, b] : [b, a];
    expect(await lead.count("success")).toBe(10);
    expect(await follow.count("success") + (await follow.count("partial")) + (await follow.count("failure"))).toBe(0);

    // The leader dies without releasing (the clock already moved one interval past its last attempt): the follower waits for
    // the lease to expire (one interval plus the TTL after that attempt), then leads.
    expect((await follow.reconciler.runOnce()).result).toBe("unelected");
    clock.advance(RECONCILER_LEASE_TTL_MS + 1);
    expect((await follow.reconciler.runOnce()).result).toBe("success");
    expect((await leaseRow(store))!.owner).toBe(follow.reconciler.owner);
    // A graceful stop releases the lease at once.
    await follow.reconciler.stop();
    expect(await leaseRow(store)).toBeNull();
    expect((await lead.reconciler.runOnce()).result).toBe("success");
  });

  test("graceful shutdown during an elected attempt records partial and releases the lease", async () => {
    const store = await setup();
    const reached = deferred();
    const forge = scriptedForge({
      pulls: () => {
        reached.resolve();
        const signal = forge.signals.at(-1)!;
        return new Promise<ListResult>((resolve) => signal.addEventListener("abort", () => resolve({ complete: false, cause: "transient", detail: "aborted", retryAfterMs: null })));
      },
    });
    const t = make(store, forge);
    t.reconciler.start();
    expect(t.reconciler.alive() && t.reconciler.ready()).toBe(true);
    await reached.promise;
    await t.reconciler.stop();
    expect(await t.count("partial")).toBe(1);
    expect(await t.count("success")).toBe(0);
    expect(t.lines.some((l) => l.reason === "shutdown")).toBe(true);
    expect(await leaseRow(store)).toBeNull();
    expect(t.reconciler.alive()).toBe(false);
  });

  test("an idle or unelected shutdown records nothing", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({}));
    t.reconciler.start();
    await t.reconciler.runOnce(); // the startup attempt
    await t.reconciler.stop(); // idle: between attempts
    expect([await t.count("success"), await t.count("partial"), await t.count("failure")]).toEqual([1, 0, 0]);

    await store.execute(() => run("insert into leases (name, owner, expires_at_ms, acquired_at_ms) values ($1, 'another-process', $2, $3)", RECONCILER_LEASE_NAME, t.clock.now() + 10_000_000, t.clock.now()));
    const u = make(store, scriptedForge({}));
    u.reconciler.start();
    await u.reconciler.runOnce();
    await u.reconciler.stop();
    expect([await u.count("success"), await u.count("partial"), await u.count("failure")]).toEqual([0, 0, 0]);
    expect((await leaseRow(store))?.owner).toBe("another-process");
  });

  test("the loop runs at start and then once per interval of the injected clock", async () => {
    const store = await setup();
    const forge = scriptedForge({});
    const t = make(store, forge);
    const scans = () => forge.calls.filter((c) => c === "installations").length;
    const timerSet = async () => {
      for (let i = 0; i < 1_000 && t.clock.pending() === 0; i++) await Bun.sleep(0);
      expect(t.clock.pending()).toBe(1);
    };
    t.reconciler.start();
    await t.reconciler.runOnce(); // joins the startup attempt
    expect(scans()).toBe(1);
    await timerSet();
    t.clock.advance(INTERVAL_MS - 1);
    expect(scans()).toBe(1);
    t.clock.advance(1);
    await t.reconciler.runOnce(); // joins the attempt the timer started
    expect(scans()).toBe(2);
    expect(await t.count("success")).toBe(2);
    await timerSet();
    await t.reconciler.stop();
    expect(t.clock.pending()).toBe(0);
  });

  test("many open pull requests are queued in bounded transactions (one a listing page), all of them", async () => {
    const store = await setup();
    const pulls = Array.from({ length: RECONCILE_QUEUE_BATCH * 2 + 50 }, (_, i) => pullItem(i + 1, (i + 1).toString(16).padStart(40, "0")));
    let woken = 0;
    const t = make(store, scriptedForge({ pulls: () => whole(pulls) }), { onQueued: () => woken++ });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", queued: pulls.length });
    expect(woken).toBe(Math.ceil(pulls.length / 100));
    expect(await store.execute(() => all("select id from jobs where kind = 'evaluation'"))).toHaveLength(pulls.length);
  });

  test("a repository's listing is streamed: each page's work is queued before the next page is asked for", async () => {
    const store = await setup();
    const head = (n: number) => n.toString(16).padStart(40, "0");
    const queuedWhenAsked: number[] = [];
    const forge: ReconcileForge = {
      ...scriptedForge({}),
      async streamOpenPullRequestItems(_installationId, _owner, _repo, _max, onPage) {
        for (let page = 1; page <= 3; page++) {
          queuedWhenAsked.push((await store.execute(() => all("select id from jobs where kind = 'evaluation'"))).length);
          await onPage(Array.from({ length: 100 }, (_, i) => pullItem((page - 1) * 100 + i + 1, head((page - 1) * 100 + i + 1))), { pass: 0, page });
        }
        return { complete: true, count: 300 };
      },
    };
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 300, queued: 300 });
    expect(queuedWhenAsked).toEqual([0, 100, 200]);
  });

  test("a pull request closed after a restarted listing fetched its first page again does not come back into the index", async () => {
    const store = await setup();
    const clock = manualClock();
    const close = (number: number, headSha: string) => store.execute(() => acceptDirectTrigger({
      installationId: 1, repositoryId: 10, owner: "acme", name: "web", deliveryId: `close-${number}`, event: "pull_request", action: "closed",
      pullNumber: number, headSha, now: clock.now(), index: { kind: "delete" },
    }));
    const forge: ReconcileForge = {
      ...scriptedForge({}),
      async streamOpenPullRequestItems(_installationId, _owner, _repo, _max, onPage) {
        await onPage([pullItem(1, HEAD_A)], { pass: 0, page: 1 });
        clock.advance(1_000);
        // The list changed under the reading: it is read again from page 1, fetched now, naming #5 open; #5 closes (its
        // delivery accepted) before the page is handed over.
        const refetched = [pullItem(1, HEAD_A), pullItem(5, HEAD_B)];
        clock.advance(1_000);
        await close(5, HEAD_B);
        clock.advance(1_000);
        await onPage(refetched, { pass: 1, page: 1 });
        return { complete: true, count: 2 };
      },
    };
    const t = make(store, forge, { clock });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect(await store.execute(() => readIndexedOnHead(10, HEAD_B))).toEqual([]);
    expect(await store.execute(() => readIndexedOnHead(10, HEAD_A))).toEqual([1]);
  });

  test("open pull requests are bounded per installation: a repository is listed up to what the earlier ones left, and over it the scan is partial", async () => {
    const store = await setup();
    const maxes: Record<string, number> = {};
    const head = (n: number) => n.toString(16).padStart(40, "0");
    const forge: ReconcileForge = {
      ...scriptedForge({ repositories: () => whole([repositoryItem(10, "big"), repositoryItem(11, "next")]) }),
      async streamOpenPullRequestItems(_installationId, _owner, repo, max, onPage) {
        maxes[repo] = max;
        if (repo === "next") return { complete: false, cause: "over_bound", detail: `more than ${max} items` };
        for (let page = 1; page <= 2; page++) await onPage(Array.from({ length: 100 }, (_, i) => pullItem((page - 1) * 100 + i + 1, head((page - 1) * 100 + i + 1))), { pass: 0, page });
        return { complete: true, count: 200 };
      },
    };
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["pull_requests_unavailable"], pullRequests: 200, queued: 200 });
    expect(MAX_RECONCILE_PULL_REQUESTS).toBe(100_000);
    expect(maxes).toEqual({ big: MAX_RECONCILE_PULL_REQUESTS, next: MAX_RECONCILE_PULL_REQUESTS - 200 });
    expect(t.text()).toContain('"cause":"over_bound"');
  });

  test("a page that breaks the list's promises after earlier pages stops the repository's listing: the attempt is partial, and what was queued stays", async () => {
    const store = await setup();
    const head = (n: number) => n.toString(16).padStart(40, "0");
    const forge: ReconcileForge = {
      ...scriptedForge({}),
      async streamOpenPullRequestItems(_installationId, _owner, _repo, _max, onPage) {
        await onPage(Array.from({ length: 100 }, (_, i) => pullItem(i + 1, head(i + 1))), { pass: 0, page: 1 });
        await onPage([pullItem(101, head(101)), { number: 102, head: { sha: "not-a-sha" } }], { pass: 0, page: 2 });
        return { complete: true, count: 102 };
      },
    };
    const t = make(store, forge);
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["pull_request_head_sha_invalid"], queued: 100 });
    // The rejected page is acted on not at all: only page 1's pull requests have work.
    expect((await jobs(store)).filter((r) => r.kind === "evaluation").map((r) => r.pull_number)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
  });

  test("pruning removes exactly the delivery IDs older than the retention", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({ installations: () => whole([]) }));
    const now = t.clock.now();
    const cutoff = now - RETENTION_MS;
    await store.execute(function* () {
      for (let i = 0; i < 2_345; i++) yield* run("insert into webhook_deliveries (delivery_id, event, received_at_ms) values ($1, 'pull_request', $2)", `old-${i}`, cutoff - 1 - i);
      for (const [id, at] of [["at-cutoff", cutoff], ["just-inside", cutoff + 1], ["recent", now - 1], ["now", now]] as const) {
        yield* run("insert into webhook_deliveries (delivery_id, event, received_at_ms) values ($1, 'pull_request', $2)", id, at);
      }
    });
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success", pruned: 2_345 });
    const left = await store.execute(() => all<{ delivery_id: string }>("select delivery_id from webhook_deliveries order by received_at_ms"));
    expect(left.map((r) => r.delivery_id)).toEqual(["at-cutoff", "just-inside", "recent", "now"]);
  });

  test("pruning removes the decision and merge records older than the decision retention, and no newer one", async () => {
    const store = await setup();
    const DAY = 86_400_000;
    const t = make(store, scriptedForge({ installations: () => whole([]) }), { decisionRetentionMs: 30 * DAY });
    const now = t.clock.now();
    const cutoff = now - 30 * DAY;
    const times = [cutoff - DAY, cutoff - 1, cutoff, now];
    for (const [i, at] of times.entries()) {
      await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ published_at: new Date(at).toISOString() }), sharedGeneration: i, digest: "d", token: null }));
      await store.execute(() => recordMerge({ installationId: 4, repositoryId: 40, repositoryFullName: "acme/web", pullNumber: i + 1, headSha: HEAD_A, mergeCommitSha: null, baseSha: null, mergedBy: null, mergedAtMs: at, recovered: false, now: at }));
    }
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    const decisions = await store.execute(() => all<{ published_at_ms: number }>("select published_at_ms from decision_records order by published_at_ms"));
    const merges = await store.execute(() => all<{ recorded_at_ms: number }>("select recorded_at_ms from merge_records order by recorded_at_ms"));
    expect(decisions.map((r) => Number(r.published_at_ms))).toEqual([cutoff, now]);
    expect(merges.map((r) => Number(r.recorded_at_ms))).toEqual([cutoff, now]);
  });

  test("without a decision retention given, records are kept the default 400 days", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({ installations: () => whole([]) }));
    const now = t.clock.now();
    for (const [i, days] of [401, 399].entries()) {
      await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ published_at: new Date(now - days * 86_400_000).toISOString() }), sharedGeneration: i, digest: "d", token: null }));
    }
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "success" });
    expect(await store.execute(() => all("select id from decision_records"))).toHaveLength(1);
  });

  test("a process that is not elected prunes nothing", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({}));
    await store.execute(function* () {
      yield* run("insert into leases (name, owner, expires_at_ms, acquired_at_ms) values ($1, 'another-process', $2, $3)", RECONCILER_LEASE_NAME, t.clock.now() + 60_000, t.clock.now());
      yield* run("insert into webhook_deliveries (delivery_id, event, received_at_ms) values ('ancient', 'push', 1)");
    });
    expect((await t.reconciler.runOnce()).result).toBe("unelected");
    expect(await store.execute(() => all("select delivery_id from webhook_deliveries"))).toHaveLength(1);
  });

  test("the elected reconciler writes a checkpoint of the records added, at most once per ten minutes, whatever the forge answers", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({ installations: () => ({ complete: false, cause: "transient", detail: "unreachable" }) }));
    let n = 0;
    const decide = async () => {
      const token = `pending:${++n}`;
      await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ published_at: new Date(t.clock.now()).toISOString() }), sharedGeneration: n, digest: "d", token }));
      await store.execute(() => confirmDecision({ repositoryId: 40, headSha: sampleDecisionBody().head_sha, token, now: t.clock.now() }));
    };
    await decide();
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "failure", checkpointed: 1 });
    await decide();
    t.clock.advance(5 * 60_000);
    expect(await t.reconciler.runOnce()).toMatchObject({ checkpointed: 0 });
    t.clock.advance(5 * 60_000);
    expect(await t.reconciler.runOnce()).toMatchObject({ checkpointed: 1 });
    const written = await store.execute(() => readCheckpoints(0, 10));
    expect(written.map((c) => [c.id, c.count])).toEqual([[1, 1], [2, 1]]);
    expect(written[1]!.previous).toBe(written[0]!.hash);
    expect(t.text()).toContain("checkpoint of the decision and merge records written");
  });

  test("an election error is a failure", async () => {
    const store = await setup();
    const t = make(store, scriptedForge({}));
    await store.execute(() => run("drop table leases"));
    expect(await t.reconciler.runOnce()).toMatchObject({ result: "failure", problems: ["election_error"] });
    expect(await t.count("failure")).toBe(1);
  });
});
