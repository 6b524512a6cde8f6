import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { DEFAULTS, loadConfig } from "../server/config/index.ts";
import { type RunningService, startService } from "../server/commands/serve.ts";
import { migrateDatabase } from "../server/store/index.ts";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";
import { declaredLengthsFilling, sendMembershipRemoval, startSlowSenders, type ValidOutcome } from "./support/slow-senders.ts";

/**
 * Issue 25 item 2, a smaller version of `npm run bench -- bodies` against the real server (`serve` in-process, SQLite, no
 * forge): slow senders whose declared lengths fill the default 64 MiB budget exactly (six of 10 MiB, one of 4 MiB, the rest
 * small), a byte now and then, reconnecting whenever closed, while valid signed deliveries keep arriving. Before the fix the
 * declared lengths were reserved up front and every valid delivery was answered 503 `busy`.
 */
const SECRET = "slow-senders-webhook-secret-0123456789abcdef";
let service: RunningService | undefined;
let database: TestDatabase | undefined;
let dir: string | undefined;
afterEach(async () => {
  await service?.stop();
  await database?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  service = undefined;
  database = undefined;
  dir = undefined;
});

test("slow senders whose declared lengths fill the budget do not silence valid deliveries", async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-slow-senders-"));
  writeFileSync(join(dir, "secret"), SECRET);
  database = await createTestDatabase("sqlite");
  await migrateDatabase(database.target, Date.now());
  const config = loadConfig({
    SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"), SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0",
    SERVICE_WORKER_ENABLED: "false", SERVICE_RECONCILE_ENABLED: "false",
  });
  service = await startService(config, pino({ level: "silent" }));

  const declared = declaredLengthsFilling(DEFAULTS.webhookUnverifiedBodyBudgetBytes, 12);
  expect(declared.slice(0, 7)).toEqual([...Array(6).fill(10 * 1024 * 1024), 4 * 1024 * 1024]);
  expect(declared.reduce((sum, n) => sum + n, 0) - 5 * 1024).toBe(DEFAULTS.webhookUnverifiedBodyBudgetBytes);
  const attack = startSlowSenders(service.port, declared, { byteIntervalMs: 250, stopAt: Date.now() + 15_000 });
  try {
    // The attack takes hold first (on the old build its reservations filled the budget at once).
    await Bun.sleep(300);
    const pending: Array<Promise<ValidOutcome>> = [];
    for (let i = 0; i < 20; i++) {
      pending.push(sendMembershipRemoval(service.url, SECRET, `valid-${i}`));
      await Bun.sleep(150);
    }
    const outcomes = await Promise.all(pending);
    expect(outcomes.map((o) => o.status)).toEqual(Array(20).fill(202));
    expect(outcomes.filter((o) => o.ms > 2_000)).toEqual([]);
    // The slow senders were cut off and came back (the attack went on the whole time).
    expect(attack.stats.cutOff).toBeGreaterThanOrEqual(declared.length);
    expect(attack.stats.answers["400"]).toBeGreaterThanOrEqual(declared.length);
  } finally {
    await attack.stop();
  }
});
