import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, mintAppJwt, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { CHECK_NAME, clientFor } from "./test-support.ts";

let sim: ForgeSimulator;
let s: Scenario;
const keys = generateAppKeys();
beforeAll(async () => { sim = startForgeSimulator(); s = await createScenario(sim, { keys }); });
afterEach(() => { sim.faults.clear(); });
afterAll(async () => { await sim.stop(); });
const target = () => ({ installationId: s.installationId, owner: s.org, repo: s.repo, headSha: s.headSha });

/** A check run written by another App (the trusted bot) on the same head, with our check's name. */
async function foreignCheck(name: string): Promise<number> {
  const jwt = mintAppJwt(s.botAppId, keys.privateKey);
  const inst = [...sim.control.state.installations.values()].find((i) => i.appId === s.botAppId)!;
  const { token } = await (await fetch(`${sim.url}/app/installations/${inst.id}/access_tokens`, { method: "POST", headers: { authorization: `Bearer ${jwt}` }, body: "{}" })).json() as { token: string };
  const res = await fetch(`${sim.url}/repos/${s.org}/${s.repo}/check-runs`, { method: "POST", headers: { authorization: `token ${token}` }, body: JSON.stringify({ name, head_sha: s.headSha, status: "completed", conclusion: "success" }) });
  return ((await res.json()) as { id: number }).id;
}

test("the managed check is created in progress, found again by App and name on the exact head, reset and completed", async () => {
  const client = clientFor(sim, s);
  const foreignId = await foreignCheck(CHECK_NAME);
  expect(await client.findManagedCheck(target())).toBeNull();

  const created = await client.ensureCheckInProgress(target(), { title: "Evaluating", summary: "Waiting for evidence" });
  expect(created).toMatchObject({ headSha: s.headSha, status: "in_progress", conclusion: null });
  expect(created.id).not.toBe(foreignId);

  const done = await client.completeCheck(target(), created, "success", { title: "Approved", summary: "All owner sets approved", text: "details" });
  expect(done).toMatchObject({ id: created.id, status: "completed", conclusion: "success" });
  expect(await client.findManagedCheck(target())).toMatchObject({ id: created.id, status: "completed" });

  const reset = await client.ensureCheckInProgress(target(), { title: "Re-evaluating", summary: "A new event arrived" });
  expect(reset).toMatchObject({ id: created.id, status: "in_progress", conclusion: null });
  const stored = sim.control.checkRuns({ owner: s.org, repo: s.repo, headSha: s.headSha }).find((r) => r.id === created.id)!;
  expect(stored.output).toMatchObject({ title: "Re-evaluating", summary: "A new event arrived" });
  expect(sim.control.checkRuns({ owner: s.org, repo: s.repo }).find((r) => r.id === foreignId)).toMatchObject({ conclusion: "success" });
});

test("a check of another head is never adopted: completing it for this head is refused before any write", async () => {
  const client = clientFor(sim, s);
  const other = await sim.control.commit({ owner: s.org, repo: s.repo, branch: "other", files: { "x.txt": "x\n" } });
  const otherTarget = { ...target(), headSha: other.sha };
  const run = await client.ensureCheckInProgress(otherTarget, { title: "t", summary: "s" });
  expect(await client.findManagedCheck({ ...target(), headSha: "f".repeat(40) })).toBeNull();
  sim.requests.length = 0;
  await expect(client.completeCheck(target(), run, "failure", { title: "t", summary: "s" })).rejects.toMatchObject({ kind: "permanent" });
  expect(sim.requests.filter((q) => q.method === "PATCH")).toHaveLength(0);
  expect(sim.control.checkRuns({ owner: s.org, repo: s.repo, headSha: other.sha })[0]).toMatchObject({ status: "in_progress" });
});

test("a check run of another App cannot be updated", async () => {
  const id = await foreignCheck("Other check");
  await expect(clientFor(sim, s).setCheckInProgress(target(), { id, headSha: s.headSha, status: "completed", conclusion: "success" }, { title: "t", summary: "s" })).rejects.toMatchObject({ kind: "permanent", status: 403 });
});

test("a check run of our App under another name is not the managed check", async () => {
  const client = clientFor(sim, s);
  const head = await sim.control.commit({ owner: s.org, repo: s.repo, branch: "named", files: { "y.txt": "y\n" } });
  const token = [...sim.control.state.tokens.values()].find((t) => t.installationId === s.installationId)!.token;
  await fetch(`${sim.url}/repos/${s.org}/${s.repo}/check-runs`, { method: "POST", headers: { authorization: `token ${token}` }, body: JSON.stringify({ name: "Another name", head_sha: head.sha }) });
  expect(await client.findManagedCheck({ ...target(), headSha: head.sha })).toBeNull();
});

test("a check-run list that links to a further page is refused, to be retried, never taken as whole", async () => {
  const client = clientFor(sim, s);
  await client.ensureCheckInProgress(target(), { title: "Evaluating", summary: "Waiting for evidence" });
  sim.injectFault({ kind: "extra_page", path: `/repos/${s.org}/${s.repo}/commits/${s.headSha}/check-runs` });
  await expect(client.findManagedCheck(target())).rejects.toMatchObject({ kind: "transient", message: expect.stringContaining("more check runs than one page holds") });
});
