#!/usr/bin/env bun
/**
 * Webhook ingest benchmark (issue 5 item 8): signed ~25 KB pull_request deliveries POSTed to the compiled binary on
 * PostgreSQL at concurrency 1, 8 and 32, with the fast path talking to the forge simulator (its own process), worker off.
 * Baseline in the same run: the raw PostgreSQL rate of a two-row insert transaction at the same concurrency (postgres.js).
 * Prints JSON. Needs TEST_POSTGRES_URL (scripts/bench.sh starts a cluster) and dist/service.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { generateAppKeys } from "../../server/simulator/scenario.ts";
import { ensureBinary, runBinary, startBinary } from "../support/binary.ts";
import { createTestDatabase } from "../support/databases.ts";
import { pullRequestEvent, signedDelivery } from "../support/payloads.ts";
import { UNPACED_FORGE } from "./unpaced-forge.ts";

const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
/** Deliveries rotate over this many open pull requests (each its own head), as real traffic spreads over pull requests. */
const PULL_REQUESTS = 64;
const LEVELS = [
  { concurrency: 1, requests: 300 },
  { concurrency: 8, requests: 1200 },
  { concurrency: 32, requests: 2400 },
];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** CPU milliseconds (user + system) a process has used so far, from /proc (Linux; clock ticks of 10 ms). */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

/** The PostgreSQL server's processes: the postmaster (TEST_POSTGRES_DIR, set by scripts/pg-cluster.sh) and its children. */
function postgresPids(): number[] {
  const dir = process.env.TEST_POSTGRES_DIR;
  if (!dir) return [];
  const postmaster = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  const pids = [postmaster];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(readFileSync(`/proc/${entry}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[1]) === postmaster) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

/** Where the CPU went during one measured run: milliseconds of CPU per request, per process (a backend that exits mid-run is missed). */
function cpuMeter(processes: Record<string, number>) {
  const read = () => {
    const own = process.cpuUsage();
    const values: Record<string, number> = { load_generator: (own.user + own.system) / 1000, postgresql: postgresPids().reduce((sum, pid) => sum + processCpuMs(pid), 0) };
    for (const [name, pid] of Object.entries(processes)) values[name] = processCpuMs(pid);
    return values;
  };
  const before = read();
  return (requests: number) => {
    const after = read();
    return Object.fromEntries(Object.keys(after).map((name) => [name, +((after[name]! - before[name]!) / requests).toFixed(3)]));
  };
}

async function drive(concurrency: number, total: number, once: (i: number) => Promise<void>, processes: Record<string, number> = {}) {
  const meter = cpuMeter(processes);
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      const t0 = performance.now();
      await once(i);
      latencies.push(performance.now() - t0);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { per_second: Math.round(total / seconds), p50_ms: +percentile(latencies, 50).toFixed(2), p99_ms: +percentile(latencies, 99).toFixed(2), cpu_ms_per_request: meter(total) };
}

ensureBinary();
const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
const keys = generateAppKeys();
writeFileSync(join(dir, "key.pem"), keys.privateKey);
writeFileSync(join(dir, "secret"), SECRET);
// The simulator runs as its own process so that its work does not compete with the load generator's event loop.
// BENCH_SIMULATOR_PROFILE_DIR: the simulator writes a CPU profile (Markdown) there when it stops.
const simulatorProfile = process.env.BENCH_SIMULATOR_PROFILE_DIR ? ["--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_SIMULATOR_PROFILE_DIR}`] : [];
const simulator = Bun.spawn([process.execPath, ...simulatorProfile, join(import.meta.dir, "..", "..", "server", "simulator", "serve.ts"), "--seed", "--app-private-key-file", join(dir, "key.pem"), "--extra-pull-requests", String(PULL_REQUESTS - 1)], { stdout: "pipe", stderr: "inherit" });
const reader = (simulator.stdout as ReadableStream<Uint8Array>).getReader();
let line = "";
while (!line.includes("\n")) {
  const { value, done } = await reader.read();
  if (done) throw new Error("the simulator exited");
  line += new TextDecoder().decode(value);
}
const seeded = JSON.parse(line) as { url: string; appId: number; installationId: number; repositoryId: number; pullNumber: number; headSha: string; pulls: Array<{ number: number; headSha: string }> };
const sim = { url: seeded.url, stop: async () => { simulator.kill("SIGTERM"); await simulator.exited; } };
const scenario = seeded;
const repositoryId = seeded.repositoryId;
const database = await createTestDatabase("postgresql");
const env = {
  SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
  SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
  SERVICE_WORKER_ENABLED: "false", SERVICE_RECONCILE_ENABLED: "false", SERVICE_LOG_LEVEL: "info", ...UNPACED_FORGE,
};
if (runBinary(["database", "migrate"], env).exitCode !== 0) throw new Error("migrate failed");
// BENCH_SERVICE_COMMAND (a program taking the binary's arguments, e.g. a wrapper running `bun --cpu-prof-md server/main.ts`)
// lets a profiler watch the service under exactly this load.
const service = await startBinary(env, process.env.BENCH_SERVICE_COMMAND ? { binary: process.env.BENCH_SERVICE_COMMAND } : {});

// ~25 KB: a realistic pull_request payload whose body text carries the bulk, as long descriptions do.
const payloads = seeded.pulls.map((pull) => {
  const base = pullRequestEvent("synchronize", { repo: { id: repositoryId, owner: "acme", name: "web" }, number: pull.number, headSha: pull.headSha, installationId: scenario.installationId });
  return { ...base, pull_request: { ...base.pull_request, body: "Lorem ipsum dolor sit amet. ".repeat(880) } };
});
// The signature covers the body only, so each pull request's delivery is signed once and sent under fresh delivery IDs: the
// load generator's own work stays small next to the service's (as the baseline's does).
const signed = payloads.map((payload) => signedDelivery(SECRET, "pull_request", "x", payload));
const bodyBytes = signed[0]!.body.byteLength;
let sequence = 0;
const send = async () => {
  const n = sequence++;
  const delivery = signed[n % signed.length]!;
  const headers = { ...delivery.headers, "x-forge-delivery": `bench-${process.pid}-${n}` };
  const response = await fetch(`${service.url}/webhooks/forge`, { method: "POST", headers, body: delivery.body as BodyInit });
  if (response.status !== 202) throw new Error(`unexpected ${response.status}`);
  await response.arrayBuffer();
};
await drive(4, 100, send); // warm-up: token, prepared statements, check created

const baselineDb = await createTestDatabase("postgresql");
const sql = postgres(baselineDb.url, { max: 40, onnotice: () => {} });
await sql`create table deliveries (id text primary key, received_at bigint not null)`;
await sql`create table work (id bigserial primary key, delivery_id text not null, payload_bytes int not null)`;
let baselineSequence = 0;
const baselineOnce = async () => {
  const id = `b-${baselineSequence++}`;
  await sql.begin(async (tx) => {
    await tx`insert into deliveries (id, received_at) values (${id}, ${Date.now()})`;
    await tx`insert into work (delivery_id, payload_bytes) values (${id}, ${bodyBytes})`;
  });
};

// A shared machine's speed drifts by tens of percent within a minute, so each level alternates baseline and ingest rounds and
// reports the median round of each (BENCH_ROUNDS, default 3) along with every round's ratio.
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
type Run = Awaited<ReturnType<typeof drive>>;
const median = (runs: Run[]) => [...runs].sort((a, b) => a.per_second - b.per_second)[Math.floor(runs.length / 2)]!;
const results = [];
for (const level of LEVELS) {
  const baselines: Run[] = [];
  const ingests: Run[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    baselines.push(await drive(level.concurrency, level.requests, baselineOnce));
    ingests.push(await drive(level.concurrency, level.requests, send, { service: service.process.pid, simulator: simulator.pid }));
  }
  const ingest = median(ingests);
  const baseline = median(baselines);
  results.push({
    concurrency: level.concurrency, requests: level.requests, rounds: ROUNDS, ingest, baseline_two_row_insert: baseline,
    ingest_vs_baseline: +(ingest.per_second / baseline.per_second).toFixed(3),
    round_ratios: ingests.map((run, i) => +(run.per_second / baselines[i]!.per_second).toFixed(3)),
  });
}
await sql.end();
await service.stop();
await sim.stop();
await database.drop();
await baselineDb.drop();
rmSync(dir, { recursive: true, force: true });
const at32 = results.find((r) => r.concurrency === 32)!;
const at8 = results.find((r) => r.concurrency === 8)!;
console.log(JSON.stringify({
  benchmark: "webhook ingest (compiled binary, PostgreSQL, fast path against the simulator process; load generator in a third process)",
  body_bytes: bodyBytes,
  pull_requests: PULL_REQUESTS,
  results,
  targets: { "ingest >= 50% of baseline at concurrency 32": at32.ingest_vs_baseline >= 0.5, "p99 ack < 50 ms at concurrency 8": at8.ingest.p99_ms < 50 },
}, null, 2));
