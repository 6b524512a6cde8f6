import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, createTestDatabase, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import {
  acceptAuthorityEvent, acceptBaseRefPush, acceptDirectTrigger, all, claimNext, completeJob, leaseToken, markHeadInvalidated, migrateDatabase,
  openStore, readFences, releaseFastPathWork, releaseHeldWork, releaseLeases, rememberHeadCheck, renewLease, retryJob, run, type Store, supersedeAndQueue,
} from "./index.ts";
import { isBatch, isDialectQuestion, type Op, type Step } from "./op.ts";

/** The steps `op` sends on PostgreSQL, each answered with no rows (what the statements are, not what they find). */
function postgresSteps(op: Op<unknown>): Step[] {
  const steps: Step[] = [];
  let step = op.next();
  while (!step.done) {
    const value = step.value;
    if (isDialectQuestion(value)) step = op.next("postgresql");
    else {
      steps.push(value);
      step = op.next(isBatch(value) ? value.batch.map(() => null) : null);
    }
  }
  return steps;
}

/** The queue operations contract (spec "Queue rows"; DESIGN 4), one suite on both backends. */
const repo = { installationId: 9, repositoryId: 300, owner: "acme", name: "web" };
const head = "e".repeat(40);

describe.each(BACKENDS)("queue operations on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }
  const trigger = (deliveryId: string, pullNumber: number | null, headSha = head, now = 1000) =>
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId, event: "pull_request", action: "opened", pullNumber, headSha, now }));
  const claim = (owner: string, now: number, leaseMs = 1000) => store.execute(() => claimNext(owner, now, leaseMs));

  test("claims follow kind priority: exact-head invalidation, installation-wide, repository-wide, base-specific, evaluation", async () => {
    await open();
    await store.execute(() => acceptBaseRefPush({ ...repo, repositoryId: 301, deliveryId: "p1", action: null, baseRef: "main", now: 1 }));
    await trigger("d1", 5); // head invalidation + evaluation
    await store.execute(() => acceptAuthorityEvent({ deliveryId: "a1", event: "label", action: "edited", installationId: 9, scope: { kind: "repositories", repositories: [{ ...repo, repositoryId: 302 }] }, now: 3 }));
    await store.execute(() => acceptAuthorityEvent({ deliveryId: "a2", event: "team", action: "edited", installationId: 9, scope: { kind: "installation" }, now: 4 }));
    const kinds: string[] = [];
    for (let i = 0; i < 5; i++) kinds.push((await claim("w", 10_000))!.kind);
    expect(kinds).toEqual(["head_invalidation", "installation_fanout", "repository_fanout", "base_ref", "evaluation"]);
    expect(await claim("w", 10_000)).toBeNull();
  });

  test("within a kind, earlier run time first, then lower id; future rows wait", async () => {
    await open();
    await trigger("d1", 1, "1".repeat(40), 500);
    await trigger("d2", 2, "2".repeat(40), 100);
    await store.execute(function* () {
      yield* all("update jobs set run_at_ms = 5000 where pull_number = 2");
    });
    const invalidations = [await claim("w", 1000), await claim("w", 1000)];
    expect(invalidations.map((r) => r!.kind)).toEqual(["head_invalidation", "head_invalidation"]);
    for (const row of invalidations) await store.execute(() => completeJob(row!.id, "w", row!.merges, 1000));
    const first = (await claim("w", 1000))!;
    expect(first.pull_number).toBe(1);
    await store.execute(() => completeJob(first.id, "w", first.merges, 1000));
    expect(await claim("w", 1000)).toBeNull(); // pull 2 runs at 5000
    expect((await claim("w", 5000))!.pull_number).toBe(2);
  });

  const held = (deliveryId: string, pullNumber: number | null, now: number, heldUntil: number, headSha = head) =>
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId, event: "pull_request", action: "synchronize", pullNumber, headSha, now, heldUntil }));
  const runAt = (kind: string, headSha = head) => store.execute(function* () {
    return (yield* all<{ run_at_ms: number }>("select run_at_ms from jobs where kind = $1 and head_sha = $2", kind, headSha)).map((r) => Number(r.run_at_ms));
  });

  test("a delivery's work is held while its fast path is in flight: nothing is claimable before that fast path's deadline", async () => {
    await open();
    await held("d1", 4, 1000, 6000);
    expect(await claim("w", 5999)).toBeNull();
    expect((await claim("w", 6000, 60_000))!.kind).toBe("head_invalidation");
    expect((await claim("w", 6000))!.kind).toBe("evaluation");
  });

  test("an acceptance says whether its work is held: fresh rows are; rows it merged into that were already claimable are not", async () => {
    await open();
    expect(await held("d1", 4, 1000, 6000)).toMatchObject({ kind: "accepted", holdsWork: true });
    // A second delivery while the first fast path holds the rows: they stay held (at the earlier time).
    expect(await held("d2", 4, 1100, 7000)).toMatchObject({ kind: "accepted", holdsWork: true });
    await store.execute(() => releaseFastPathWork({ repositoryId: 300, headSha: head, pullNumber: 4, now: 1200 }));
    // Merged into claimable rows (due earlier, kept): nothing for its fast path to release.
    expect(await held("d3", 4, 1300, 8000)).toMatchObject({ kind: "accepted", holdsWork: false });
    expect(await runAt("head_invalidation")).toEqual([1200]);
    expect(await runAt("evaluation")).toEqual([1200]);
    // Only one of the two claimable: still held.
    await store.execute(() => run("update jobs set run_at_ms = 9000 where kind = 'evaluation'"));
    expect(await held("d4", 4, 1400, 8000)).toMatchObject({ kind: "accepted", holdsWork: true });
    // A leased row is the worker's, never held by an acceptance; a rerequest has only its head's row.
    await store.execute(() => run("update jobs set run_at_ms = 1000"));
    await claim("w", 1500, 60_000);
    await claim("w", 1500, 60_000);
    expect(await held("d5", 4, 1600, 9000)).toMatchObject({ kind: "accepted", holdsWork: false });
    expect(await held("d6", null, 1700, 9000, "5".repeat(40))).toMatchObject({ kind: "accepted", holdsWork: true });
  });

  test("a fast path that did not settle its head releases the head's invalidation and the pull request's evaluation", async () => {
    await open();
    await held("d1", 4, 1000, 6000);
    await store.execute(() => releaseFastPathWork({ repositoryId: 300, headSha: head, pullNumber: 4, now: 1300 }));
    expect(await runAt("head_invalidation")).toEqual([1300]);
    expect(await runAt("evaluation")).toEqual([1300]);
    await store.execute(() => releaseFastPathWork({ repositoryId: 300, headSha: head, pullNumber: 4, now: 1400 }));
    expect(await runAt("evaluation")).toEqual([1300]); // due earlier: kept
    // A rerequest (no pull request) releases its head's invalidation.
    await held("d2", null, 1000, 6000, "5".repeat(40));
    await store.execute(() => releaseFastPathWork({ repositoryId: 300, headSha: "5".repeat(40), pullNumber: null, now: 1400 }));
    expect(await runAt("head_invalidation", "5".repeat(40))).toEqual([1400]);
  });

  test("the held work of several fast paths is released at once: each head's invalidation and each pull request's evaluation, rows due earlier kept", async () => {
    await open();
    const other = "7".repeat(40);
    await held("d1", 4, 1000, 6000);
    await held("d2", 5, 1000, 6000); // the same head, another pull request
    await held("d3", 6, 1000, 6000, other);
    await held("d4", 8, 1000, 1100, "8".repeat(40)); // due before the release: kept
    await held("d5", 9, 1000, 6000, "9".repeat(40)); // not released: still held
    await store.execute(() => releaseHeldWork([
      { repositoryId: 300, headSha: other, pullNumber: 6 },
      { repositoryId: 300, headSha: head, pullNumber: 5 },
      { repositoryId: 300, headSha: head, pullNumber: 4 },
      { repositoryId: 300, headSha: head, pullNumber: 4 }, // a duplicate's retry of the same work
      { repositoryId: 300, headSha: "8".repeat(40), pullNumber: 8 },
    ], 1300));
    expect(await runAt("head_invalidation")).toEqual([1300]);
    expect(await runAt("head_invalidation", other)).toEqual([1300]);
    expect(await runAt("head_invalidation", "8".repeat(40))).toEqual([1100]);
    expect(await runAt("head_invalidation", "9".repeat(40))).toEqual([6000]);
    expect(await store.execute(function* () {
      return (yield* all<{ pull_number: number; run_at_ms: number }>("select pull_number, run_at_ms from jobs where kind = 'evaluation' order by pull_number")).map((r) => [Number(r.pull_number), Number(r.run_at_ms)]);
    })).toEqual([[4, 1300], [5, 1300], [6, 1300], [8, 1100], [9, 6000]]);
  });

  test("a fast path that settles the head releases its evaluation in the same operation, and leaves other pull requests' work held", async () => {
    await open();
    await held("d1", 4, 1000, 6000);
    await held("d2", 5, 1000, 6000, "6".repeat(40));
    const settled = await store.execute(() => markHeadInvalidated({ repositoryId: 300, headSha: head, generation: 1, now: 1200, releaseEvaluationOf: 4 }, { last: true }));
    expect(settled).toBe(true);
    expect(await runAt("head_invalidation")).toEqual([]);
    expect(await runAt("evaluation")).toEqual([1200]);
    expect(await runAt("evaluation", "6".repeat(40))).toEqual([6000]);
  });

  test("an acceptance answers the head's shared generation and the pull request's evaluation generation (none for a rerequest)", async () => {
    await open();
    expect(await trigger("d1", 4)).toEqual({ kind: "accepted", sharedGeneration: 1, evaluationGeneration: 1, rememberedCheckRunId: null, holdsWork: false });
    expect(await trigger("d2", 4)).toEqual({ kind: "accepted", sharedGeneration: 2, evaluationGeneration: 2, rememberedCheckRunId: null, holdsWork: false });
    expect(await trigger("d3", 5)).toEqual({ kind: "accepted", sharedGeneration: 3, evaluationGeneration: 1, rememberedCheckRunId: null, holdsWork: false });
    expect(await trigger("d4", null)).toEqual({ kind: "accepted", sharedGeneration: 4, evaluationGeneration: null, rememberedCheckRunId: null, holdsWork: false });
    expect(await trigger("d1", 4)).toEqual({ kind: "duplicate" });
  });

  test("an acceptance answers the check run remembered for its head, and none for a head without one", async () => {
    await open();
    await trigger("d1", 4);
    await store.execute(() => rememberHeadCheck({ ...repo, headSha: head, checkRunId: 7001, digest: null, now: 1000 }));
    expect(await trigger("d2", 4)).toMatchObject({ kind: "accepted", rememberedCheckRunId: 7001 });
    expect(await trigger("d3", null)).toMatchObject({ kind: "accepted", rememberedCheckRunId: 7001 });
    expect(await trigger("d4", 5, "4".repeat(40))).toMatchObject({ kind: "accepted", rememberedCheckRunId: null });
  });

  test("a delivery merged into pending work keeps that work's earlier run time", async () => {
    await open();
    await trigger("d1", 4, head, 1000); // due at once (no fast path)
    await held("d2", 4, 1100, 9000);
    expect(await runAt("head_invalidation")).toEqual([1000]);
    expect(await runAt("evaluation")).toEqual([1000]);
  });

  test("within a kind, webhook-driven evaluations are claimed before background ones queued earlier", async () => {
    await open();
    await store.execute(() => supersedeAndQueue(repo, [{ number: 1, headSha: "1".repeat(40) }, { number: 2, headSha: "2".repeat(40) }], 100, { background: true }));
    await trigger("d3", 3, "3".repeat(40), 200);
    const order: Array<[string, number | null, number]> = [];
    for (let row = await claim("w", 1000); row; row = await claim("w", 1000)) {
      order.push([row.kind, row.pull_number, row.background]);
      await store.execute(() => completeJob(row.id, "w", row.merges, 1000));
    }
    expect(order).toEqual([["head_invalidation", null, 0], ["evaluation", 3, 0], ["evaluation", 1, 1], ["evaluation", 2, 1]]);
  });

  test("a webhook merged into a background evaluation makes it webhook-driven; background work never makes a webhook's row background", async () => {
    await open();
    await store.execute(() => supersedeAndQueue(repo, [{ number: 1, headSha: "1".repeat(40) }], 100, { background: true }));
    await trigger("d1", 1, "1".repeat(40), 200);
    await trigger("d2", 2, "2".repeat(40), 200);
    await store.execute(() => supersedeAndQueue(repo, [{ number: 2, headSha: "2".repeat(40) }], 300, { background: true }));
    const rows = await store.execute(function* () {
      return yield* all<{ pull_number: number; background: number }>("select pull_number, background from jobs where kind = 'evaluation' order by pull_number");
    });
    expect(rows.map((r) => [Number(r.pull_number), Number(r.background)])).toEqual([[1, 0], [2, 0]]);
  });

  test("an expired lease is taken over, and the first holder can no longer renew or complete", async () => {
    await open();
    await trigger("d1", null);
    const first = (await claim("w1", 1000, 100))!;
    expect(await claim("w2", 1050, 100)).toBeNull();
    const second = (await claim("w2", 1200, 100))!;
    expect(second.id).toBe(first.id);
    expect(second.attempts).toBe(2);
    expect(await store.execute(() => renewLease(first.id, "w1", 1210, 100))).toBe(false);
    expect(await store.execute(() => completeJob(first.id, "w1", first.merges, 1210))).toBe("lost");
    expect(await store.execute(() => renewLease(second.id, "w2", 1210, 100))).toBe(true);
    expect(await store.execute(() => completeJob(second.id, "w2", second.merges, 1220))).toBe("done");
  });

  test("a lapsed lease lets its holder neither complete, retry nor renew the row, even before another claim took it", async () => {
    await open();
    await trigger("d1", null);
    const first = (await claim("w1", 1000, 100))!;
    // The holder stalled past its lease (1100): nobody claimed the row yet, but it is no longer the holder's to finish.
    expect(await store.execute(() => completeJob(first.id, "w1", first.merges, 1101))).toBe("lost");
    expect(await store.execute(() => retryJob(first.id, "w1", 1101, "forge_transient", 1101))).toBe(false);
    expect(await store.execute(() => renewLease(first.id, "w1", 1101, 100))).toBe(false);
    const next = (await claim("w2", 1101, 100))!;
    expect(next.id).toBe(first.id);
    expect(next.attempts).toBe(2);
    // Up to its expiry the lease is held: the new holder completes it.
    expect(await store.execute(() => completeJob(next.id, "w2", next.merges, 1201))).toBe("done");
  });

  test("work merged into a leased row makes completion put it back to pending instead of deleting it", async () => {
    await open();
    await trigger("d1", 4);
    await claim("w", 2000); // the invalidation
    const evaluation = (await claim("w", 2000))!;
    await trigger("d2", 4, head, 2001); // a new review while the evaluation runs
    expect(await store.execute(() => completeJob(evaluation.id, "w", evaluation.merges, 2002))).toBe("requeued");
    const again = (await claim("w", 2003))!;
    expect(again.id).toBe(evaluation.id);
    expect(again.evaluation_generation).toBe(2);
    expect(await store.execute(() => completeJob(again.id, "w", again.merges, 2004))).toBe("done");
  });

  test("a retried row is pending until its run time and keeps counting attempts", async () => {
    await open();
    await trigger("d1", null);
    const row = (await claim("w", 1000))!;
    expect(await store.execute(() => retryJob(row.id, "w", 9000, "forge_transient", 1001))).toBe(true);
    expect(await claim("w", 8999)).toBeNull();
    const again = (await claim("w", 9000))!;
    expect(again.attempts).toBe(2);
    const [stored] = await store.execute(function* () { return yield* all("select last_error, state from jobs"); });
    expect(stored).toEqual({ last_error: "forge_transient", state: "leased" });
  });

  test("shutdown hands back every lease the worker's claims hold as pending, runnable now, and no other worker's", async () => {
    await open();
    await trigger("d1", 3);
    await trigger("d2", 4, "f".repeat(40));
    await claim(leaseToken("w", 1), 1000);
    await claim(leaseToken("w", 2), 1000);
    const others = (await claim(leaseToken("w2", 1), 1000))!;
    expect(await store.execute(() => releaseLeases("w", 1500))).toBe(2);
    const released = [(await claim("other", 1500))!, (await claim("other", 1500))!];
    expect(released.map((row) => row.id)).not.toContain(others.id);
    expect(await claim("other", 1500)).not.toBeNull(); // the fourth row was never claimed
    expect(await store.execute(() => renewLease(others.id, leaseToken("w2", 1), 1500, 1000))).toBe(true);
  });

  test("fences report generations, epoch, pending fan-out and the lease", async () => {
    await open();
    await trigger("d1", 6);
    const invalidation = (await claim("w", 1000))!;
    await store.execute(() => completeJob(invalidation.id, "w", invalidation.merges, 1000));
    const evaluation = (await claim("w", 1000))!;
    const read = () => store.execute(() => readFences({ jobId: evaluation.id, owner: "w", installationId: 9, repositoryId: 300, headSha: head, pullNumber: 6, now: 1100 }));
    expect(await read()).toEqual({ shared: 1, invalidated: 0, evaluation: 1, authorityEpoch: 0, fanoutPending: false, leaseHeld: true });
    await store.execute(() => markHeadInvalidated({ repositoryId: 300, headSha: head, generation: 1, now: 1050 }));
    await store.execute(() => acceptAuthorityEvent({ deliveryId: "a1", event: "team", action: "edited", installationId: 9, scope: { kind: "installation" }, now: 1060 }));
    expect(await read()).toEqual({ shared: 1, invalidated: 1, evaluation: 1, authorityEpoch: 1, fanoutPending: true, leaseHeld: true });
  });

  test("superseding re-queues each pull request at the current epoch with a new evaluation generation", async () => {
    await open();
    await store.execute(() => acceptAuthorityEvent({ deliveryId: "a1", event: "team", action: "edited", installationId: 9, scope: { kind: "installation" }, now: 1 }));
    await store.execute(() => supersedeAndQueue(repo, [{ number: 1, headSha: head }, { number: 2, headSha: head }], 2));
    await store.execute(() => supersedeAndQueue(repo, [{ number: 1, headSha: head }], 3));
    const rows = await store.execute(function* () { return yield* all("select pull_number, evaluation_generation, authority_epoch from jobs where kind = 'evaluation' order by pull_number"); });
    expect(rows).toEqual([{ pull_number: 1, evaluation_generation: 2, authority_epoch: 1 }, { pull_number: 2, evaluation_generation: 1, authority_epoch: 1 }]);
  });

  test("no row ever becomes terminal through these operations", async () => {
    await open();
    await trigger("d1", 1);
    for (let i = 0; i < 5; i++) {
      const row = (await claim("w", 1000 + i * 10_000))!;
      await store.execute(() => retryJob(row.id, "w", 1000 + (i + 1) * 10_000, "forge_transient", 1000));
    }
    expect((await store.queueGauges()).deadJobs).toBe(0);
  });
});

describe("postgresql concurrency", () => {
  test("concurrent claimers never receive the same row", async () => {
    const database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    const stores = [openStore(database.target), openStore(database.target), openStore(database.target)];
    try {
      for (let i = 0; i < 30; i++) {
        await stores[0]!.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `d${i}`, event: "pull_request", action: "opened", pullNumber: i + 1, headSha: i.toString(16).padStart(40, "0"), now: 1 }));
      }
      const claimed = await Promise.all(stores.flatMap((s, n) => Array.from({ length: 25 }, () => s.execute(() => claimNext(`w${n}`, 1000, 60_000)))));
      const ids = claimed.filter((r) => r !== null).map((r) => r!.id);
      expect(ids).toHaveLength(60);
      expect(new Set(ids).size).toBe(60);
    } finally {
      for (const s of stores) await s.close();
      await database.drop();
    }
  });
});

describe("the webhook hot path's operations on PostgreSQL", () => {
  // A statement sent alone runs on the pipelining statement pool without BEGIN, COMMIT or a reserved connection
  // (PostgresStore.execute); anything more is a transaction, whose COMMIT goes alone under the answer's deadline.
  const alone = (steps: Step[]) => steps.length === 1 && isBatch(steps[0]!) && steps[0].last && steps[0].batch.length === 1;

  test("the acceptance of a pull request's delivery is one statement sent alone", () => {
    expect(alone(postgresSteps(acceptDirectTrigger({ ...repo, deliveryId: "d1", event: "pull_request", action: "opened", pullNumber: 4, headSha: head, now: 1, heldUntil: 5 })))).toBe(true);
  });

  test("an acceptance's statement has only the parts its delivery writes, one text per shape of delivery", () => {
    const text = (extra: Partial<Parameters<typeof acceptDirectTrigger>[0]>) => {
      const [step] = postgresSteps(acceptDirectTrigger({ ...repo, deliveryId: "d1", event: "pull_request", action: "opened", pullNumber: 4, headSha: head, now: 1, heldUntil: 5, ...extra }));
      if (step === undefined || !isBatch(step)) throw new Error("not one batch");
      const sql = step.batch[0]!.sql;
      return typeof sql === "string" ? sql : sql.postgresql;
    };
    const opened = text({ index: { kind: "upsert", baseRef: "main" } });
    const closed = text({ action: "closed", index: { kind: "delete" } });
    const moved = text({ action: "synchronize", index: { kind: "upsert", baseRef: "main" }, previousHead: "f".repeat(40) });
    const review = text({ event: "pull_request_review", action: "submitted" });
    const rerequest = text({ event: "check_run", action: "rerequested", pullNumber: null });
    expect(new Set([opened, closed, moved, review, rerequest]).size).toBe(5);
    // The same shape with other values is the same text: it is prepared once per connection.
    expect(text({ deliveryId: "d2", pullNumber: 99, headSha: "1".repeat(40), now: 7, heldUntil: 9, index: { kind: "upsert", baseRef: null } })).toBe(opened);
    expect(rerequest).not.toMatch(/pull_generations|open_pull_requests|'evaluation'/);
    expect(review).not.toMatch(/open_pull_requests/);
    for (const sql of [opened, closed, review, rerequest]) expect(sql).not.toMatch(/union all/);
    expect(moved).toMatch(/union all/);
    expect(opened).not.toMatch(/delete from open_pull_requests/);
    // A closing leaves a tombstone (a listing page fetched before it cannot bring the pull request back), never deletes.
    expect(closed).not.toMatch(/delete from open_pull_requests/);
    expect(closed).toMatch(/insert into open_pull_requests[^;]*closed = true/);
  });

  test("releasing the work of a fast path that did not settle its head is one statement sent alone", () => {
    expect(alone(postgresSteps(releaseFastPathWork({ repositoryId: 300, headSha: head, pullNumber: 4, now: 1300 })))).toBe(true);
    expect(alone(postgresSteps(releaseFastPathWork({ repositoryId: 300, headSha: head, pullNumber: null, now: 1300 })))).toBe(true);
  });

  test("releasing the work of many fast paths at once is one statement sent alone", () => {
    const many = Array.from({ length: 50 }, (_, i) => ({ repositoryId: 300, headSha: i.toString(16).padStart(40, "0"), pullNumber: i % 3 === 0 ? null : i }));
    expect(alone(postgresSteps(releaseHeldWork(many, 1300)))).toBe(true);
  });
});
