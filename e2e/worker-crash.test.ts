import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks } from "./forge/scenario.ts";
import { startForgeSimulator } from "./forge/simulator.ts";
import { ensureBinary, runBinary, startBinary } from "./support/binary.ts";
import { BACKENDS, createTestDatabase } from "./support/databases.ts";
import { all, openStore } from "../server/store/index.ts";
import { waitUntil, WEBHOOK_SECRET } from "./support/service.ts";

/** The compiled binary killed with SIGKILL mid-evaluation: after a restart the durable work completes (issue 6 item 8). */
let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-crash-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(BACKENDS)("crash recovery on %s", (backend) => {
  test("a binary killed mid-evaluation completes the work after restart", async () => {
    const keys = generateAppKeys();
    const sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    const database = await createTestDatabase(backend);
    try {
      onlyFirstAppReceivesWebhooks(sim);
      const scenario = await createScenario(sim, { keys });
      writeFileSync(join(dir, `${backend}-key.pem`), keys.privateKey);
      writeFileSync(join(dir, `${backend}-secret`), WEBHOOK_SECRET);
      const env = {
        SERVICE_DATABASE_URL: database.url,
        SERVICE_FORGE_API_URL: sim.url,
        SERVICE_FORGE_APP_ID: String(scenario.appId),
        SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, `${backend}-key.pem`),
        SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, `${backend}-secret`),
        SERVICE_WORKER_LEASE_SECONDS: "3",
        SERVICE_RECONCILE_ENABLED: "false",
        SERVICE_LOG_LEVEL: "info",
      };
      expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
      const first = await startBinary(env);
      sim.control.mustApp(scenario.appId).webhookUrl = `${first.url}/webhooks/forge`;

      const reviewsPath = `/repos/acme/web/pulls/${scenario.pullNumber}/reviews`;
      sim.injectFault({ kind: "slow", delayMs: 5_000, path: reviewsPath, times: 1 });
      const before = sim.requests.length;
      const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/crash.ts": "1\n" } });
      await waitUntil(() => sim.requests.slice(before).some((r) => r.path === reviewsPath), "the evaluation to be in flight");
      expect(sim.control.checkRuns({ owner: "acme", repo: "web", headSha: sha })[0]!.status).toBe("in_progress");
      const killed = await first.stop("SIGKILL");
      expect(killed.exitCode).not.toBe(0);

      const second = await startBinary(env);
      try {
        sim.control.mustApp(scenario.appId).webhookUrl = `${second.url}/webhooks/forge`;
        await waitUntil(() => sim.control.checkRuns({ owner: "acme", repo: "web", headSha: sha })[0]?.status === "completed", "the restarted worker to finish the evaluation", 20_000);
        expect(sim.control.checkRuns({ owner: "acme", repo: "web", headSha: sha })[0]!.conclusion).toBe("failure");
      } finally {
        expect((await second.stop()).exitCode).toBe(0);
      }
    } finally {
      await sim.stop();
      await database.drop();
    }
  }, 60_000);
});

describe.each(BACKENDS)("graceful shutdown on %s", (backend) => {
  test("SIGTERM during an evaluation exits 0 within 10 seconds and hands the lease back", async () => {
    const keys = generateAppKeys();
    const sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    const database = await createTestDatabase(backend);
    try {
      onlyFirstAppReceivesWebhooks(sim);
      const scenario = await createScenario(sim, { keys });
      writeFileSync(join(dir, `${backend}-term-key.pem`), keys.privateKey);
      writeFileSync(join(dir, `${backend}-term-secret`), WEBHOOK_SECRET);
      const env = {
        SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
        SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, `${backend}-term-key.pem`), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, `${backend}-term-secret`),
        SERVICE_RECONCILE_ENABLED: "false",
      };
      expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
      const service = await startBinary(env);
      sim.control.mustApp(scenario.appId).webhookUrl = `${service.url}/webhooks/forge`;
      const reviewsPath = `/repos/acme/web/pulls/${scenario.pullNumber}/reviews`;
      sim.injectFault({ kind: "slow", delayMs: 7_000, path: reviewsPath, times: 1 });
      const before = sim.requests.length;
      await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/term.ts": "1\n" } });
      await waitUntil(() => sim.requests.slice(before).some((r) => r.path === reviewsPath), "the evaluation to be in flight");
      const { exitCode, ms } = await service.stop("SIGTERM");
      expect(exitCode).toBe(0);
      expect(ms).toBeLessThan(10_000);
      const store = openStore(database.target);
      try {
        const rows = await store.execute(function* () { return yield* all("select kind, state, lease_owner from jobs where kind = 'evaluation'"); });
        expect(rows).toEqual([{ kind: "evaluation", state: "pending", lease_owner: null }]);
      } finally {
        await store.close();
      }
    } finally {
      sim.faults.clear();
      await sim.stop();
      await database.drop();
    }
  }, 60_000);
});
