import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { ensureBinary } from "../support/binary.ts";
import { type Answer, type ChaosFixture, chaosFixture, type Cluster, openPullRequests, readiness, report, review, startCluster, waitAllRight } from "./support.ts";

/**
 * The chaos suite (issue 17): the compiled binary on PostgreSQL under concurrency and faults, driven as an operator would see
 * it. A 202 means durable work: nothing acknowledged may be lost, and every pull request ends with the right conclusion.
 */
let cluster: Cluster;
let current: ChaosFixture | null = null;

beforeAll(() => {
  ensureBinary();
  cluster = startCluster();
});
afterAll(() => cluster?.destroy());
afterEach(async () => {
  await current?.close();
  current = null;
});

/** STREAMS concurrent senders of reviews with known outcomes (two of three approve), until told to stop. */
const STREAMS = 4;
async function steadyStream(f: ChaosFixture, numbers: readonly number[], next: () => number, until: () => boolean): Promise<void> {
  await Promise.all(Array.from({ length: STREAMS }, async () => {
    while (!until()) {
      const i = next();
      await review(f, numbers[i % numbers.length]!, i % 3 !== 0);
      await Bun.sleep(20);
    }
  }));
}

const statuses = (f: ChaosFixture, from = 0) => f.dispatcher.answers.slice(from).map((a) => a.status);
const count = (values: readonly number[], status: number) => values.filter((s) => s === status).length;

describe("chaos on PostgreSQL", () => {
  test("three serve processes, 60 pull requests opened and reviewed at once, some deliveries sent to two processes: every delivery accepted once, one check per head, every conclusion right", async () => {
    const f = (current = await chaosFixture(cluster, 3, { SERVICE_RECONCILE_ENABLED: "false" }));
    f.dispatcher.duplicateEvery = 4;
    const started = performance.now();
    const numbers = await openPullRequests(f, 60);
    await Promise.all(numbers.map((n, i) => review(f, n, i % 2 === 0)));
    const ms = await waitAllRight(f, 60_000);

    const answers = f.dispatcher.answers;
    const byDelivery = new Map<string, Answer[]>();
    for (const answer of answers) byDelivery.set(answer.deliveryId, [...(byDelivery.get(answer.deliveryId) ?? []), answer]);
    const doubled = [...byDelivery.values()].filter((list) => list.length === 2);
    report("replicas", {
      deliveries: byDelivery.size, answers: answers.length, sent_to_two: doubled.length, status_202: count(statuses(f), 202),
      other_statuses: answers.filter((a) => a.status !== 202).length, all_right_ms: Math.round(performance.now() - started), settle_ms: Math.round(ms),
    });
    expect(answers.filter((a) => a.status !== 202)).toEqual([]);
    expect(doubled.length).toBeGreaterThan(10);
    for (const list of byDelivery.values()) {
      // a mapped delivery is recorded by exactly one answer; its copy is answered as already retained
      if (list.some((a) => a.accepted === false) || list.length === 2) expect(list.map((a) => a.accepted).sort()).toEqual([false, true]);
    }
    const pulls = f.sim.control.state.repo("acme", "web")!.pulls;
    for (const n of numbers) expect(f.sim.control.checkRuns({ owner: "acme", repo: "web", headSha: pulls.get(n)!.headSha })).toHaveLength(1);
  }, 120_000);

  test("PostgreSQL stopped and started under load: 503 while it is down, never 202; readiness follows; then 20 deliveries in a row accepted and every pull request right", async () => {
    const f = (current = await chaosFixture(cluster, 1));
    const service = f.services[0]!;
    const numbers = await openPullRequests(f, 40);
    await waitAllRight(f, 60_000);

    let reviews = 0;
    const stream = (until: () => boolean) => steadyStream(f, numbers, () => reviews++, until);
    const downAt = f.dispatcher.answers.length;
    cluster.stop();
    const stoppedAt = performance.now();
    let notReadyMs: number | null = null;
    let done = false;
    const probing = (async () => {
      while (notReadyMs === null && performance.now() - stoppedAt < 20_000) {
        if ((await readiness(service)) === 503) notReadyMs = performance.now() - stoppedAt;
        else await Bun.sleep(250);
      }
    })();
    const load = stream(() => done);
    await probing;
    await Bun.sleep(Math.max(0, 8_000 - (performance.now() - stoppedAt)));
    done = true;
    await load;
    const whileDown = statuses(f, downAt);

    cluster.start();
    const startedAt = performance.now();
    let readyMs: number | null = null;
    while (readyMs === null && performance.now() - startedAt < 20_000) {
      if ((await readiness(service)) === 200) readyMs = performance.now() - startedAt;
      else await Bun.sleep(250);
    }
    // 20 fresh deliveries in a row answered 202, in the same process
    let streak = 0;
    let streakMs: number | null = null;
    while (streakMs === null && performance.now() - startedAt < 30_000) {
      const before = f.dispatcher.answers.length;
      await review(f, numbers[reviews % numbers.length]!, reviews++ % 3 !== 0);
      streak = f.dispatcher.answers.slice(before).every((a) => a.status === 202) ? streak + 1 : 0;
      if (streak >= 20) streakMs = performance.now() - startedAt;
    }
    const rightMs = await waitAllRight(f, 60_000);
    report("restart", {
      deliveries_while_down: whileDown.length, status_503_while_down: count(whileDown, 503), status_202_while_down: count(whileDown, 202),
      not_ready_after_stop_ms: notReadyMs && Math.round(notReadyMs), ready_after_start_ms: readyMs && Math.round(readyMs),
      twenty_accepted_after_start_ms: streakMs && Math.round(streakMs), all_right_after_streak_ms: Math.round(rightMs),
    });
    expect(whileDown.length).toBeGreaterThan(5);
    expect(count(whileDown, 202)).toBe(0);
    expect(count(whileDown, 503)).toBe(whileDown.length);
    expect(notReadyMs).not.toBeNull();
    expect(notReadyMs!).toBeLessThan(15_000);
    expect(readyMs).not.toBeNull();
    expect(readyMs!).toBeLessThan(15_000);
    expect(streakMs).not.toBeNull();
    expect(streakMs!).toBeLessThan(30_000);
  }, 180_000);

  test("every backend of the service terminated twice under a steady stream: deliveries answer 202 again within 15 s and no pull request is left unfinished", async () => {
    const f = (current = await chaosFixture(cluster, 1));
    const numbers = await openPullRequests(f, 20);
    await waitAllRight(f, 60_000);
    const database = new URL(f.databaseUrl).pathname.slice(1);
    // evaluations are in flight (reviews reads take 300 ms) when the backends go
    f.sim.injectFault({ kind: "slow", delayMs: 300, path: "/repos/acme/web/pulls/\\d+/reviews" });
    let reviews = 0;
    let done = false;
    const load = steadyStream(f, numbers, () => reviews++, () => done);
    const recoveries: number[] = [];
    const terminated: number[] = [];
    for (let round = 0; round < 2; round++) {
      await Bun.sleep(1_500);
      const admin = cluster.admin();
      const killed = await admin`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = ${database} and application_name like 'codeowner-approval%'`;
      await admin.end();
      terminated.push(killed[0]!.n);
      const at = performance.now();
      const from = f.dispatcher.answers.length;
      // recovered: the first 5 deliveries in a row after the termination answered 202
      let recovered: number | null = null;
      while (recovered === null && performance.now() - at < 20_000) {
        const answers = f.dispatcher.answers.slice(from);
        const tail = answers.slice(-5);
        if (tail.length === 5 && tail.every((a) => a.status === 202)) recovered = performance.now() - at;
        else await Bun.sleep(50);
      }
      recoveries.push(recovered ?? Number.POSITIVE_INFINITY);
    }
    done = true;
    await load;
    const rightMs = await waitAllRight(f, 60_000);
    const all = statuses(f);
    report("terminate", { deliveries: all.length, status_202: count(all, 202), status_503: count(all, 503), backends_terminated: terminated, recovery_ms: recoveries.map(Math.round), all_right_ms: Math.round(rightMs) });
    for (const n of terminated) expect(n).toBeGreaterThan(0);
    for (const ms of recoveries) expect(ms).toBeLessThan(15_000);
  }, 180_000);

  test("SIGKILL during evaluations and a restart: nothing acknowledged is lost", async () => {
    const f = (current = await chaosFixture(cluster, 1));
    const numbers = await openPullRequests(f, 20);
    await waitAllRight(f, 60_000);
    // every reviews read stalls for 4 s, so evaluations are in flight when the process dies
    f.sim.injectFault({ kind: "slow", delayMs: 4_000, path: "/repos/acme/web/pulls/\\d+/reviews", times: 20 });
    const from = f.dispatcher.answers.length;
    await Promise.all(numbers.map((n, i) => review(f, n, i % 2 === 1)));
    await Bun.sleep(1_000);
    const acknowledged = f.dispatcher.answers.slice(from).filter((a) => a.status === 202).length;
    await f.services[0]!.stop("SIGKILL");
    f.services[0] = null;
    const restartedAt = performance.now();
    await f.startService(0);
    const rightMs = await waitAllRight(f, 60_000);
    report("sigkill", { deliveries_acknowledged_before_kill: acknowledged, all_right_after_restart_ms: Math.round(performance.now() - restartedAt), settle_ms: Math.round(rightMs) });
    expect(acknowledged).toBe(numbers.length);
  }, 120_000);
});
