#!/usr/bin/env bun
/**
 * Webhook ingest benchmark (issue 5 item 8): signed ~25 KB pull_request deliveries POSTed to the compiled binary on
 * PostgreSQL at concurrency 1, 8 and 32, with the fast path talking to the forge simulator (its own process), worker off.
 * Baseline in the same run: the raw PostgreSQL rate of a two-row insert transaction at the same concurrency (postgres.js).
 * Prints JSON. Needs TEST_POSTGRES_URL (scripts/bench.sh starts a cluster) and dist/service.
 *
 * Older builds beside the new one, so that a regression shows in one run (issue 26 item 8):
 *   INGEST_BENCH_BINARIES=old=/tmp/old/service,new=dist/service bash scripts/bench.sh ingest
 *     each build gets its own database, simulator and service, and every round runs the baseline and then each build in turn
 *     (alternating, on a shared machine whose speed drifts); each build's rounds are reported with their median and spread
 *   INGEST_BENCH_FORGE=unreachable: the fast path's forge refuses connections (every fast path fails at once and its held
 *     work is released), as the measurement; default: the simulator
 *   INGEST_BENCH_SERVICE_CPUS=0: each service runs pinned to these CPUs (taskset -c), as the measurement
 *   INGEST_BENCH_LEVELS=32 (default 1,8,32), BENCH_ROUNDS (default 3)
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { generateAppKeys } from "../../server/simulator/scenario.ts";
import { BINARY, ensureBinary, runBinary, startBinary } from "../support/binary.ts";
import { createTestDatabase } from "../support/databases.ts";
import { pullRequestEvent, signedDelivery } from "../support/payloads.ts";
import { UNPACED_FORGE } from "./unpaced-forge.ts";

const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
/** Deliveries rotate over this many open pull requests (each its own head), as real traffic spreads over pull requests. */
const PULL_REQUESTS = 64;
const ALL_LEVELS = [
  { concurrency: 1, requests: 300 },
  { concurrency: 8, requests: 1200 },
  { concurrency: 32, requests: 2400 },
];
const LEVELS = process.env.INGEST_BENCH_LEVELS ? ALL_LEVELS.filter((l) => process.env.INGEST_BENCH_LEVELS!.split(",").map(Number).includes(l.concurrency)) : ALL_LEVELS;
const FORGE = process.env.INGEST_BENCH_FORGE === "unreachable" ? "unreachable" : "simulator";
const CPUS = process.env.INGEST_BENCH_SERVICE_CPUS ?? "";
const binaries = (process.env.INGEST_BENCH_BINARIES ?? `current=${process.env.BENCH_SERVICE_COMMAND ?? BINARY}`).split(",").map((entry) => {
  const at = entry.indexOf("=");
  return at > 0 ? { name: entry.slice(0, at), path: resolve(entry.slice(at + 1)) } : { name: entry, path: resolve(entry) };
});

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

if (binaries.some((b) => b.path === BINARY)) ensureBinary();
const dir = mkdtempSync(join(tmpdir(), "svc-bench-"));
const keys = generateAppKeys();
writeFileSync(join(dir, "key.pem"), keys.privateKey);
writeFileSync(join(dir, "secret"), SECRET);

type Seeded = { url: string; appId: number; installationId: number; repositoryId: number; pullNumber: number; headSha: string; pulls: Array<{ number: number; headSha: string }> };

/** A forge simulator as its own process (its work does not compete with the load generator's event loop), seeded. */
async function startSimulator() {
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
  return { seeded: JSON.parse(line) as Seeded, pid: simulator.pid, stop: async () => { simulator.kill("SIGTERM"); await simulator.exited; } };
}

/** A closed port on loopback: the fast path's forge refuses every connection. */
function unreachableUrl(): string {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return `http://127.0.0.1:${port}`;
}

// ~25 KB: a realistic pull_request payload whose body text carries the bulk, as long descriptions do.
function signedPayloads(seeded: Pick<Seeded, "repositoryId" | "installationId" | "pulls">) {
  const payloads = seeded.pulls.map((pull) => {
    const base = pullRequestEvent("synchronize", { repo: { id: seeded.repositoryId, owner: "acme", name: "web" }, number: pull.number, headSha: pull.headSha, installationId: seeded.installationId });
    return { ...base, pull_request: { ...base.pull_request, body: "Lorem ipsum dolor sit amet. ".repeat(880) } };
  });
  // The signature covers the body only, so each pull request's delivery is signed once and sent under fresh delivery IDs: the
  // load generator's own work stays small next to the service's (as the baseline's does).
  return payloads.map((payload) => signedDelivery(SECRET, "pull_request", "x", payload));
}

/** One build under test: its own database, forge (simulator or none) and service, and a sender of its deliveries. */
async function startTarget(binary: { name: string; path: string }) {
  const sim = FORGE === "simulator" ? await startSimulator() : null;
  const seeded = sim?.seeded ?? { appId: 1, installationId: 77, repositoryId: 1001, pulls: Array.from({ length: PULL_REQUESTS }, (_, i) => ({ number: i + 1, headSha: (i + 1).toString(16).padStart(40, "0") })) };
  const database = await createTestDatabase("postgresql");
  let env: Record<string, string> = {
    SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim?.seeded.url ?? unreachableUrl(), SERVICE_FORGE_APP_ID: String(seeded.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
    SERVICE_WORKER_ENABLED: "false", SERVICE_RECONCILE_ENABLED: "false", SERVICE_LOG_LEVEL: "info", ...UNPACED_FORGE,
  };
  let migrated = runBinary(["database", "migrate"], env, { binary: binary.path });
  if (migrated.exitCode !== 0 && Object.keys(UNPACED_FORGE).some((name) => migrated.stderr.includes(name))) {
    // A build from before the forge request governor refuses its settings as unknown, and runs without them.
    env = Object.fromEntries(Object.entries(env).filter(([name]) => !(name in UNPACED_FORGE)));
    migrated = runBinary(["database", "migrate"], env, { binary: binary.path });
  }
  if (migrated.exitCode !== 0) throw new Error(`migrate failed (${binary.name}): ${migrated.stderr.slice(0, 2000)}`);
  // BENCH_SERVICE_COMMAND (a program taking the binary's arguments, e.g. a wrapper running `bun --cpu-prof-md server/main.ts`)
  // lets a profiler watch the service under exactly this load; INGEST_BENCH_SERVICE_CPUS pins it.
  const service = await startBinary(env, CPUS ? { binary: "taskset", args: ["-c", CPUS, binary.path, "serve"] } : { binary: binary.path });
  const signed = signedPayloads(seeded);
  let sequence = 0;
  const send = async () => {
    const n = sequence++;
    const delivery = signed[n % signed.length]!;
    const headers = { ...delivery.headers, "x-forge-delivery": `bench-${binary.name}-${process.pid}-${n}` };
    const response = await fetch(`${service.url}/webhooks/forge`, { method: "POST", headers, body: delivery.body as BodyInit });
    if (response.status !== 202) throw new Error(`unexpected ${response.status} (${binary.name})`);
    await response.arrayBuffer();
  };
  const processes: Record<string, number> = { service: service.process.pid, ...(sim ? { simulator: sim.pid } : {}) };
  return {
    name: binary.name, send, processes, bodyBytes: signed[0]!.body.byteLength,
    stop: async () => {
      await service.stop();
      await sim?.stop();
      await database.drop();
    },
  };
}

const targets: Awaited<ReturnType<typeof startTarget>>[] = [];
for (const binary of binaries) targets.push(await startTarget(binary));
for (const target of targets) await drive(4, 100, target.send); // warm-up: token, prepared statements, checks created
const bodyBytes = targets[0]!.bodyBytes;

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

// A shared machine's speed drifts by tens of percent within a minute, so each level alternates baseline and ingest rounds
// (each build in turn, the first build first in odd rounds and last in even ones) and reports the median round of each
// (BENCH_ROUNDS, default 3) along with every round's figures and ratio.
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
type Run = Awaited<ReturnType<typeof drive>>;
const median = (runs: Run[]) => [...runs].sort((a, b) => a.per_second - b.per_second)[Math.floor(runs.length / 2)]!;
const medianOf = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
type BuildResult = { ingest: Run; ingest_vs_baseline: number; median_p99_ms: number; rounds: { per_second: number[]; p99_ms: number[] }; round_ratios: number[] };
const results: Array<{ concurrency: number; builds: Record<string, BuildResult> } & Record<string, unknown>> = [];
for (const level of LEVELS) {
  const baselines: Run[] = [];
  const ingests = new Map<string, Run[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    baselines.push(await drive(level.concurrency, level.requests, baselineOnce));
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) ingests.get(target.name)!.push(await drive(level.concurrency, level.requests, target.send, target.processes));
  }
  const baseline = median(baselines);
  const builds: Record<string, BuildResult> = Object.fromEntries(targets.map((target) => {
    const runs = ingests.get(target.name)!;
    const ingest = median(runs);
    return [target.name, {
      ingest, ingest_vs_baseline: +(ingest.per_second / baseline.per_second).toFixed(3),
      median_p99_ms: medianOf(runs.map((r) => r.p99_ms)),
      rounds: { per_second: runs.map((r) => r.per_second), p99_ms: runs.map((r) => r.p99_ms) },
      round_ratios: runs.map((run, i) => +(run.per_second / baselines[i]!.per_second).toFixed(3)),
    }];
  }));
  const first = targets[0]!.name;
  // Each later build against the first in the same rounds: its rate over the first's, round by round.
  const versus = Object.fromEntries(targets.slice(1).map((target) => [`${target.name}/${first}`, ingests.get(target.name)!.map((run, i) => +(run.per_second / ingests.get(first)![i]!.per_second).toFixed(3))]));
  results.push({ concurrency: level.concurrency, requests: level.requests, rounds: ROUNDS, baseline_two_row_insert: baseline, baseline_rounds: baselines.map((r) => r.per_second), builds, ...(targets.length > 1 ? { per_round_rate_ratio: versus } : {}) });
}
await sql.end();
for (const target of targets) await target.stop();
await baselineDb.drop();
rmSync(dir, { recursive: true, force: true });
const at = (concurrency: number) => results.find((r) => r.concurrency === concurrency);
const last = targets.at(-1)!.name;
const at32 = at(32)?.builds[last];
const at8 = at(8)?.builds[last];
console.log(JSON.stringify({
  benchmark: `webhook ingest (compiled binary, PostgreSQL, fast path against ${FORGE === "simulator" ? "the simulator process" : "an unreachable forge"}; load generator in a third process)`,
  body_bytes: bodyBytes,
  pull_requests: PULL_REQUESTS,
  service_cpus: CPUS || "any",
  builds: binaries,
  results,
  targets: {
    ...(at32 ? { [`${last}: ingest >= 50% of baseline at concurrency 32`]: at32.ingest_vs_baseline >= 0.5 } : {}),
    ...(at8 ? { [`${last}: p99 ack < 50 ms at concurrency 8`]: at8.ingest.p99_ms < 50 } : {}),
    // No regression against the first (older) build, level by level: the median of the per-round rate ratios (each round
    // runs both builds back to back) is at least 1, and the median p99 is no higher.
    ...Object.fromEntries(targets.length < 2 ? [] : results.flatMap((result) => {
      const ratios = (result.per_round_rate_ratio as Record<string, number[]>)[`${last}/${targets[0]!.name}`]!;
      return [
        [`${last}: rate >= ${targets[0]!.name}'s at concurrency ${result.concurrency}`, medianOf(ratios) >= 1],
        [`${last}: median p99 <= ${targets[0]!.name}'s at concurrency ${result.concurrency}`, result.builds[last]!.median_p99_ms <= result.builds[targets[0]!.name]!.median_p99_ms],
      ];
    })),
  },
}, null, 2));
