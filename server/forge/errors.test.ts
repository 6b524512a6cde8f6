import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { classifyForgeError, DEFAULT_RATE_LIMIT_DELAY_MS, ForgeError, MAX_RATE_LIMIT_DELAY_MS, rateLimitDelayMs } from "./errors.ts";
import { clientFor } from "./test-support.ts";

const NOW = 1_800_000_000_000;
const httpError = (status: number, headers: Record<string, string> = {}, message = "whatever") =>
  Object.assign(new Error(message), { name: "HttpError", status, response: { status, headers, data: {} } });

describe("classification by status and headers", () => {
  test("403 with x-ratelimit-remaining 0 is a rate limit until the reset", () => {
    const e = classifyForgeError(httpError(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW / 1000 + 90) }), "GET /x", NOW);
    expect([e.kind, e.retryAfterMs, e.retryable]).toEqual(["rate_limited", 90_000, true]);
  });
  test("retry-after wins over the reset header, in seconds or as an HTTP date", () => {
    expect(rateLimitDelayMs({ "retry-after": "7", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(NOW / 1000 + 90) }, NOW)).toBe(7000);
    expect(rateLimitDelayMs({ "retry-after": new Date(NOW + 5000).toUTCString() }, NOW)).toBe(5000);
  });
  test("a provider delay is bounded to one day", () => {
    const e = classifyForgeError(httpError(429, { "retry-after": String(10 * 86400) }), "GET /x", NOW);
    expect(e.retryAfterMs).toBe(MAX_RATE_LIMIT_DELAY_MS);
  });
  test("429 without headers waits the documented minute; 403 without them is permanent", () => {
    expect(classifyForgeError(httpError(429), "GET /x", NOW).retryAfterMs).toBe(DEFAULT_RATE_LIMIT_DELAY_MS);
    expect(classifyForgeError(httpError(403, { "x-ratelimit-remaining": "12" }), "GET /x", NOW).kind).toBe("permanent");
  });
  test("the message text never decides: a 403 saying 'rate limit exceeded' without headers is permanent", () => {
    expect(classifyForgeError(httpError(403, {}, "API rate limit exceeded"), "GET /x", NOW).kind).toBe("permanent");
  });
  test("5xx is transient, 404 not_found, 401 unauthorized, 422 permanent", () => {
    expect([500, 502, 503, 404, 401, 422].map((s) => classifyForgeError(httpError(s), "GET /x", NOW).kind))
      .toEqual(["transient", "transient", "transient", "not_found", "unauthorized", "permanent"]);
  });
  test("a refused connection (status 500 without a response) and a timeout are transient", () => {
    const refused = Object.assign(new Error("x"), { name: "HttpError", status: 500, cause: new TypeError("fetch failed") });
    const timeout = Object.assign(new Error("x"), { name: "HttpError", status: 500, cause: Object.assign(new Error("t"), { name: "TimeoutError" }) });
    expect(classifyForgeError(refused, "GET /x").kind).toBe("transient");
    expect(classifyForgeError(timeout, "GET /x").message).toContain("timed out");
  });
  test("messages name the route template only", () => {
    const e = classifyForgeError(httpError(502, {}, "secret body text"), "GET /repos/{owner}/{repo}");
    expect(e.message).toBe("GET /repos/{owner}/{repo}: forge error (status 502)");
  });
});

describe("each injected fault, through the client", () => {
  let sim: ForgeSimulator;
  let s: Scenario;
  beforeAll(async () => { sim = startForgeSimulator(); s = await createScenario(sim, { keys: generateAppKeys() }); });
  afterEach(() => { sim.faults.clear(); });
  afterAll(async () => { await sim.stop(); });
  const path = () => `/repos/acme/web/pulls/${s.pullNumber}`;
  const attempt = async (timeoutMs = 2000) => {
    try { await clientFor(sim, s, { requestTimeoutMs: timeoutMs }).getPullRequest(s.installationId, s.org, s.repo, s.pullNumber); }
    catch (error) { return error as ForgeError; }
    throw new Error("expected a failure");
  };

  for (const status of [500, 502, 503]) {
    test(`${status} is transient`, async () => {
      sim.injectFault({ kind: "status", status, path: path() });
      expect((await attempt()).kind).toBe("transient");
    });
  }
  test("403 rate limit with remaining 0 and reset", async () => {
    sim.injectFault({ kind: "rate_limit", status: 403, path: path(), resetInSeconds: 300 });
    const e = await attempt();
    expect(e.kind).toBe("rate_limited");
    expect(e.retryAfterMs).toBeGreaterThan(290_000);
  });
  test("429 with retry-after", async () => {
    sim.injectFault({ kind: "rate_limit", status: 429, path: path(), retryAfterSeconds: 42 });
    expect(await attempt()).toMatchObject({ kind: "rate_limited", retryAfterMs: 42_000 });
  });
  test("a slow response past the request timeout", async () => {
    sim.injectFault({ kind: "slow", path: path(), delayMs: 300 });
    expect(await attempt(100)).toMatchObject({ kind: "transient" });
  });
  test("a connection reset", async () => {
    sim.injectFault({ kind: "reset", path: path() });
    expect((await attempt()).kind).toBe("transient");
  });
  test("a truncated body", async () => {
    sim.injectFault({ kind: "truncate", path: path() });
    expect((await attempt()).kind).toBe("transient");
  });
  test("a missing pull request", async () => {
    await expect(clientFor(sim, s).getPullRequest(s.installationId, s.org, s.repo, 999)).rejects.toMatchObject({ kind: "not_found" });
  });
  test("a refused connection", async () => {
    const client = clientFor({ ...sim, url: "http://127.0.0.1:9" } as ForgeSimulator, s);
    await expect(client.getApp()).rejects.toMatchObject({ kind: "transient" });
  });
  test("a fault consumed `times` times then clears", async () => {
    sim.injectFault({ kind: "status", status: 502, path: path(), times: 1 });
    expect((await attempt()).kind).toBe("transient");
    const pr = await clientFor(sim, s).getPullRequest(s.installationId, s.org, s.repo, s.pullNumber);
    expect(pr.headSha).toBe(s.headSha);
  });
});
