#!/usr/bin/env bun
/**
 * Merge-queue benchmark: MERGE_QUEUE_BENCH_GROUPS (default 100) approved pull requests are queued on one branch of the forge
 * simulator at once, against the service in process on PostgreSQL (SQLite without TEST_POSTGRES_URL). The queue waits for a
 * second required check that never comes, so every group stays queued (nothing merges and rebuilds the rest) and each
 * `checks_requested` is answered once. Reports:
 * - latency from each `checks_requested` delivery to the completed check on its group's commit: p50, p99, max (goal p99 < 30 s);
 * - forge requests per group while the groups were judged, by route (goal: one GraphQL request and one check write, plus the
 *   rule files read once per commit the groups merge onto).
 * The check writes are paced by the forge request governor (60 writes per rolling minute and installation, below the forge's
 * documented secondary limit of 80 content-creating requests a minute): N groups need at least N check writes, so past 60
 * groups at once the last ones wait for the window, whatever the service does.
 *
 *   bash scripts/bench.sh merge-queue          MERGE_QUEUE_BENCH_GROUPS=100
 * Prints JSON.
 */
import { countsSince } from "../../server/simulator/request-counter.ts";
import { BACKENDS } from "../support/databases.ts";
import { addReviews } from "../../server/simulator/scenario.ts";
import { startServiceHarness } from "../support/service.ts";

const GROUPS = Number(process.env.MERGE_QUEUE_BENCH_GROUPS ?? 100);
const TIMEOUT_MS = 900_000;
/**
 * MERGE_QUEUE_BENCH_WRITES_PER_MINUTE raises the governor's write budget (and its points budget to ten times it: a write
 * costs 5 points) for a run that measures the service without the forge's pacing; the simulator keeps no secondary limit.
 * Never a production setting.
 */
const WRITES_PER_MINUTE = process.env.MERGE_QUEUE_BENCH_WRITES_PER_MINUTE;
/** Pause between the setup and the queueing (MERGE_QUEUE_BENCH_SETTLE_MS, default 61 s: the governor's rolling minute). */
const SETTLE_MS = Number(process.env.MERGE_QUEUE_BENCH_SETTLE_MS ?? 61_000);
const backend = process.env.TEST_POSTGRES_URL ? BACKENDS[1]! : BACKENDS[0]!;

async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + TIMEOUT_MS;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

const budget: Record<string, string> = WRITES_PER_MINUTE === undefined ? {} : { SERVICE_FORGE_WRITES_PER_MINUTE: WRITES_PER_MINUTE, SERVICE_FORGE_POINTS_PER_MINUTE: String(Number(WRITES_PER_MINUTE) * 10) };
const h = await startServiceHarness(backend, budget);
try {
  const { org, repo } = h.scenario;
  const c = h.sim.control;
  c.mergeQueues.configure({ owner: org, repo, branch: "main", requiredChecks: ["Service / approval", "ci"] });
  // GROUPS pull requests, each changing a file of its own, approved by dave on its head and decided by the service.
  const pulls: { number: number; head: string }[] = [];
  for (let i = 0; i < GROUPS; i++) {
    const { sha } = await c.commit({ owner: org, repo, branch: `bench-${i}`, files: { [`notes/${i}.md`]: `${i}\n` }, sender: "erin" });
    const pr = await c.openPullRequest({ owner: org, repo, head: `bench-${i}`, author: "erin" });
    addReviews(h.sim, { owner: org, repo, number: pr.number, count: 1, user: "dave", state: "APPROVED" });
    pulls.push({ number: pr.number, head: sha });
  }
  // One review event each lets the service decide every head (the silent reviews above are then read).
  for (const p of pulls) await c.submitReview({ owner: org, repo, number: p.number, user: "carol", state: "COMMENTED" });
  await until(() => pulls.every((p) => h.checks(p.head)[0]?.conclusion === "success"), "every pull request approved");
  await h.waitForDrainedQueue(TIMEOUT_MS);
  // The setup's own check writes (two per pull request) fill the forge-write budget of the rolling minute; without this
  // pause the groups would wait for the setup's writes to leave it, which a queue does not meet in practice.
  await Bun.sleep(SETTLE_MS);

  const before = h.sim.counter.snapshot();
  const requestedAt = new Map<string, number>();
  const completedAt = new Map<string, number>();
  const started = performance.now();
  for (const p of pulls) {
    const entry = await c.mergeQueues.enqueue({ owner: org, repo, number: p.number });
    requestedAt.set(entry.headCommit.oid, performance.now());
  }
  await until(() => {
    for (const group of requestedAt.keys()) if (!completedAt.has(group) && h.checks(group)[0]?.status === "completed") completedAt.set(group, performance.now());
    return completedAt.size === requestedAt.size;
  }, "every group's check completed");
  const wallMs = performance.now() - started;
  await h.waitForDrainedQueue(TIMEOUT_MS);
  const counts = countsSince(before, h.sim.counter.snapshot());
  const latencies = [...requestedAt].map(([group, at]) => completedAt.get(group)! - at).sort((a, b) => a - b);
  const conclusions = [...requestedAt.keys()].map((group) => h.checks(group)[0]!.conclusion);
  const perGroup = Object.fromEntries(Object.entries(counts.routes).map(([route, statuses]) => [route, Number((Object.values(statuses).reduce((a, b) => a + b, 0) / GROUPS).toFixed(2))]));
  console.log(JSON.stringify({
    backend, groups: GROUPS, forge_writes_per_minute: Number(WRITES_PER_MINUTE ?? 60), settle_ms: SETTLE_MS, successes: conclusions.filter((c) => c === "success").length,
    latency_ms: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), max: Math.round(latencies.at(-1)!) },
    wall_ms: Math.round(wallMs), forge_requests_per_group: perGroup, forge_requests_total: counts.total,
    goal_p99_ms: 30_000,
    // One check write per group: the groups past the minute's write budget wait for the next minute, whatever the service does.
    groups_past_one_minute_write_budget: Math.max(0, GROUPS - Number(WRITES_PER_MINUTE ?? 60)),
  }, null, 2));
} finally {
  if (process.env.MERGE_QUEUE_BENCH_DEBUG) for (const line of h.logs) if (/retried|rate|governor|paced/i.test(line)) console.error(line.trim());
  await h.stop();
}
