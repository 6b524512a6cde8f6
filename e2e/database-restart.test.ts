import { afterEach, describe, expect, test } from "bun:test";
import { type OwnCluster, startOwnCluster } from "./support/pg-cluster.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Readiness tells the truth across a PostgreSQL restart (issue 17 item 4): the service on a cluster of its own, the server
 * stopped with a fast shutdown (every session ended) and started again.
 */
describe("a PostgreSQL restart", () => {
  let cluster: OwnCluster | null = null;
  let h: ServiceHarness | null = null;
  afterEach(async () => {
    try {
      cluster?.up();
      await h?.stop();
    } finally {
      cluster?.destroy();
      h = cluster = null;
    }
  });

  const readiness = async () => {
    const response = await fetch(`${h!.service.url}/health/ready`);
    return { status: response.status, body: (await response.json()) as { database: boolean } };
  };
  /** Polls readiness every 250 ms until it answers `status`; resolves to how long that took. */
  const untilReadiness = async (status: number, what: string) => {
    const started = performance.now();
    await waitUntil(async () => (await readiness()).status === status, what, 30_000);
    return performance.now() - started;
  };

  test("readiness is 503 within 15 s of the server stopping and 200 within 15 s of its start, and work flows again", async () => {
    cluster = startOwnCluster();
    h = await startServiceHarness("postgresql", {}, { postgresUrl: cluster.url });
    await untilReadiness(200, "readiness before the restart");
    cluster.down();
    const toNotReady = await untilReadiness(503, "readiness 503 while the server is down");
    expect(toNotReady).toBeLessThan(15_000);
    expect((await readiness()).body).toMatchObject({ status: "not_ready", database: false });
    cluster.up();
    const toReady = await untilReadiness(200, "readiness 200 after the server is back");
    expect(toReady).toBeLessThan(15_000);
    expect((await readiness()).body).toMatchObject({ status: "ready", database: true });
    // The same process works again end to end: a push is accepted, evaluated and its check completed.
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "after the restart\n" } });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" }, 30_000);
    console.log(`readiness: 503 after ${Math.round(toNotReady)} ms down, 200 after ${Math.round(toReady)} ms back`);
  }, 90_000);
});
