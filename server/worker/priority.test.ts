import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { BACKENDS, createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { createForgeClient, createGovernor, DEFAULT_GOVERNOR_SETTINGS, type Governor, type Priority } from "../forge/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import { acceptAuthorityEvent, acceptDirectTrigger, claimNext, completeJob, type JobRow, migrateDatabase, openStore, type Store, supersedeAndQueue } from "../store/index.ts";
import type { WorkerContext } from "./context.ts";
import { evaluatePullRequest } from "./jobs/evaluate-pull-request.ts";
import { fanOutRepository } from "./jobs/fan-out.ts";
import { invalidateHead } from "./jobs/invalidate-head.ts";

/** Which forge requests of each job go to the request governor as webhook-driven (interactive) or background work. */
describe.each(BACKENDS)("forge request priority of worker jobs on %s", (backend) => {
  let sim: ForgeSimulator;
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
    await sim?.stop();
  });

  async function rig() {
    sim = startForgeSimulator({});
    const scenario: Scenario = await createScenario(sim, { keys: generateAppKeys() });
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, Date.now());
    store = openStore(database.target);
    const inner = createGovernor(DEFAULT_GOVERNOR_SETTINGS);
    const asked: { method: string; priority: Priority }[] = [];
    const governor: Governor = {
      acquire(scope, method, priority, signal) {
        asked.push({ method, priority });
        return inner.acquire(scope, method, priority, signal);
      },
      lowestRemaining: () => inner.lowestRemaining(),
    };
    const log = pino({ level: "silent" });
    const forge = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: "Service / approval", logger: log, governor });
    const ctx: WorkerContext = {
      store, forge, metrics: createMetrics(), log, now: () => Date.now(), workerId: "w", guardTimeoutMs: 5_000, resetTimeoutMs: 5_000,
      settings: { checkName: "Service / approval", policyPath: POLICY_PATH, forgeDirectory: ".forge", allowInsecureChanges: false, organizationPolicyRepository: ".forge" },
    };
    const repo = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
    /** Claims the next row (it must be of `kind`), runs `handler` on it, completes it, and returns what the governor was asked. */
    const run = async (kind: JobRow["kind"], handler: (ctx: WorkerContext, row: JobRow, signal: AbortSignal) => Promise<unknown>) => {
      const row = (await store.execute(() => claimNext("w", Date.now(), 30_000)))!;
      expect(row.kind).toBe(kind);
      asked.length = 0;
      await handler(ctx, row, new AbortController().signal);
      await store.execute(() => completeJob(row.id, "w", row.merges, Date.now()));
      return [...asked];
    };
    return { scenario, repo, run };
  }

  test("a webhook's invalidation and evaluation are interactive; a scan's evaluation reads as background and writes as interactive; a fan-out is background", async () => {
    const { scenario, repo, run } = await rig();
    const pull = { number: scenario.pullNumber, headSha: scenario.headSha };
    await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "d1", event: "pull_request", action: "opened", pullNumber: pull.number, headSha: pull.headSha, now: Date.now() }));

    const invalidation = await run("head_invalidation", invalidateHead);
    const evaluation = await run("evaluation", evaluatePullRequest);
    expect(invalidation.length).toBeGreaterThan(0);
    expect(evaluation.some((r) => r.method !== "GET")).toBe(true);
    for (const request of [...invalidation, ...evaluation]) expect(request.priority).toBe("interactive");

    // A scan (or a fan-out) queued this one: its evidence is gathered as background work; the writes under the publication
    // guard stay interactive (authority acceptance waits for that guard). An approval changes the result, so there is a write
    // (an unchanged result is not written again).
    await sim.control.submitReview({ owner: scenario.org, repo: scenario.repo, number: pull.number, user: "alice", state: "APPROVED" });
    await store.execute(() => supersedeAndQueue(repo, [pull], Date.now(), { background: true }));
    const swept = await run("evaluation", evaluatePullRequest);
    const firstWrite = swept.findIndex((r) => r.method !== "GET");
    // The evidence reads (pull request, reviews, policy repository head, open pull requests: the files and the files at the
    // base commit are cached by now), then the check-run lookup under the guard.
    expect(firstWrite).toBeGreaterThan(3);
    expect(swept.slice(0, firstWrite - 1).every((r) => r.priority === "background")).toBe(true);
    expect(swept.filter((r) => r.method !== "GET").every((r) => r.priority === "interactive")).toBe(true);

    await store.execute(() => acceptAuthorityEvent({ deliveryId: "a1", event: "team", action: "edited", installationId: repo.installationId, scope: { kind: "repositories", repositories: [repo] }, now: Date.now() }));
    const fanOut = await run("repository_fanout", fanOutRepository);
    expect(fanOut.some((r) => r.method === "PATCH")).toBe(true);
    for (const request of fanOut) expect(request.priority).toBe("background");
  }, 30_000);
});
