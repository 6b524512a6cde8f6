import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { all, openStore } from "../server/store/index.ts";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks, type Scenario } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { ensureBinary, runBinary, startBinary } from "./support/binary.ts";
import { BACKENDS, type BackendName, createTestDatabase, type TestDatabase } from "./support/databases.ts";
import { waitUntil, WEBHOOK_SECRET } from "./support/service.ts";
import { assertReplayAgreement, type ReplayReport, replayEveryRecord } from "./support/replay-records.ts";

/**
 * The compiled binary interrupted mid-evaluation (issue 6 item 8): killed with SIGKILL, the durable work completes after a
 * restart; stopped with SIGTERM, it exits 0 within 10 seconds and hands its lease back.
 */
let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-crash-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Fixture = { sim: ForgeSimulator; database: TestDatabase; scenario: Scenario; env: Record<string, string> };

/** Simulator + scenario + migrated database + the binary's settings; the reviews read of the next evaluation stalls. */
async function fixture(backend: BackendName, name: string, env: Record<string, string>): Promise<Fixture> {
  const keys = generateAppKeys();
  const sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
  const database = await createTestDatabase(backend);
  onlyFirstAppReceivesWebhooks(sim);
  const scenario = await createScenario(sim, { keys });
  writeFileSync(join(dir, `${name}-key.pem`), keys.privateKey);
  writeFileSync(join(dir, `${name}-secret`), WEBHOOK_SECRET);
  const settings = {
    SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, `${name}-key.pem`), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, `${name}-secret`),
    SERVICE_RECONCILE_ENABLED: "false", ...env,
  };
  expect(runBinary(["database", "migrate"], settings).exitCode).toBe(0);
  return { sim, database, scenario, env: settings };
}

/** Pushes a commit and waits until the evaluation it triggers is stalled reading reviews for `stallMs`. */
async function stallAnEvaluation(f: Fixture, stallMs: number): Promise<string> {
  const reviewsPath = `/repos/acme/web/pulls/${f.scenario.pullNumber}/reviews`;
  f.sim.injectFault({ kind: "slow", delayMs: stallMs, path: reviewsPath, times: 1 });
  const before = f.sim.requests.length;
  const { sha } = await f.sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: f.scenario.pullNumber, files: { "src/interrupted.ts": "1\n" } });
  await waitUntil(() => f.sim.requests.slice(before).some((r) => r.path === reviewsPath), "the evaluation to be in flight");
  return sha;
}

let current: Fixture | null = null;
afterEach(async () => {
  if (!current) return;
  const { sim, database, scenario } = current;
  current = null;
  // The records the binary's workers wrote must replay to themselves (issue 28 item 4; e2e/support/replay-records.ts).
  let report: ReplayReport | null = null;
  try {
    report = await replayEveryRecord(database.target, sim, scenario);
  } finally {
    await sim.stop();
    await database.drop();
  }
  assertReplayAgreement(report);
});

describe.each(BACKENDS)("interrupted evaluations on %s", (backend) => {
  test("a binary killed with SIGKILL mid-evaluation completes the work after restart", async () => {
    const f = (current = await fixture(backend, `${backend}-kill`, { SERVICE_WORKER_LEASE_SECONDS: "3" }));
    const checkOn = (sha: string) => f.sim.control.checkRuns({ owner: "acme", repo: "web", headSha: sha })[0];
    const first = await startBinary(f.env);
    f.sim.control.mustApp(f.scenario.appId).webhookUrl = `${first.url}/webhooks/forge`;
    const sha = await stallAnEvaluation(f, 5_000);
    expect(checkOn(sha)!.status).toBe("in_progress");
    expect((await first.stop("SIGKILL")).exitCode).not.toBe(0);

    const second = await startBinary(f.env);
    try {
      f.sim.control.mustApp(f.scenario.appId).webhookUrl = `${second.url}/webhooks/forge`;
      await waitUntil(() => checkOn(sha)?.status === "completed", "the restarted worker to finish the evaluation", 20_000);
      expect(checkOn(sha)!.conclusion).toBe("failure");
    } finally {
      expect((await second.stop()).exitCode).toBe(0);
    }
  }, 60_000);

  test("SIGTERM during an evaluation exits 0 within 10 seconds and hands the lease back", async () => {
    const f = (current = await fixture(backend, `${backend}-term`, {}));
    const service = await startBinary(f.env);
    f.sim.control.mustApp(f.scenario.appId).webhookUrl = `${service.url}/webhooks/forge`;
    await stallAnEvaluation(f, 7_000);
    const { exitCode, ms } = await service.stop("SIGTERM");
    expect(exitCode).toBe(0);
    expect(ms).toBeLessThan(10_000);
    const store = openStore(f.database.target);
    try {
      const rows = await store.execute(function* () { return yield* all("select kind, state, lease_owner from jobs where kind = 'evaluation'"); });
      expect(rows).toEqual([{ kind: "evaluation", state: "pending", lease_owner: null }]);
    } finally {
      await store.close();
    }
  }, 60_000);
});
