import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { clientFor } from "../forge/test-support.ts";
import type { ForgeClient } from "../forge/index.ts";
import { addOpenPullRequests, createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { all, recordEvaluation, type Store } from "../store/index.ts";
import { createReconciler } from "./reconciler.ts";
import { captureLog, manualClock, reconcileMetrics } from "./test-support.ts";

/**
 * The reconciler at monorepo scale (issue 26 item 5, DESIGN 3.9) against the forge simulator over HTTP: one repository with
 * 10,000 open pull requests, every one already evaluated. A steady scan lists the repository page by page with conditional
 * requests (304s, no rate limit spent) and sends at most ceil(N/100) + 3 listing requests: the installations, the
 * installation's repositories, the pull-request pages and one look past a full last page. The merge recovery (DESIGN 3.10)
 * asks nothing of it: no page changed, so no pull request closed, and its periodic recovery is not due.
 */
const N = 10_000;

let sim: ForgeSimulator;
let s: Scenario;
let client: ForgeClient;

beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys() });
  const open = [...sim.control.mustRepo(s.org, s.repo).pulls.values()].filter((p) => p.state === "open").length;
  addOpenPullRequests(sim, { owner: s.org, repo: s.repo, count: N - open });
  client = clientFor(sim, s, { requestTimeoutMs: 10_000 });
}, 60_000);
afterAll(async () => {
  await sim.stop();
});

describe.each(BACKENDS)("the reconciler on %s, one repository with 10,000 open pull requests", (backend) => {
  let database: TestDatabase | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close().catch(() => {});
    await database?.drop();
    store = undefined;
    database = undefined;
  });

  /** Every open pull request of the repository recorded as evaluated just now, as its listing shows it. */
  async function evaluatedStore(now: number): Promise<Store> {
    ({ database, store } = await openMigratedStore(backend));
    const repo = sim.control.mustRepo(s.org, s.repo);
    const pulls = [...repo.pulls.values()].filter((p) => p.state === "open");
    for (let start = 0; start < pulls.length; start += 1000) {
      await store.execute(function* () {
        for (const p of pulls.slice(start, start + 1000)) {
          yield* recordEvaluation({
            installationId: s.installationId, repositoryId: repo.id, pullNumber: p.number, headSha: p.headSha, baseSha: p.baseSha,
            updatedAtMs: Date.parse(p.updatedAt), evaluationGeneration: 1, authoritySubjects: null, now,
          });
        }
      });
    }
    return store;
  }

  const listingRequests = (from: number) => {
    const counted = sim.requests.slice(from).filter((r) => r.path.startsWith("/app/installations") || r.path === "/installation/repositories" || r.path === `/repos/${s.org}/${s.repo}/pulls`);
    return { all: counted.length, notModified: counted.filter((r) => r.status === 304).length, pulls: counted.filter((r) => r.path.endsWith("/pulls")) };
  };

  test(`a steady scan of ${N} open pull requests in one repository sends at most ceil(N/100) + 3 listing requests, revalidated (304), and queues nothing`, async () => {
    const clock = manualClock(Date.now());
    const st = await evaluatedStore(clock.now());
    const { log } = captureLog();
    const reconciler = createReconciler(
      { store: st, forge: client, log, metrics: reconcileMetrics().metrics, clock, organizationPolicyRepository: ".forge", policyPath: ".forge/service-policy.toml" },
      { intervalMs: 300_000, retentionMs: 14 * 86_400_000 },
    );
    try {
      // The first scan reads every page afresh (and keeps it for conditional requests); the second is the steady one.
      const first = await reconciler.runOnce();
      expect(first).toMatchObject({ result: "success", problems: [], pullRequests: N, unchanged: N, queued: 0 });
      const from = sim.requests.length;
      const started = performance.now();
      const steady = await reconciler.runOnce();
      const seconds = (performance.now() - started) / 1000;
      expect(steady).toMatchObject({ result: "success", problems: [], repositories: 1, pullRequests: N, unchanged: N, queued: 0 });
      const listing = listingRequests(from);
      expect(listing.all).toBeLessThanOrEqual(Math.ceil(N / 100) + 3);
      expect(listing.pulls.length).toBeGreaterThanOrEqual(Math.ceil(N / 100));
      // Every page of the unchanged listing is revalidated: no rate limit spent on it.
      expect(listing.pulls.every((r) => r.status === 304)).toBe(true);
      // The merge recovery asked nothing: no recently closed page.
      expect(listing.pulls.filter((r) => r.query?.includes("state=closed"))).toEqual([]);
      expect(sim.requests.length - from).toBe(listing.all);
      // Well within the default 300 s interval (on a shared 2-core machine, with room to spare).
      expect(seconds).toBeLessThan(60);
      expect(await st.execute(() => all("select id from jobs"))).toHaveLength(0);
    } finally {
      await reconciler.stop();
    }
  }, 180_000);
});

