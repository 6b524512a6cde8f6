import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { acceptDirectTrigger, acquireElectionLease, all, claimNext, completeJob, markHeadInvalidated, queueMissingWork, type Store } from "./index.ts";

/** What a reconciliation scan queues for a pull request (spec "Generations" 3). */
const repository = { installationId: 5, repositoryId: 50, owner: "acme", name: "web" };
const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };

describe.each(BACKENDS)("reconciliation work on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  const heads = () => store.execute(function* () { return yield* all("select head_sha, shared_generation, invalidated_generation from head_generations order by head_sha"); });
  const kinds = () => store.execute(function* () { return yield* all("select kind from jobs order by kind"); });

  test("a head never seen gets its shared generation advanced, an invalidation and an evaluation", async () => {
    ({ database, store } = await openMigratedStore(backend));
    expect(await store.execute(() => acquireElectionLease(lease, 1))).toBe(true);
    await store.execute(() => queueMissingWork({ lease, repository, pulls: [{ number: 3, headSha: "a".repeat(40) }], now: 2 }));
    expect(await heads()).toEqual([{ head_sha: "a".repeat(40), shared_generation: 1, invalidated_generation: 0 }]);
    expect(await kinds()).toEqual([{ kind: "evaluation" }, { kind: "head_invalidation" }]);
  });

  test("a scan's evaluations are background work; the invalidation of a head never seen stays webhook-driven", async () => {
    ({ database, store } = await openMigratedStore(backend));
    expect(await store.execute(() => acquireElectionLease(lease, 1))).toBe(true);
    await store.execute(() => queueMissingWork({ lease, repository, pulls: [{ number: 3, headSha: "a".repeat(40) }], now: 2 }));
    const rows = await store.execute(function* () { return yield* all<{ kind: string; background: number }>("select kind, background from jobs order by kind"); });
    expect(rows.map((r) => [r.kind, Number(r.background)])).toEqual([["evaluation", 1], ["head_invalidation", 0]]);
  });

  test("a head already seen and invalidated is only evaluated again: no generation advance, no check reset", async () => {
    ({ database, store } = await openMigratedStore(backend));
    const head = "b".repeat(40);
    await store.execute(() => acceptDirectTrigger({ ...repository, deliveryId: "d1", event: "pull_request", action: "opened", pullNumber: 3, headSha: head, now: 1 }));
    await store.execute(() => markHeadInvalidated({ repositoryId: 50, headSha: head, generation: 1, now: 2 }));
    const evaluation = (await store.execute(() => claimNext("w", 3, 1000)))!;
    await store.execute(() => completeJob(evaluation.id, "w", evaluation.merges, 4));
    expect(await kinds()).toEqual([]);
    expect(await store.execute(() => acquireElectionLease(lease, 5))).toBe(true);
    await store.execute(() => queueMissingWork({ lease, repository, pulls: [{ number: 3, headSha: head }], now: 6 }));
    expect(await heads()).toEqual([{ head_sha: head, shared_generation: 1, invalidated_generation: 1 }]);
    expect(await kinds()).toEqual([{ kind: "evaluation" }]);
  });
});
