import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScenario, generateAppKeys, type Scenario } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { ensureBinary, type RunningBinary, runBinary, startBinary } from "./support/binary.ts";
import { BACKENDS, createTestDatabase, type TestDatabase } from "./support/databases.ts";
import { assertReplayAgreement, type ReplayReport, replayEveryRecord } from "./support/replay-records.ts";

/**
 * The compiled executable recovers a missed delivery: the scenario's pull request was opened and approved while nothing
 * listened (the forge does not retry), and the first reconciliation, which runs at startup, queues it; the worker publishes
 * the correct check. On PostgreSQL, two processes elect one reconciler; the other takes over when the leader stops.
 */
let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-rec-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function metric(service: RunningBinary, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(" ")[1]) : Number.NaN;
}
const attempts = async (service: RunningBinary) =>
  (await metric(service, "service_reconciliations_total", '{result="success"}'))
  + (await metric(service, "service_reconciliations_total", '{result="partial"}'))
  + (await metric(service, "service_reconciliations_total", '{result="failure"}'));

async function until(what: string, condition: () => Promise<boolean> | boolean, timeoutMs: number, output: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms\n${output().split("\n").slice(-20).join("\n")}`);
    await Bun.sleep(50);
  }
}

describe.each(BACKENDS)("compiled binary reconciler on %s", (backend) => {
  let sim: ForgeSimulator;
  let scenario: Scenario;
  let database: TestDatabase;
  const services: RunningBinary[] = [];
  let env: Record<string, string>;

  afterEach(async () => {
    for (const service of services.splice(0)) await service.stop().catch(() => {});
    // The records the binaries wrote must replay to themselves (issue 28 item 4; e2e/support/replay-records.ts).
    let report: ReplayReport | null = null;
    try {
      if (sim && database && scenario) report = await replayEveryRecord(database.target, sim, scenario);
    } finally {
      await sim?.stop();
      await database?.drop();
    }
    if (report) assertReplayAgreement(report);
  });

  async function prepare() {
    const keys = generateAppKeys();
    // No webhook URL: every delivery of the scenario (pull request opened, two approvals) is lost.
    sim = startForgeSimulator({});
    scenario = await createScenario(sim, { keys, reviewers: ["alice", "bob"] });
    database = await createTestDatabase(backend);
    writeFileSync(join(dir, `key-${backend}.pem`), keys.privateKey);
    writeFileSync(join(dir, `webhook-${backend}`), "reconciler-binary-webhook-secret-0123456789");
    env = {
      SERVICE_DATABASE_URL: database.url,
      SERVICE_FORGE_API_URL: sim.url,
      SERVICE_FORGE_APP_ID: String(scenario.appId),
      SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, `key-${backend}.pem`),
      SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, `webhook-${backend}`),
      SERVICE_RECONCILE_ENABLED: "true",
      SERVICE_RECONCILE_INTERVAL_SECONDS: "10",
      SERVICE_LOG_LEVEL: "debug",
    };
    const migrate = runBinary(["database", "migrate"], env);
    expect(migrate.exitCode).toBe(0);
  }

  const check = () => sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: scenario.headSha }) as Array<{ status: string; conclusion: string | null }>;

  test("a pull request whose deliveries were all missed gets its correct check from the startup scan", async () => {
    await prepare();
    expect(check()).toHaveLength(0);
    const service = await startBinary(env);
    services.push(service);
    await until("the success check", () => check()[0]?.conclusion === "success", 20_000, service.output);
    expect(check()).toHaveLength(1);
    expect(await metric(service, "service_reconciliations_total", '{result="success"}')).toBeGreaterThanOrEqual(1);
    expect(await metric(service, "service_reconciliation_last_success_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    const ready = await (await fetch(`${service.url}/health/ready`)).json();
    expect(ready).toMatchObject({ status: "ready", reconciler_enabled: true, reconciler: true });
    services.splice(services.indexOf(service), 1);
    const { exitCode } = await service.stop();
    expect(exitCode).toBe(0);
    expect(service.output()).toContain("reconciliation finished");
  }, 60_000);

  if (backend === "postgresql") {
    test("two processes on one database elect one reconciler; the other records no attempt until the leader stops", async () => {
      await prepare();
      const first = await startBinary(env);
      services.push(first);
      await until("the first process's startup scan", async () => (await attempts(first)) >= 1, 20_000, first.output);
      const second = await startBinary(env);
      services.push(second);
      await until("the success check", () => check()[0]?.conclusion === "success", 20_000, first.output);
      // The second process's startup attempt saw the first one's lease: nothing recorded.
      await Bun.sleep(500);
      expect(await attempts(second)).toBe(0);
      expect(second.output()).not.toContain("reconciliation finished");

      // A graceful stop releases the lease; the second process is elected at its next interval (10 s).
      const stopped = await first.stop();
      services.splice(services.indexOf(first), 1);
      expect(stopped.exitCode).toBe(0);
      await until("the second process's first attempt", async () => (await attempts(second)) >= 1, 15_000, second.output);
      expect(await metric(second, "service_reconciliations_total", '{result="success"}')).toBeGreaterThanOrEqual(1);
    }, 60_000);
  }
});
