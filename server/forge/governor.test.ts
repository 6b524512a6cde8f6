import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { createMetrics } from "../observability/metrics.ts";
import { manualClock, type ManualClock } from "../reconciler/test-support.ts";
import { ForgeError } from "./errors.ts";
import {
  type Answer, BACKGROUND_SHARE, createGovernor, DEFAULT_GOVERNOR_SETTINGS, type Governor, type GovernorSettings, type Permit,
  type Priority, READ_POINTS, REQUEST_KINDS, REQUEST_OUTCOMES, WINDOW_MS, WRITE_POINTS,
} from "./governor.ts";
import { clientFor } from "./test-support.ts";

const SCOPE = "installation:1";
const OTHER = "installation:2";

/** One acquire, observed: when it was admitted (on the test's clock), its permit, or why it was refused. */
type Tracked = { admittedAt: number | null; permit: Permit | null; error: unknown; done: Promise<void> };

function track(governor: Governor, clock: ManualClock, method: string, priority: Priority, scope = SCOPE, signal?: AbortSignal): Tracked {
  const t: Tracked = { admittedAt: null, permit: null, error: null, done: Promise.resolve() };
  t.done = governor.acquire(scope, method, priority, signal).then(
    (permit) => { t.admittedAt = clock.now(); t.permit = permit; },
    (error) => { t.error = error; },
  );
  return t;
}

/** Lets admitted or refused acquires report (they settle in microtasks; the clock does not move meanwhile). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

const setup = (settings: Partial<GovernorSettings> = {}) => {
  const clock = manualClock();
  const governor = createGovernor({ ...DEFAULT_GOVERNOR_SETTINGS, ...settings, clock });
  return { clock, governor };
};

/** An answer telling the primary budget: `remaining` left until `resetInMs` from now. */
const budget = (clock: ManualClock, remaining: number, resetInMs: number, status = 200): Answer =>
  ({ status, headers: { "x-ratelimit-remaining": String(remaining), "x-ratelimit-reset": String(Math.ceil((clock.now() + resetInMs) / 1000)) } });

/** Sends one request through and settles it with `answer`. */
async function answered(governor: Governor, clock: ManualClock, answer: Answer, scope = SCOPE) {
  const t = track(governor, clock, "GET", "interactive", scope);
  await flush();
  t.permit!.settle(answer);
}

describe("the primary limit", () => {
  test("background requests wait at the reserve and resume after the reset; webhook-driven ones may spend the reserve", async () => {
    const { clock, governor } = setup({ rateLimitReserve: 3 });
    await answered(governor, clock, budget(clock, 4, 5_000));
    const first = track(governor, clock, "GET", "background");
    await flush();
    expect(first.admittedAt).not.toBeNull();
    first.permit!.settle(budget(clock, 3, 5_000));
    const waiting = track(governor, clock, "GET", "background");
    const interactive = track(governor, clock, "GET", "interactive");
    await flush();
    expect(waiting.admittedAt).toBeNull();
    expect(interactive.admittedAt).not.toBeNull();
    clock.advance(4_000);
    await flush();
    expect(waiting.admittedAt).toBeNull();
    clock.advance(1_000);
    await flush();
    expect(waiting.admittedAt).not.toBeNull();
  });

  test("requests in flight count against what is left: at zero even webhook-driven work waits for the reset", async () => {
    const { clock, governor } = setup({ rateLimitReserve: 0 });
    await answered(governor, clock, budget(clock, 2, 3_000));
    const a = track(governor, clock, "GET", "interactive");
    const b = track(governor, clock, "GET", "interactive");
    const c = track(governor, clock, "GET", "interactive");
    await flush();
    expect([a.admittedAt !== null, b.admittedAt !== null, c.admittedAt]).toEqual([true, true, null]);
    clock.advance(3_000);
    await flush();
    expect(c.admittedAt).toBe(clock.now());
  });

  test("a reset further away than the bound fails the request at once as rate limited, with the delay, and sends nothing", async () => {
    const { clock, governor } = setup({ rateLimitReserve: 10 });
    await answered(governor, clock, budget(clock, 10, 30 * 60_000));
    const t = track(governor, clock, "GET", "background");
    await flush();
    expect(t.error).toBeInstanceOf(ForgeError);
    expect(t.error).toMatchObject({ kind: "rate_limited", retryAfterMs: 30 * 60_000 });
    expect(t.permit).toBeNull();
  });

  test("a rate-limited answer pauses the installation for the provider's delay; other installations go on", async () => {
    const { clock, governor } = setup();
    await answered(governor, clock, { status: 429, headers: { "retry-after": "5" } });
    const paused = track(governor, clock, "GET", "interactive");
    const other = track(governor, clock, "GET", "interactive", OTHER);
    await flush();
    expect(paused.admittedAt).toBeNull();
    expect(other.admittedAt).not.toBeNull();
    clock.advance(5_000);
    await flush();
    expect(paused.admittedAt).toBe(clock.now());
  });

  test("a caller's signal ends a wait for the reset as a rate limit with the time left, and a wait for pacing as an abort", async () => {
    const { clock, governor } = setup({ rateLimitReserve: 0, pointsPerMinute: 10 });
    await answered(governor, clock, budget(clock, 1, 8_000));
    const inFlight = track(governor, clock, "GET", "interactive");
    const deadline = new AbortController();
    const forReset = track(governor, clock, "GET", "interactive", SCOPE, deadline.signal);
    await flush();
    clock.advance(3_000);
    deadline.abort();
    await flush();
    expect(forReset.error).toMatchObject({ kind: "rate_limited", retryAfterMs: 5_000 });
    inFlight.permit!.settle({ status: 200, headers: {} });

    const { clock: c2, governor: g2 } = setup({ pointsPerMinute: 10 });
    for (let i = 0; i < 2; i++) track(g2, c2, "POST", "interactive");
    const shutdown = new AbortController();
    const forPacing = track(g2, c2, "GET", "interactive", SCOPE, shutdown.signal);
    await flush();
    expect(forPacing.admittedAt).toBeNull();
    shutdown.abort();
    await flush();
    expect(forPacing.error).toMatchObject({ name: "AbortError" });
  });
});

describe("the secondary limits", () => {
  test("pacing keeps every rolling minute within the points, writes and concurrency settings", async () => {
    const settings = { pointsPerMinute: 12, writesPerMinute: 1, concurrentRequests: 3, rateLimitReserve: 0 };
    const step = fc.record({
      gapMs: fc.integer({ min: 0, max: 3_000 }), write: fc.boolean(), background: fc.boolean(), holdSteps: fc.integer({ min: 0, max: 4 }),
    });
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 60 }), async (steps) => {
      const { clock, governor } = setup(settings);
      const admitted: { at: number; points: number; write: boolean }[] = [];
      let inFlight = 0;
      let peak = 0;
      const holding: { permit: Permit; until: number }[] = [];
      const all: Promise<void>[] = [];
      for (const [index, s] of steps.entries()) {
        clock.advance(s.gapMs);
        for (const h of holding.filter((h) => h.until <= index)) { holding.splice(holding.indexOf(h), 1); inFlight--; h.permit.settle({ status: 200, headers: {} }); }
        all.push(governor.acquire(SCOPE, s.write ? "PATCH" : "GET", s.background ? "background" : "interactive").then((permit) => {
          admitted.push({ at: clock.now(), points: s.write ? WRITE_POINTS : READ_POINTS, write: s.write });
          peak = Math.max(peak, ++inFlight);
          holding.push({ permit, until: index + s.holdSteps });
        }));
        await flush();
      }
      // Drain: settle what is held and let time pass until every request was admitted.
      for (let round = 0; admitted.length < steps.length && round < 1_000; round++) {
        for (const h of holding.splice(0)) { inFlight--; h.permit.settle({ status: 200, headers: {} }); }
        // Requests admitted by those answers are recorded before the clock moves on (at the time the governor issued them).
        await flush();
        clock.advance(5_000);
        await flush();
      }
      await Promise.all(all);
      expect(admitted.length).toBe(steps.length);
      expect(peak).toBeLessThanOrEqual(settings.concurrentRequests);
      for (const a of admitted) {
        const window = admitted.filter((b) => b.at <= a.at && b.at > a.at - WINDOW_MS);
        expect(window.reduce((sum, b) => sum + b.points, 0)).toBeLessThanOrEqual(settings.pointsPerMinute);
        expect(window.filter((b) => b.write).length).toBeLessThanOrEqual(settings.writesPerMinute);
      }
    }), { numRuns: 60 });
  });

  test("points: a request that does not fit waits until enough of the minute has passed", async () => {
    const { clock, governor } = setup({ pointsPerMinute: 12 });
    for (let i = 0; i < 2; i++) track(governor, clock, "POST", "interactive");
    clock.advance(10_000);
    const reads = [0, 1, 2].map(() => track(governor, clock, "GET", "interactive"));
    await flush();
    expect(reads.map((r) => r.admittedAt)).toEqual([clock.now(), clock.now(), null]);
    clock.advance(WINDOW_MS - 10_000 - 1);
    await flush();
    expect(reads[2]!.admittedAt).toBeNull();
    clock.advance(1);
    await flush();
    expect(reads[2]!.admittedAt).toBe(clock.now());
  });

  test("writes are paced by their own budget, which reads do not spend", async () => {
    const { clock, governor } = setup({ writesPerMinute: 3 });
    const writes = [0, 1, 2].map(() => track(governor, clock, "PATCH", "interactive"));
    await flush();
    expect(writes.every((w) => w.admittedAt !== null)).toBe(true);
    const read = track(governor, clock, "GET", "interactive");
    await flush();
    expect(read.admittedAt).not.toBeNull();
    const fourth = track(governor, clock, "POST", "interactive");
    await flush();
    expect(fourth.admittedAt).toBeNull();
    clock.advance(WINDOW_MS);
    await flush();
    expect(fourth.admittedAt).toBe(clock.now());
  });

  test("requests in flight are capped; each answer lets the next one go", async () => {
    const { clock, governor } = setup({ concurrentRequests: 2 });
    const requests = [0, 1, 2, 3].map(() => track(governor, clock, "GET", "interactive"));
    await flush();
    expect(requests.map((r) => r.admittedAt !== null)).toEqual([true, true, false, false]);
    requests[0]!.permit!.settle(null);
    await flush();
    expect(requests.map((r) => r.admittedAt !== null)).toEqual([true, true, true, false]);
  });
});

describe("priority", () => {
  test("an interactive request overtakes queued background ones", async () => {
    const { clock, governor } = setup({ concurrentRequests: 1 });
    const running = track(governor, clock, "GET", "background");
    const queued = [track(governor, clock, "GET", "background"), track(governor, clock, "GET", "background")];
    const approval = track(governor, clock, "GET", "interactive");
    await flush();
    expect([running.admittedAt !== null, approval.admittedAt, ...queued.map((q) => q.admittedAt)]).toEqual([true, null, null, null]);
    running.permit!.settle({ status: 200, headers: {} });
    await flush();
    expect(approval.admittedAt).not.toBeNull();
    expect(queued.map((q) => q.admittedAt)).toEqual([null, null]);
    approval.permit!.settle({ status: 200, headers: {} });
    await flush();
    expect(queued.map((q) => q.admittedAt !== null)).toEqual([true, false]);
  });

  test("background work leaves a quarter of the points and of the concurrency to webhook-driven work", async () => {
    const { clock, governor } = setup({ pointsPerMinute: 20, concurrentRequests: 100 });
    const background = Array.from({ length: 16 }, () => track(governor, clock, "GET", "background"));
    await flush();
    expect(background.filter((b) => b.admittedAt !== null).length).toBe(20 * BACKGROUND_SHARE);
    const interactive = track(governor, clock, "GET", "interactive");
    await flush();
    expect(interactive.admittedAt).not.toBeNull();

    const second = setup({ concurrentRequests: 4 });
    const held = Array.from({ length: 4 }, () => track(second.governor, second.clock, "GET", "background"));
    const urgent = track(second.governor, second.clock, "GET", "interactive");
    await flush();
    expect(held.map((h) => h.admittedAt !== null)).toEqual([true, true, true, false]);
    expect(urgent.admittedAt).not.toBeNull();
  });
});

test("the gauge's source is the smallest budget left in a current window, across installations", async () => {
  const { clock, governor } = setup();
  expect(governor.lowestRemaining()).toBeNull();
  await answered(governor, clock, budget(clock, 4000, 60_000));
  await answered(governor, clock, budget(clock, 1200, 30_000), OTHER);
  expect(governor.lowestRemaining()).toBe(1200);
  clock.advance(30_000);
  expect(governor.lowestRemaining()).toBe(4000);
});

describe("against the forge simulator", () => {
  let sim: ForgeSimulator;
  let s: Scenario;
  let clock: ManualClock;
  beforeAll(async () => {
    // On a whole second: the forge states resets in whole seconds.
    clock = manualClock(Math.ceil(Date.now() / 1000) * 1000);
    sim = startForgeSimulator({ rateLimitClock: () => clock.now() });
    s = await createScenario(sim, { keys: generateAppKeys() });
  });
  afterEach(() => { sim.faults.clear(); sim.rateLimits.clear(); });
  afterAll(async () => { await sim.stop(); });
  const sent = () => sim.requests.filter((r) => r.auth === "token").length;

  test("requests wait when the installation's budget reaches the reserve and go on after the reset", async () => {
    sim.rateLimits.set(s.installationId, { limit: 10, windowSeconds: 5 });
    const client = clientFor(sim, s, { governor: createGovernor({ ...DEFAULT_GOVERNOR_SETTINGS, rateLimitReserve: 3, clock }) });
    const scan = { priority: "background" as const, conditional: false as const };
    for (let i = 0; i < 7; i++) await client.getRepository(s.installationId, s.org, s.repo, scan);
    const before = sent();
    let done = false;
    const waiting = client.getRepository(s.installationId, s.org, s.repo, scan).then(() => { done = true; });
    await Bun.sleep(50);
    expect([done, sent()]).toEqual([false, before]);
    clock.advance(5_000);
    await waiting;
    expect(sent()).toBe(before + 1);
  });

  test("after the forge refuses a spent budget, nothing is sent until its reset", async () => {
    sim.rateLimits.set(s.installationId, { limit: 10, remaining: 0, windowSeconds: 5 });
    const client = clientFor(sim, s, { governor: createGovernor({ ...DEFAULT_GOVERNOR_SETTINGS, clock }) });
    await client.getRepository(s.installationId, s.org, s.repo).then(() => { throw new Error("expected a rate limit"); }, (error) => {
      expect(error).toMatchObject({ kind: "rate_limited", status: 403 });
    });
    const before = sent();
    let done = false;
    const waiting = client.getRepository(s.installationId, s.org, s.repo).then(() => { done = true; });
    await Bun.sleep(50);
    expect([done, sent()]).toEqual([false, before]);
    clock.advance(5_000);
    await waiting;
    expect(sent()).toBe(before + 1);
  });

  test("requests are counted by kind and outcome from fixed sets, and the remaining budget is a gauge", async () => {
    const metrics = createMetrics();
    const governor = createGovernor({ ...DEFAULT_GOVERNOR_SETTINGS, clock, onRequest: (kind, outcome) => metrics.forgeRequests.inc({ kind, outcome }) });
    metrics.setForgeBudgetSource(() => governor.lowestRemaining());
    expect(await metrics.registry.metrics()).toMatch(/^service_forge_rate_limit_remaining Nan$/m);
    sim.rateLimits.set(s.installationId, { limit: 5000, remaining: 4321 });
    const client = clientFor(sim, s, { governor });
    const target = { installationId: s.installationId, owner: s.org, repo: s.repo, headSha: s.headSha };
    await client.getApp();
    await client.getRepository(s.installationId, s.org, s.repo);
    await client.getRepository(s.installationId, s.org, s.repo);
    await client.getRepository(s.installationId, s.org, "no-such-repository").catch(() => {});
    await client.createInProgressCheck(target, { title: "t", summary: "s" });
    sim.injectFault({ kind: "status", status: 502, path: `/repos/${s.org}/${s.repo}`, times: 1 });
    await client.getRepository(s.installationId, s.org, s.repo).catch(() => {});
    sim.injectFault({ kind: "rate_limit", status: 403, resetInSeconds: 600, path: `/repos/${s.org}/${s.repo}`, times: 1 });
    await client.getRepository(s.installationId, s.org, s.repo).catch(() => {});
    await client.getRepository(s.installationId, s.org, s.repo).catch(() => {});

    const text = await metrics.registry.metrics();
    const series = [...text.matchAll(/^service_forge_requests_total\{kind="([^"]*)",outcome="([^"]*)"\} (\d+)$/gm)].map(([, kind, outcome, value]) => ({ kind, outcome, value: Number(value) }));
    expect(series.length).toBe(REQUEST_KINDS.length * REQUEST_OUTCOMES.length);
    for (const { kind, outcome } of series) {
      expect(REQUEST_KINDS as readonly string[]).toContain(kind!);
      expect(REQUEST_OUTCOMES as readonly string[]).toContain(outcome!);
    }
    const counted = Object.fromEntries(series.filter((x) => x.value > 0).map((x) => [`${x.kind}/${x.outcome}`, x.value]));
    expect(counted).toEqual({ "app/ok": 1, "read/ok": 1, "read/not_modified": 1, "read/not_found": 1, "write/ok": 1, "read/error": 1, "read/rate_limited": 1, "read/deferred": 1 });
    expect(text).not.toMatch(/acme|no-such-repository|installation:/);
    // 4321, less the counted answers: the first read, the 404 and the write (a 304 spends none; fault answers are not counted).
    expect(text).toMatch(/^service_forge_rate_limit_remaining 4318$/m);
  });
});
