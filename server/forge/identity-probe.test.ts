import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { createForgeClient } from "./client.ts";
import { ForgeError } from "./errors.ts";
import { createIdentityProbe, type ProbeClock } from "./identity-probe.ts";
import { bufferLogger, CHECK_NAME, clientFor } from "./test-support.ts";

class FakeClock implements ProbeClock {
  at = 0;
  private timers = new Map<number, { due: number; run: () => void }>();
  private next = 1;
  now() { return this.at; }
  setTimeout(run: () => void, ms: number) { const id = this.next++; this.timers.set(id, { due: this.at + ms, run }); return id; }
  clearTimeout(handle: unknown) { this.timers.delete(handle as number); }
  /** Moves time forward, firing due timers and letting the passes they start settle. */
  async advance(ms: number) {
    const end = this.at + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, t]) => t.due <= end).sort((a, b) => a[1].due - b[1].due)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.at = due[1].due;
      due[1].run();
      await settle();
    }
    this.at = end;
  }
}
const settle = async () => { for (let i = 0; i < 10; i++) await Promise.resolve(); };

function scripted(answers: (number | "fail")[]) {
  let i = 0;
  return {
    calls: () => i,
    getApp: async () => {
      const a = answers[Math.min(i++, answers.length - 1)];
      if (a === "fail") throw new ForgeError("transient", "GET /app: forge error (status 502)", 502);
      return { id: a!, slug: "approval-service" };
    },
  };
}

describe("App identity probe", () => {
  test("runs at start and every interval; fresh for the freshness window after the last success", async () => {
    const clock = new FakeClock();
    const client = scripted([7, "fail", "fail", "fail", "fail"]);
    const probe = createIdentityProbe({ client, appId: 7, intervalMs: 30_000, freshnessMs: 90_000, clock });
    expect(probe.isFresh()).toBe(false);
    probe.start();
    await settle();
    expect(client.calls()).toBe(1);
    expect(probe.isFresh()).toBe(true);
    await clock.advance(30_000);
    expect(client.calls()).toBe(2);
    expect(probe.isFresh()).toBe(true); // one failed refresh keeps a still-fresh success
    await clock.advance(60_000);
    expect(client.calls()).toBe(4);
    expect(probe.isFresh()).toBe(true);
    await clock.advance(1);
    expect(probe.isFresh()).toBe(false);
    await probe.stop();
  });

  test("an answer naming another App is never fresh, even right after a success", async () => {
    const clock = new FakeClock();
    const probe = createIdentityProbe({ client: scripted([7, 8]), appId: 7, intervalMs: 30_000, freshnessMs: 90_000, clock });
    probe.start();
    await settle();
    expect(probe.isFresh()).toBe(true);
    await clock.advance(30_000);
    expect(probe.isFresh()).toBe(false);
    await probe.stop();
  });

  test("stop() waits for the pass in flight and schedules nothing after it", async () => {
    const clock = new FakeClock();
    let release!: () => void;
    let calls = 0;
    const client = { getApp: () => { calls++; return new Promise<{ id: number; slug: string }>((resolve) => { release = () => resolve({ id: 7, slug: "a" }); }); } };
    const probe = createIdentityProbe({ client, appId: 7, intervalMs: 30_000, freshnessMs: 90_000, clock });
    probe.start();
    let stopped = false;
    const stopping = probe.stop().then(() => { stopped = true; });
    await settle();
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(stopped).toBe(true);
    await clock.advance(120_000);
    expect(calls).toBe(1);
  });

  describe("against the forge simulator", () => {
    let sim: ForgeSimulator;
    let s: Scenario;
    beforeAll(async () => { sim = startForgeSimulator(); s = await createScenario(sim, { keys: generateAppKeys() }); });
    afterAll(async () => { await sim.stop(); });

    test("the configured App's key is fresh; a key of another App or a different App ID is not", async () => {
      const good = createIdentityProbe({ client: clientFor(sim, s), appId: s.appId, intervalMs: 30_000, freshnessMs: 90_000, clock: new FakeClock() });
      await good.runOnce();
      expect(good.isFresh()).toBe(true);

      const other = createIdentityProbe({ client: clientFor(sim, s), appId: s.botAppId, intervalMs: 30_000, freshnessMs: 90_000, clock: new FakeClock() });
      await other.runOnce();
      expect(other.isFresh()).toBe(false);

      const wrongKey = createForgeClient({ apiUrl: sim.url, appId: s.appId, privateKey: generateAppKeys().privateKey, requestTimeoutMs: 1000, checkName: CHECK_NAME, logger: bufferLogger().logger });
      await expect(wrongKey.getApp()).rejects.toMatchObject({ kind: "unauthorized" });
      const rejected = createIdentityProbe({ client: wrongKey, appId: s.appId, intervalMs: 30_000, freshnessMs: 90_000, clock: new FakeClock() });
      await rejected.runOnce();
      expect(rejected.isFresh()).toBe(false);
    });
  });
});
