import { expect } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks, type Scenario } from "../../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { evaluationSettingsOf, loadConfig } from "../../server/config/index.ts";
import { type RunningService, startService } from "../../server/commands/serve.ts";
import { migrateDatabase } from "../../server/store/index.ts";
import type { CheckTransition } from "../../server/worker/context.ts";
import { type BackendName, createTestDatabase, type TestDatabase } from "./databases.ts";
import { assertReplayAgreement, type ReplayReport, replayEveryRecord } from "./replay-records.ts";

/**
 * The service in-process against the forge simulator: the base scenario (one organization, a target repository with
 * CODEOWNERS and policy, teams, a trusted review App, one open pull request), our App's webhooks pointed at the service.
 */
export const WEBHOOK_SECRET = "integration-webhook-secret-0123456789abcdef";
/** The harness's reader of the decision records (SERVICE_DECISIONS_TOKEN_FILE): readApi presents it. */
export const READER_TOKEN = "integration-reader-token-0123456789abcdef";

export type ServiceHarness = {
  sim: ForgeSimulator;
  scenario: Scenario;
  service: RunningService;
  database: TestDatabase;
  transitions: CheckTransition[];
  logs: string[];
  checks(headSha: string): Array<{ id: number; status: string; conclusion: string | null; output: { title: string | null; summary: string | null; text: string | null } }>;
  /** Waits until the managed check on headSha matches, or throws with what it saw. */
  waitForCheck(headSha: string, expected: { status: string; conclusion?: string | null }, timeoutMs?: number): Promise<void>;
  /** Waits until the service's queue is empty (`service_queue_depth 0`). */
  waitForDrainedQueue(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
};

/** GET `path` of the service as JSON with the harness's reader token, failing the test (naming the path) unless it answers 200. */
export async function readApi<T>(serviceUrl: string, path: string): Promise<T> {
  const response = await fetch(`${serviceUrl}${path}`, { headers: { authorization: `Bearer ${READER_TOKEN}` } });
  expect({ path, status: response.status }).toEqual({ path, status: 200 });
  return (await response.json()) as T;
}

export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

export async function startServiceHarness(backend: BackendName, env: Record<string, string> = {}, options: { replicas?: number; postgresUrl?: string } = {}): Promise<ServiceHarness> {
  const keys = generateAppKeys();
  const sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
  // Until the service runs, deliveries to our App are lost (as on a real forge).
  onlyFirstAppReceivesWebhooks(sim);
  const scenario = await createScenario(sim, { keys });
  const dir = mkdtempSync(join(tmpdir(), "svc-int-"));
  writeFileSync(join(dir, "key.pem"), keys.privateKey);
  writeFileSync(join(dir, "webhook"), WEBHOOK_SECRET);
  writeFileSync(join(dir, "decisions-tokens"), `e2e:${READER_TOKEN}\n`);
  const database = await createTestDatabase(backend, options.postgresUrl);
  await migrateDatabase(database.target, Date.now());
  const config = loadConfig({
    SERVICE_DATABASE_URL: database.url,
    SERVICE_FORGE_API_URL: sim.url,
    SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"),
    SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "webhook"),
    SERVICE_HOST: "127.0.0.1",
    SERVICE_PORT: "0",
    SERVICE_RECONCILE_ENABLED: "false",
    SERVICE_DECISIONS_TOKEN_FILE: join(dir, "decisions-tokens"),
    ...env,
  });
  const logs: string[] = [];
  const transitions: CheckTransition[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void logs.push(line) });
  const service = await startService(config, log, { onTransition: (event) => transitions.push(event) });
  // Further replicas share the database (and the forge); only the first receives webhooks, all of them run workers.
  const replicas: RunningService[] = [];
  for (let i = 1; i < (options.replicas ?? 1); i++) replicas.push(await startService(config, log, { onTransition: (event) => transitions.push(event) }));
  const app = sim.control.mustApp(scenario.appId);
  app.webhookUrl = `${service.url}/webhooks/forge`;
  const checks = (headSha: string) => sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha }) as never;
  return {
    sim, scenario, service, database, transitions, logs, checks,
    async waitForCheck(headSha, expected, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const runs = checks(headSha) as Array<{ status: string; conclusion: string | null }>;
        const run = runs[0];
        if (run && run.status === expected.status && (expected.conclusion === undefined || run.conclusion === expected.conclusion)) return;
        if (Date.now() > deadline) throw new Error(`check on ${headSha.slice(0, 8)}: wanted ${JSON.stringify(expected)}, saw ${JSON.stringify(runs.map((r) => ({ status: r.status, conclusion: r.conclusion })))}\n${logs.slice(-15).join("")}`);
        await Bun.sleep(25);
      }
    },
    waitForDrainedQueue: (timeoutMs?: number) => waitUntil(async () => /^service_queue_depth 0$/m.test(await (await fetch(`${service.url}/metrics`)).text()), "the queue to drain", timeoutMs),
    async stop() {
      for (const replica of replicas) await replica.stop();
      await service.stop();
      // Every decision record the suite's service wrote must replay to itself (issue 28 item 4), checked while the forge is up.
      let report: ReplayReport | null = null;
      try {
        report = await replayEveryRecord(database.target, sim, scenario, evaluationSettingsOf(config));
      } finally {
        await sim.stop();
        await database.drop();
        rmSync(dir, { recursive: true, force: true });
      }
      assertReplayAgreement(report);
    },
  };
}
