import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fiveStarRule, sixtyDeepPath } from "../server/evaluation/evidence-fixture.ts";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { ensureBinary, type RunningBinary, simulatorEnv, startForSimulator } from "./support/binary.ts";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";

/**
 * The compiled executable decides on evaluation threads (issue 16 item 2): a pull request whose paths make the decision spend
 * its whole matching budget is decided (failure, naming the bound) while the HTTP routes keep answering. Responsiveness is
 * the number of health probes answered inside the evaluations' windows (from the service's own debug log), not a timing.
 */
const WEBHOOK_SECRET = "evaluation-thread-webhook-secret-0123456789";
const RULES = ["* @acme/core", ...Array.from({ length: 100 }, (_, i) => `${fiveStarRule(i)} @bob`)].join("\n") + "\n";

let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-thread-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("compiled binary evaluation threads", () => {
  let sim: ForgeSimulator | undefined;
  let database: TestDatabase | undefined;
  let service: RunningBinary | undefined;
  afterEach(async () => {
    await service?.stop();
    await sim?.stop();
    await database?.drop();
  });

  test("health probes keep answering while the service decides a pull request that spends the whole matching budget", async () => {
    const keys = generateAppKeys();
    sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    onlyFirstAppReceivesWebhooks(sim);
    const scenario = await createScenario(sim, { keys });
    database = await createTestDatabase("sqlite");
    const env = { ...simulatorEnv({ simUrl: sim.url, appId: scenario.appId, privateKey: keys.privateKey, webhookSecret: WEBHOOK_SECRET, databaseUrl: database.url, dir }), SERVICE_LOG_LEVEL: "debug" };
    service = await startForSimulator(sim, scenario.appId, env);
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    await sim.control.commit({ owner: pr.owner, repo: pr.repo, branch: "main", files: { ".forge/CODEOWNERS": RULES } });

    const probes: { sent: number; done: number; status: number }[] = [];
    let probing = true;
    const url = service.url;
    const prober = (async () => {
      while (probing) {
        const sent = Date.now();
        const response = await fetch(`${url}/health/live`);
        await response.arrayBuffer();
        probes.push({ sent, done: Date.now(), status: response.status });
        await Bun.sleep(5);
      }
    })();
    // 600 paths none of the rules owns: about 34,000,000 matching steps, well past MAX_MATCH_STEPS.
    const files = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [sixtyDeepPath(`f${i}.txt`), "x\n"]));
    const { sha } = await sim.control.pushToPullRequest({ ...pr, files });
    const check = () => (sim!.control.checkRuns({ owner: pr.owner, repo: pr.repo, headSha: sha }) as Array<{ status: string; conclusion: string | null; output: { title: string | null } }>)[0];
    const deadline = Date.now() + 90_000;
    while (check()?.status !== "completed") {
      if (Date.now() > deadline) throw new Error(`no completed check:\n${service.output().split("\n").slice(-20).join("\n")}`);
      await Bun.sleep(50);
    }
    probing = false;
    await prober;

    expect(check()).toMatchObject({ conclusion: "failure", output: { title: "Path matching exceeded its work bound" } });
    // The evaluation windows, from the service's own log: each thread answer with how long its request took.
    const windows = service
      .output()
      .split("\n")
      .filter((line) => line.includes('"msg":"evaluation thread answered"'))
      .map((line) => JSON.parse(line) as { time: string; ms: number })
      .map((entry) => ({ start: Date.parse(entry.time) - entry.ms, end: Date.parse(entry.time) }));
    const busyMs = windows.reduce((sum, window) => sum + (window.end - window.start), 0);
    expect(busyMs).toBeGreaterThanOrEqual(300); // the scenario is heavy: plan and decide each spend the whole budget
    const inside = probes.filter((probe) => windows.some((window) => probe.sent >= window.start && probe.done <= window.end));
    expect(inside.length).toBeGreaterThanOrEqual(3);
    expect(inside.every((probe) => probe.status === 200)).toBe(true);
  }, 180_000);
});
