#!/usr/bin/env bun
/**
 * Worker benchmark (issue 6 item 9), in-process on PostgreSQL against the forge simulator:
 * - webhook-to-completed-check latency (p50/p99) for a 50-file pull request: each iteration pushes a new commit and times
 *   the simulator's delivery until the managed check on that head is completed;
 * - evaluations per second with 200 pull requests queued: 200 pull requests are opened while no worker runs, then a service
 *   with the worker starts and the time until all 200 checks completed is measured.
 * Prints JSON. Needs TEST_POSTGRES_URL (scripts/bench.sh).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { loadConfig } from "../../server/config/index.ts";
import { startService } from "../../server/commands/serve.ts";
import { migrateDatabase } from "../../server/store/index.ts";
import { createScenario, generateAppKeys } from "../../server/simulator/scenario.ts";
import { startForgeSimulator } from "../../server/simulator/simulator.ts";
import { createTestDatabase } from "../support/databases.ts";
import { UNPACED_FORGE } from "./unpaced-forge.ts";

const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
const ITERATIONS = 40;
const QUEUED = 200;

const dir = mkdtempSync(join(tmpdir(), "svc-wbench-"));
const keys = generateAppKeys();
const sim = startForgeSimulator({ webhookSecret: SECRET });
const scenario = await createScenario(sim, { keys, extraFiles: 48 });
writeFileSync(join(dir, "key.pem"), keys.privateKey);
writeFileSync(join(dir, "secret"), SECRET);
const database = await createTestDatabase("postgresql");
await migrateDatabase(database.target, Date.now());
const env = (worker: boolean) => ({
  SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
  SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
  SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0", SERVICE_RECONCILE_ENABLED: "false", SERVICE_WORKER_ENABLED: String(worker),
  ...UNPACED_FORGE,
});
const log = pino({ level: "error" });
const completedAt = new Map<string, number>();
const onTransition = (t: { headSha: string; status: string }) => {
  if (t.status === "completed" && !completedAt.has(t.headSha)) completedAt.set(t.headSha, performance.now());
};
const app = sim.control.mustApp(scenario.appId);
const pr = { owner: "acme", repo: "web", number: scenario.pullNumber };

// 1. Latency for a 50-file pull request.
let service = await startService(loadConfig(env(true)), log, { onTransition });
app.webhookUrl = `${service.url}/webhooks/forge`;
const latencies: number[] = [];
for (let i = 0; i < ITERATIONS + 3; i++) {
  const started = performance.now();
  const { sha } = await sim.control.pushToPullRequest({ ...pr, files: { "src/bench.ts": `export const i = ${i};\n` } });
  while (!completedAt.has(sha)) await Bun.sleep(1);
  if (i >= 3) latencies.push(completedAt.get(sha)! - started); // the first iterations warm caches and tokens
}
await service.stop();
latencies.sort((a, b) => a - b);
const pick = (p: number) => +latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(1);

// 2. Throughput with 200 pull requests queued before any worker runs.
service = await startService(loadConfig(env(false)), log, { onTransition });
app.webhookUrl = `${service.url}/webhooks/forge`;
const heads: string[] = [];
for (let i = 0; i < QUEUED; i++) {
  const branch = `bulk-${i}`;
  await sim.control.commit({ owner: "acme", repo: "web", branch, from: "main", files: { [`src/bulk/${i}.ts`]: `export const n = ${i};\n`, "docs/guide.md": `# Guide ${i}\n` } });
  const opened = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: branch, author: "erin", title: `Bulk ${i}` });
  heads.push(opened.headSha);
}
await service.stop();
const started = performance.now();
service = await startService(loadConfig(env(true)), log, { onTransition });
while (heads.some((sha) => !completedAt.has(sha))) await Bun.sleep(5);
const seconds = (performance.now() - started) / 1000;
await service.stop();
await sim.stop();
await database.drop();
rmSync(dir, { recursive: true, force: true });

console.log(JSON.stringify({
  benchmark: "worker (in-process, PostgreSQL, forge simulator)",
  webhook_to_completed_check_ms: { files: 50, iterations: latencies.length, p50: pick(50), p99: pick(99), max: +latencies.at(-1)!.toFixed(1) },
  queued_evaluations: { pull_requests: QUEUED, seconds: +seconds.toFixed(2), evaluations_per_second: +(QUEUED / seconds).toFixed(1) },
}, null, 2));
