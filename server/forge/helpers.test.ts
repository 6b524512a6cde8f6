import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { FORGE_API_VERSION } from "./transport.ts";
import { clientFor, fixturePlan } from "./test-support.ts";

let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => { sim = startForgeSimulator(); s = await createScenario(sim, { keys: generateAppKeys() }); });
afterAll(async () => { await sim.stop(); });

test("installations and their repositories are listed raw, whole, with the App JWT and the installation token", async () => {
  const client = clientFor(sim, s);
  const installations = await client.listInstallations();
  expect(installations.complete && installations.items).toEqual([expect.objectContaining({ id: s.installationId, app_id: s.appId, suspended_at: null, account: expect.objectContaining({ login: "acme" }) })]);
  const repos = await client.listInstallationRepositories(s.installationId);
  expect(repos.complete && repos.items.map((r) => [(r as { full_name: string }).full_name, (r as { archived: boolean }).archived, (r as { default_branch: string }).default_branch]))
    .toEqual([["acme/web", false, "main"], ["acme/.forge", false, "main"]]);
  expect(await client.getRepository(s.installationId, "acme", "web")).toMatchObject({ owner: "acme", name: "web", ownerType: "Organization", defaultBranch: "main", archived: false });
});

test("open pull requests are listed with their heads, filtered by base, and bounded", async () => {
  const client = clientFor(sim, s);
  await sim.control.commit({ owner: "acme", repo: "web", branch: "release", files: { "r.txt": "r\n" } });
  await sim.control.commit({ owner: "acme", repo: "web", branch: "fix", from: "release", files: { "f.txt": "f\n" } });
  const onRelease = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "fix", base: "release", author: "erin" });
  const all = await client.listOpenPullRequests(s.installationId, "acme", "web");
  expect(all.complete && all.items.map((p) => p.number).sort()).toEqual([s.pullNumber, onRelease.number].sort());
  const release = await client.listOpenPullRequests(s.installationId, "acme", "web", { base: "release" });
  expect(release).toEqual({ complete: true, items: [{ number: onRelease.number, headSha: onRelease.headSha, headRef: "fix", baseRef: "release", baseSha: onRelease.baseSha, draft: false }] });
  expect(await client.listOpenPullRequests(s.installationId, "acme", "web", { max: 1 })).toMatchObject({ complete: false, cause: "over_bound" });
});

test("every request carries the API version header", async () => {
  sim.requests.length = 0;
  await clientFor(sim, s).getPullRequest(s.installationId, "acme", "web", s.pullNumber);
  expect(sim.requests.length).toBeGreaterThan(0);
  expect(sim.requests.every((q) => q.apiVersion === FORGE_API_VERSION)).toBe(true);
});

test("a caller's deadline aborts a request as a retryable failure", async () => {
  sim.injectFault({ kind: "slow", path: `/repos/acme/web/pulls/${s.pullNumber}`, delayMs: 300, times: 1 });
  const client = clientFor(sim, s);
  await client.getApp();
  await expect(client.getPullRequest(s.installationId, "acme", "web", s.pullNumber, { signal: AbortSignal.timeout(50) })).rejects.toMatchObject({ kind: "transient" });
});

test("a rate limit on a directory lookup marks it incomplete and reports the provider delay", async () => {
  sim.injectFault({ kind: "rate_limit", status: 429, path: "/orgs/acme/teams/core", retryAfterSeconds: 77 });
  const r = await clientFor(sim, s).gatherEvidence(
    { installationId: s.installationId, owner: "acme", repo: "web", number: s.pullNumber, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" },
    { planLookups: fixturePlan },
  );
  sim.faults.clear();
  if (r.kind !== "gathered") throw new Error("unavailable");
  expect(r.evidence.directory.teams["acme/core"]!.team).toMatchObject({ kind: "incomplete", cause: "transient" });
  expect(r.retryAfterMs).toBe(77_000);
});

test("a 401 drops the cached installation token so the next request gets a fresh one", async () => {
  const client = clientFor(sim, s);
  await client.getRepository(s.installationId, "acme", "web");
  for (const [t, v] of sim.control.state.tokens) if (v.installationId === s.installationId) sim.control.state.tokens.delete(t);
  await expect(client.getRepository(s.installationId, "acme", "web")).rejects.toMatchObject({ kind: "unauthorized" });
  expect(await client.getRepository(s.installationId, "acme", "web")).toMatchObject({ name: "web" });
});

test("a truncated body is never kept for conditional requests: the next request reads the whole body again", async () => {
  const client = clientFor(sim, s);
  sim.injectFault({ kind: "truncate", path: `/repos/acme/web/pulls/${s.pullNumber}`, times: 1 });
  await expect(client.getPullRequest(s.installationId, "acme", "web", s.pullNumber)).rejects.toMatchObject({ kind: "transient" });
  expect(await client.getPullRequest(s.installationId, "acme", "web", s.pullNumber)).toMatchObject({ number: s.pullNumber, headSha: s.headSha });
  expect(sim.requests.at(-1)!.status).toBe(200);
  expect(await client.getPullRequest(s.installationId, "acme", "web", s.pullNumber)).toMatchObject({ number: s.pullNumber });
  expect(sim.requests.at(-1)!.status).toBe(304);
});
