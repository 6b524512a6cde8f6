import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { addOpenPullRequests, createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { BACKENDS, createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { createForgeClient, createGovernor, DEFAULT_GOVERNOR_SETTINGS } from "../forge/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import { MAX_OPEN_PULL_REQUESTS } from "../policy/bounds.ts";
import { acceptBaseRefPush, all, claimNext, completeJob, indexListingPage, migrateDatabase, openStore, run, type Store } from "../store/index.ts";
import type { WorkerContext } from "./context.ts";
import { fanOutBaseRef } from "./jobs/fan-out.ts";

/**
 * Base-ref work (a push to a branch that open pull requests target) finds its pull requests in the store (issue 26 item 3,
 * DESIGN 3.9): the open-pull-request index's rows on the pushed base (and of unknown base), united with the recorded
 * evaluations the index does not name; it never lists the repository's open pull requests at the forge.
 */
describe.each(BACKENDS)("base-ref work on %s", (backend) => {
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
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const forge = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: "Service / approval", logger: log, governor: createGovernor(DEFAULT_GOVERNOR_SETTINGS) });
    const ctx: WorkerContext = {
      store, forge, metrics: createMetrics(), log, now: () => Date.now(), workerId: "w", guardTimeoutMs: 5_000, resetTimeoutMs: 5_000,
      settings: { checkName: "Service / approval", policyPath: POLICY_PATH, forgeDirectory: ".forge", allowInsecureChanges: false, organizationPolicyRepository: ".forge" },
    };
    const repo = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
    return { scenario, repo, ctx, lines };
  }

  test("a push to the base re-queues exactly the indexed pull requests on that base and the unindexed recorded ones, over 1,000 of them, without listing the forge", async () => {
    const { scenario, repo, ctx, lines } = await rig();
    // More open pull requests on main than the listing bound, all in the index; three on another base, indexed too.
    const onMain = addOpenPullRequests(sim, { owner: scenario.org, repo: scenario.repo, count: MAX_OPEN_PULL_REQUESTS + 100 });
    const onRelease = addOpenPullRequests(sim, { owner: scenario.org, repo: scenario.repo, count: 3 });
    const pulls = sim.control.mustRepo(scenario.org, scenario.repo).pulls;
    const rows = [
      ...onMain.map((number) => ({ number, headSha: pulls.get(number)!.headSha, baseRef: "main" })),
      ...onRelease.map((number) => ({ number, headSha: pulls.get(number)!.headSha, baseRef: "release" })),
    ];
    const listing = { installationId: repo.installationId, repositoryId: repo.repositoryId, listingId: "scan-1", startedAtMs: 1 };
    for (let i = 0; i < rows.length; i += 500) await store.execute(() => indexListingPage(listing, rows.slice(i, i + 500), 2));
    // Recorded evaluations: one of a pull request the index names on the other base (not re-queued), one the index does not
    // name (its base unknown: re-queued, the safe superset).
    const unindexed = 90_000;
    for (const [number, head] of [[onRelease[0]!, "r".repeat(40)], [unindexed, "u".repeat(40)]] as const) {
      await store.execute(() => run("insert into pull_evaluations (installation_id, repository_id, pull_number, head_sha, base_sha, evaluation_generation, evaluated_at_ms) values ($1, $2, $3, $4, 'b', 1, 1)", repo.installationId, repo.repositoryId, number, head));
    }
    await store.execute(() => run("delete from jobs"));
    expect(await store.execute(() => acceptBaseRefPush({ ...repo, deliveryId: "push-1", action: null, baseRef: "main", now: Date.now() }))).toBe("queued");
    const row = (await store.execute(() => claimNext("w", Date.now(), 60_000)))!;
    expect(row.kind).toBe("base_ref");
    const requestsFrom = sim.requests.length;
    const outcome = await fanOutBaseRef(ctx, row, new AbortController().signal);
    await store.execute(() => completeJob(row.id, "w", row.merges, Date.now()));
    expect(outcome.kind).toBe("done");

    const queued = await store.execute(() => all<{ pull_number: number; head_sha: string }>("select pull_number, head_sha from jobs where kind = 'evaluation' order by pull_number"));
    expect(queued.map((job) => [Number(job.pull_number), job.head_sha])).toEqual([
      ...onMain.map((number) => [number, pulls.get(number)!.headSha]),
      [unindexed, "u".repeat(40)],
    ]);
    // No listing of the repository's (or the base's) open pull requests at the forge.
    expect(sim.requests.slice(requestsFrom).filter((request) => request.path === `/repos/${scenario.org}/${scenario.repo}/pulls`)).toEqual([]);
    expect(lines.filter((line) => String(line.msg).startsWith("base-ref work from the store"))).toEqual([
      expect.objectContaining({ pull_requests: onMain.length + 1, indexed: onMain.length, unknown_base: 0, recorded: 1 }),
    ]);
  }, 60_000);
});
