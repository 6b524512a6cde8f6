#!/usr/bin/env bun
/**
 * Worker benchmark (issue 6 item 9; builds side by side since issue 28 item 6), each build a `serve` process on PostgreSQL
 * (SQLite without TEST_POSTGRES_URL) against the forge simulator, which is unpaced (UNPACED_FORGE):
 * - webhook-to-completed-check latency (p50/p99) for a 50-file pull request: each iteration pushes a new commit and times
 *   the simulator's delivery until the managed check on that head is completed;
 * - evaluations per second with 200 pull requests queued: 200 pull requests are opened while the worker is off, then the
 *   service restarts with the worker on and the time until all 200 checks are completed is measured.
 * A shared machine's speed drifts within a minute, so the builds alternate round by round (the first build first in odd
 * rounds, last in even ones) and each build's median round is reported beside every round's figures.
 *
 *   bash scripts/bench.sh worker                                     (dist/service only)
 *   WORKER_BENCH_BINARIES=old=/tmp/old/service,new=dist/service bash scripts/bench.sh worker
 *   BENCH_ROUNDS=3 (default), WORKER_BENCH_ITERATIONS=40, WORKER_BENCH_QUEUED=200
 * The services log at info (startBinary reads the listening line); both builds pay for it alike. Prints JSON.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createScenario, generateAppKeys } from "../../server/simulator/scenario.ts";
import { startForgeSimulator } from "../../server/simulator/simulator.ts";
import { BINARY, ensureBinary, runBinary, startBinary } from "../support/binary.ts";
import { createTestDatabase } from "../support/databases.ts";
import { UNPACED_FORGE } from "./unpaced-forge.ts";

const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
const ITERATIONS = Number(process.env.WORKER_BENCH_ITERATIONS ?? 40);
const QUEUED = Number(process.env.WORKER_BENCH_QUEUED ?? 200);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const WARM_UP = 3; // the first iterations warm caches and tokens
const TIMEOUT_MS = 120_000;

const builds = (process.env.WORKER_BENCH_BINARIES ?? `current=${BINARY}`).split(",").map((entry) => {
  const at = entry.indexOf("=");
  return at > 0 ? { name: entry.slice(0, at), path: resolve(entry.slice(at + 1)) } : { name: entry, path: resolve(entry) };
});
if (builds.some((b) => b.path === BINARY)) ensureBinary();

type Round = { p50_ms: number; p99_ms: number; max_ms: number; evaluations_per_second: number; queued_seconds: number };

async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + TIMEOUT_MS;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(2);
  }
}

async function round(binary: string): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), "svc-wbench-"));
  const keys = generateAppKeys();
  const sim = startForgeSimulator({ webhookSecret: SECRET, webhookNeutralHeaders: true });
  const database = await createTestDatabase(process.env.TEST_POSTGRES_URL ? "postgresql" : "sqlite");
  try {
    const scenario = await createScenario(sim, { keys, extraFiles: 48 });
    writeFileSync(join(dir, "key.pem"), keys.privateKey);
    writeFileSync(join(dir, "secret"), SECRET);
    const env = (worker: boolean) => ({
      SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
      SERVICE_RECONCILE_ENABLED: "false", SERVICE_WORKER_ENABLED: String(worker), SERVICE_LOG_LEVEL: "info", ...UNPACED_FORGE,
    });
    const migrate = runBinary(["database", "migrate"], env(false), { binary });
    if (migrate.exitCode !== 0) throw new Error(`migrate failed: ${migrate.stderr}`);
    const app = sim.control.mustApp(scenario.appId);
    const completed = (headSha: string) => sim.control.checkRuns({ owner: "acme", repo: "web", headSha }).some((run) => run.status === "completed");

    // 1. Latency for a 50-file pull request.
    let service = await startBinary(env(true), { binary });
    app.webhookUrl = `${service.url}/webhooks/forge`;
    const latencies: number[] = [];
    try {
      for (let i = 0; i < ITERATIONS + WARM_UP; i++) {
        const started = performance.now();
        const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/bench.ts": `export const i = ${i};\n` } });
        await until(() => completed(sha), "a completed check");
        if (i >= WARM_UP) latencies.push(performance.now() - started);
      }
    } finally {
      await service.stop();
    }
    latencies.sort((a, b) => a - b);
    const pick = (p: number) => +latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);

    // 2. Throughput with QUEUED pull requests queued while the worker is off.
    service = await startBinary(env(false), { binary });
    app.webhookUrl = `${service.url}/webhooks/forge`;
    const heads: string[] = [];
    try {
      for (let i = 0; i < QUEUED; i++) {
        const branch = `bulk-${i}`;
        await sim.control.commit({ owner: "acme", repo: "web", branch, from: "main", files: { [`src/bulk/${i}.ts`]: `export const n = ${i};\n`, "docs/guide.md": `# Guide ${i}\n` } });
        heads.push((await sim.control.openPullRequest({ owner: "acme", repo: "web", head: branch, author: "erin", title: `Bulk ${i}` })).headSha);
      }
    } finally {
      await service.stop();
    }
    const started = performance.now();
    service = await startBinary(env(true), { binary });
    app.webhookUrl = `${service.url}/webhooks/forge`;
    try {
      await until(() => heads.every(completed), `${QUEUED} completed checks`);
    } finally {
      await service.stop();
    }
    const seconds = (performance.now() - started) / 1000;
    return { p50_ms: pick(50), p99_ms: pick(99), max_ms: +latencies.at(-1)!.toFixed(1), evaluations_per_second: +(QUEUED / seconds).toFixed(1), queued_seconds: +seconds.toFixed(2) };
  } finally {
    await sim.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rounds = new Map(builds.map((b) => [b.name, [] as Round[]]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? builds : [...builds].reverse();
  for (const build of order) {
    const result = await round(build.path);
    rounds.get(build.name)!.push(result);
    console.error(`round ${r + 1}/${ROUNDS} ${build.name}: ${JSON.stringify(result)}`);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const results = builds.map((build) => {
  const runs = rounds.get(build.name)!;
  return {
    build: build.name, binary: build.path,
    median: { p50_ms: median(runs.map((r) => r.p50_ms)), p99_ms: median(runs.map((r) => r.p99_ms)), evaluations_per_second: median(runs.map((r) => r.evaluations_per_second)) },
    rounds: runs,
  };
});
console.log(JSON.stringify({
  benchmark: `worker (serve processes, ${process.env.TEST_POSTGRES_URL ? "PostgreSQL" : "SQLite"}, forge simulator unpaced)`,
  files: 50, iterations: ITERATIONS, queued_pull_requests: QUEUED, rounds: ROUNDS, builds: results,
}, null, 2));
