import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { BACKENDS } from "../../e2e/support/databases.ts";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { pullRequestEvent } from "../../e2e/support/payloads.ts";
import { createForgeClient } from "../forge/index.ts";
import { claimNext, completeJob, run } from "../store/index.ts";
import type { FastPathDeps } from "./fast-path.ts";
import { handleWebhook } from "./handle-webhook.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";

/**
 * The fast path against the forge simulator: the simulator sends its own signed webhooks to the handler on a real HTTP server,
 * and the handler resets or creates the managed check through the real forge client.
 */
const keys = generateAppKeys();

describe.each(BACKENDS)("fast-path invalidation on %s", (backend) => {
  let h: Harness;
  let sim: ForgeSimulator;
  let server: ReturnType<typeof Bun.serve>;
  let scenario: Scenario;
  afterEach(async () => {
    server?.stop(true);
    await sim?.stop();
    await h?.close();
  });

  async function setUp(options: { timeoutMs?: number } = {}) {
    h = await ingressHarness(backend, { timeoutMs: options.timeoutMs ?? 2_000 });
    server = Bun.serve({
      hostname: "127.0.0.1", port: 0,
      fetch: async (request) => {
        const reply = await handleWebhook(h.deps, request);
        return Response.json(reply.body, { status: reply.status });
      },
    });
    sim = startForgeSimulator({ webhookUrl: `http://127.0.0.1:${server.port}/webhooks/forge`, webhookSecret: SECRET });
    // The App ID is known once the scenario made the App: wire the evaluator before the first pull request is opened.
    const forgeFor = (appId: number) => createForgeClient({ apiUrl: sim.url, appId, privateKey: keys.privateKey, requestTimeoutMs: 5_000, checkName: "Service / approval", logger: pino({ level: "silent" }) });
    onlyFirstAppReceivesWebhooks(sim, (app) => {
      const mutable = h.deps as { fastPath: FastPathDeps; mapping: { organizationPolicyRepository: string; checkName: string; appId: number | null } };
      mutable.fastPath = { forge: forgeFor(app.id), store: h.store, policyPath: POLICY_PATH, now: () => Date.now(), guardTimeoutMs: 2_000 };
      mutable.mapping = { ...mutable.mapping, appId: app.id };
    });
    scenario = await createScenario(sim, { keys });
  }
  const checks = (headSha: string) => sim.control.checkRuns({ owner: "acme", repo: "web", headSha });
  const repoId = () => sim.control.mustRepo("acme", "web").id;

  test("an opened pull request gets an in-progress check on its exact head, and the head counts as invalidated", async () => {
    await setUp();
    const runs = checks(scenario.headSha);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ head_sha: scenario.headSha, status: "in_progress", conclusion: null });
    expect(await h.count("head_generations", "shared_generation = invalidated_generation")).toBe(1);
    expect(await h.count("jobs", "kind = 'head_invalidation'")).toBe(0);
    expect(await h.count("jobs", "kind = 'evaluation'")).toBe(1);
  });

  test("a completed managed check is reset to in_progress by a new event on its head", async () => {
    await setUp();
    const forge = h.deps.fastPath!.forge as ReturnType<typeof createForgeClient>;
    const target = { installationId: scenario.installationId, owner: "acme", repo: "web", headSha: scenario.headSha };
    const existing = (await forge.findManagedCheck(target))!;
    await forge.completeCheck(target, existing, "success", { title: "Approved", summary: "ok" });
    expect(checks(scenario.headSha)[0]).toMatchObject({ status: "completed", conclusion: "success" });
    await sim.control.submitReview({ owner: "acme", repo: "web", number: scenario.pullNumber, user: "bob", state: "COMMENTED" });
    expect(checks(scenario.headSha)[0]).toMatchObject({ status: "in_progress", conclusion: null });
    expect(checks(scenario.headSha)).toHaveLength(1);
  });

  test("a new commit resets nothing on the old head without a check and creates the check on the new head", async () => {
    await setUp();
    const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/more.ts": "export {};\n" } });
    expect(checks(sha)).toHaveLength(1);
    expect(checks(sha)[0]!.status).toBe("in_progress");
    expect(await h.count("jobs", `kind = 'evaluation' and head_sha = '${sha}'`)).toBe(1);
  });

  const checkRequests = (from: number) => sim.requests.slice(from).filter((r) => r.path.endsWith("/check-runs") || r.path.includes("/check-runs/")).map((r) => `${r.method} ${r.path.includes("/commits/") ? "listing" : r.path.endsWith("/check-runs") ? "create" : "by ID"}`);

  test("a new head's check is created without a listing of check runs: no creation was ever tried for the head", async () => {
    await setUp();
    const from = sim.requests.length;
    const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/once.ts": "export {};\n" } });
    expect(checks(sha)).toHaveLength(1);
    expect(checkRequests(from)).toEqual(["POST create"]);
    expect(await h.count("head_generations", `head_sha = '${sha}' and check_untried = 0`)).toBe(1);
  });

  test("a head whose check creation was tried but not remembered (its record lost after the write) is listed, and its check reset, never created twice", async () => {
    await setUp();
    const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/lost.ts": "export {};\n" } });
    expect(checks(sha)).toHaveLength(1);
    // The write landed, its record did not (a crash between the two): the ID is gone, the row says a creation was tried.
    await h.store.execute(() => run("delete from head_checks where head_sha = $1", sha));
    const from = sim.requests.length;
    await sim.control.submitReview({ owner: "acme", repo: "web", number: scenario.pullNumber, user: "bob", state: "COMMENTED" });
    expect(checks(sha)).toHaveLength(1);
    expect(checkRequests(from)).toEqual(["GET listing"]); // under the guard: found in progress already, so not written
    expect(await h.count("head_checks", `head_sha = '${sha}' and check_run_id = ${checks(sha)[0]!.id}`)).toBe(1);
  });

  test("a head whose check creation failed is listed before the next creation: a failed write may have landed", async () => {
    await setUp();
    sim.injectFault({ kind: "status", status: 502, method: "POST", path: "/repos/acme/web/check-runs", times: 1 });
    const from = sim.requests.length;
    const { sha } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/failed.ts": "export {};\n" } });
    expect(checks(sha)).toHaveLength(0);
    await sim.control.submitReview({ owner: "acme", repo: "web", number: scenario.pullNumber, user: "bob", state: "COMMENTED" });
    expect(checkRequests(from)).toEqual(["POST create", "GET listing", "POST create"]);
    expect(checks(sha)).toHaveLength(1);
  });

  test("no worker can claim a delivery's work while its fast path is in flight; the evaluation is released as it ends", async () => {
    await setUp({ timeoutMs: 5_000 });
    const payload = pullRequestEvent("synchronize", { repo: { id: repoId(), owner: "acme", name: "web" }, number: scenario.pullNumber, headSha: scenario.headSha, installationId: scenario.installationId });
    const claimNow = () => h.store.execute(() => claimNext("w", Date.now(), 60_000));
    // The scenario's own work is done first (no worker runs here).
    for (let row = await claimNow(); row !== null; row = await claimNow()) await h.store.execute(() => completeJob(row.id, "w", row.merges, Date.now()));
    sim.injectFault({ kind: "slow", delayMs: 1_500, path: "/repos/acme/web/pulls/\\d+", times: 1 });
    const sending = h.send("pull_request", "in-flight-1", payload);
    await Bun.sleep(500);
    // This delivery's invalidation and evaluation wait for its fast path.
    expect(await claimNow()).toBeNull();
    expect(await h.count("jobs", "kind in ('head_invalidation', 'evaluation')")).toBe(2);
    expect((await sending).status).toBe(202);
    // The fast path settled the head: no invalidation row is left for a worker to repeat its listing and reset; the
    // evaluation is claimable at once.
    expect(await h.count("jobs", "kind = 'head_invalidation'")).toBe(0);
    expect(await h.count("head_generations", "invalidated_generation < shared_generation")).toBe(0);
    expect((await claimNow())?.kind).toBe("evaluation");
  });

  test("a closed pull request's invalidation is claimable at once: only the invalidation job fans out to the head's other pull requests", async () => {
    await setUp();
    await sim.control.setPullRequestState({ owner: "acme", repo: "web", number: scenario.pullNumber, state: "closed" });
    // Released just after the answer (which does not wait for the release), long before the 2 s the fast path held it for.
    // Other rows already claimable (the scenario's own) may be claimed first while the release is on its way: they stay
    // leased, and the loop goes on until the invalidation is claimed or the time is up.
    const until = performance.now() + 500;
    const kinds: string[] = [];
    for (;;) {
      const claimed = await h.store.execute(() => claimNext("w", Date.now(), 60_000));
      if (claimed !== null) kinds.push(claimed.kind);
      if (claimed?.kind === "head_invalidation" || performance.now() >= until) break;
      if (claimed === null) await Bun.sleep(10);
    }
    expect(kinds).toContain("head_invalidation");
  });

  test("a delivery for a head the pull request has left skips check creation and records work for the live head", async () => {
    await setUp();
    const oldHead = scenario.headSha;
    sim.control.setWebhookTarget({ url: "http://127.0.0.1:9/unreachable" }); // the synchronize delivery is lost
    const { sha: live } = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: scenario.pullNumber, files: { "src/x.ts": "x\n" } });
    // A late delivery about a third head the pull request never had a check for.
    const historical = "d".repeat(40);
    const payload = pullRequestEvent("edited", { repo: { id: repoId(), owner: "acme", name: "web" }, number: scenario.pullNumber, headSha: historical, installationId: scenario.installationId });
    const reply = await h.send("pull_request", "late-1", payload);
    expect(reply).toEqual({ status: 202, body: { accepted: true, queued: true } });
    expect(checks(historical)).toHaveLength(0);
    expect(checks(live)).toHaveLength(0); // the live head gets its check from the worker's invalidation job
    expect(await h.count("head_generations", `head_sha = '${live}' and shared_generation = 1`)).toBe(1);
    expect(await h.count("jobs", `kind = 'evaluation' and head_sha = '${live}'`)).toBe(1);
    expect(checks(oldHead)).toHaveLength(1);
  });

  test("a repository that opts out gets no check", async () => {
    await setUp();
    await sim.control.commit({ owner: "acme", repo: "web", branch: "main", files: { [POLICY_PATH]: "schema_version = 1\nenabled = false\n" } });
    await sim.control.commit({ owner: "acme", repo: "web", branch: "other", from: "main", files: { "src/y.ts": "y\n" } });
    const pr = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "other", author: "erin" });
    expect(checks(pr.headSha)).toHaveLength(0);
  });

  test("a forge error after durable acceptance leaves the invalidation pending and still answers 202; a redelivery retries it", async () => {
    await setUp();
    const payload = pullRequestEvent("synchronize", { repo: { id: repoId(), owner: "acme", name: "web" }, number: scenario.pullNumber, headSha: scenario.headSha, installationId: scenario.installationId });
    sim.injectFault({ kind: "status", status: 502, path: "/repos/acme/web/pulls/\\d+", times: 1 });
    expect(await h.send("pull_request", "retry-1", payload)).toEqual({ status: 202, body: { accepted: true, queued: true } });
    expect(await h.count("head_generations", "invalidated_generation < shared_generation")).toBe(1);
    expect(await h.count("jobs", "kind = 'head_invalidation'")).toBe(1);
    // The fast path failed: the worker may take the invalidation over at once, once its release (on its way after the
    // answer, which does not wait for it) has landed; other rows already claimable (the scenario's own) may come first.
    const until = performance.now() + 500;
    const kinds: string[] = [];
    for (;;) {
      const claimed = await h.store.execute(() => claimNext("w", Date.now(), 1));
      if (claimed !== null) kinds.push(claimed.kind);
      if (claimed?.kind === "head_invalidation" || performance.now() >= until) break;
      if (claimed === null) await Bun.sleep(10);
    }
    expect(kinds).toContain("head_invalidation");
    // The duplicate's fast path runs again because the invalidation is pending; this time it succeeds.
    expect(await h.send("pull_request", "retry-1", payload)).toEqual({ status: 202, body: { accepted: false, queued: true } });
    expect(await h.count("head_generations", "invalidated_generation < shared_generation")).toBe(0);
    // Once nothing is pending, a further duplicate makes no forge request at all.
    const before = sim.requests.length;
    expect(await h.send("pull_request", "retry-1", payload)).toEqual({ status: 202, body: { accepted: false, queued: false } });
    expect(sim.requests.length).toBe(before);
  });

  test("a forge slower than the invalidation bound is abandoned within the bound and the 202 stands", async () => {
    await setUp({ timeoutMs: 1_000 });
    const payload = pullRequestEvent("synchronize", { repo: { id: repoId(), owner: "acme", name: "web" }, number: scenario.pullNumber, headSha: scenario.headSha, installationId: scenario.installationId });
    sim.injectFault({ kind: "slow", delayMs: 4_000, path: "/repos/acme/web/pulls/\\d+" });
    const started = performance.now();
    expect((await h.send("pull_request", "slow-1", payload)).status).toBe(202);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await h.count("head_generations", "invalidated_generation < shared_generation")).toBe(1);
  });
});
