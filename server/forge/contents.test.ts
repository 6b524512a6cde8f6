import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { clientFor } from "./test-support.ts";

let sim: ForgeSimulator;
let s: Scenario;
let base = "";
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys() });
  const line = "/generated/very/long/path/segment/** @acme/core\n";
  const big = await sim.control.commit({
    owner: s.org, repo: s.repo, branch: "main", files: {
      "docs/CODEOWNERS": line.repeat(Math.ceil(1_200_000 / line.length)),
      "CODEOWNERS": "x".repeat(MAX_CODEOWNERS_BYTES),
      "big-policy.toml": "#".repeat(MAX_POLICY_FILE_BYTES + 1),
      "latin1.txt": "",
      "dir/inner.txt": "inner\n",
    },
  });
  base = big.sha;
  const commit = sim.control.state.commits.get(base)!;
  const blob = "0123456789abcdef0123456789abcdef01234567";
  sim.control.state.blobs.set(blob, new Uint8Array([0xff, 0xfe, 0x41]));
  commit.tree.set("latin1.txt", blob);
});
afterAll(async () => { await sim.stop(); });

const at = (path: string, ref: string | null = base) => ({ installationId: s.installationId, owner: s.org, repo: s.repo, path, ...(ref ? { ref } : {}) });

test("a file over the forge's 1 MB inline limit is read through the blob API", async () => {
  const client = clientFor(sim, s);
  sim.requests.length = 0;
  const read = await client.readFile(at("docs/CODEOWNERS"), MAX_CODEOWNERS_BYTES - 1);
  expect(read.kind).toBe("found");
  if (read.kind === "found") expect(read.bytes).toBeGreaterThan(1_048_576);
  expect(sim.requests.filter((q) => !q.path.endsWith("/access_tokens")).map((q) => q.path.replace(/\/[0-9a-f]{40}$/, "/<sha>"))).toEqual(["/repos/acme/web/contents/docs%2FCODEOWNERS", "/repos/acme/web/git/blobs/<sha>"]);
});

test(`a code-owners file of ${MAX_CODEOWNERS_BYTES} bytes is too large and its content is never fetched`, async () => {
  const client = clientFor(sim, s);
  sim.requests.length = 0;
  expect(await client.readFile(at("CODEOWNERS"), MAX_CODEOWNERS_BYTES - 1)).toEqual({ kind: "too_large", path: "CODEOWNERS", bytes: MAX_CODEOWNERS_BYTES });
  expect(sim.requests.some((q) => q.path.includes("/git/blobs/"))).toBe(false);
});

test(`a policy file over ${MAX_POLICY_FILE_BYTES} bytes is too large`, async () => {
  expect(await clientFor(sim, s).readFile(at("big-policy.toml"), MAX_POLICY_FILE_BYTES)).toMatchObject({ kind: "too_large", bytes: MAX_POLICY_FILE_BYTES + 1 });
});

test("absent files, directories and absent repositories read as missing", async () => {
  const client = clientFor(sim, s);
  expect(await client.readFile(at("nope.toml"), 100)).toEqual({ kind: "missing" });
  expect(await client.readFile(at("dir"), 100)).toEqual({ kind: "missing" });
  expect(await client.readFile({ ...at(POLICY_PATH, null), repo: "no-such-repo" }, 100)).toEqual({ kind: "missing" });
});

test("content that is not UTF-8 is incomplete evidence, not text", async () => {
  expect(await clientFor(sim, s).readFile(at("latin1.txt"), 100)).toMatchObject({ kind: "incomplete", cause: "inconsistent" });
});

test("reads at a commit SHA are cached; reads of a default branch are not", async () => {
  const client = clientFor(sim, s);
  await client.readFile(at(POLICY_PATH), MAX_POLICY_FILE_BYTES);
  await client.readFile(at(POLICY_PATH, null), MAX_POLICY_FILE_BYTES);
  sim.requests.length = 0;
  await client.readFile(at(POLICY_PATH), MAX_POLICY_FILE_BYTES);
  await client.readFile(at(POLICY_PATH, null), MAX_POLICY_FILE_BYTES);
  const api = sim.requests.filter((q) => !q.path.endsWith("/access_tokens"));
  expect(api).toHaveLength(1);
  expect(api[0]!.query).toBe("");
});

test("a failed read is incomplete and is not cached", async () => {
  const client = clientFor(sim, s);
  sim.injectFault({ kind: "status", status: 502, path: "/repos/acme/web/contents/README.md", times: 1 });
  expect(await client.readFile(at("README.md"), 100)).toMatchObject({ kind: "incomplete", cause: "transient" });
  expect(await client.readFile(at("README.md"), 100)).toMatchObject({ kind: "found", text: "# web\n" });
});

test("a full last page without a next link is proven complete by one more request", async () => {
  await sim.control.commit({ owner: s.org, repo: s.repo, branch: "hundred", files: { "h.txt": "h\n" } });
  const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "hundred", author: "erin" });
  const p = sim.control.mustPull(s.org, s.repo, pr.number);
  for (let i = 0; i < 100; i++) p.reviews.push({ id: 20_000_000 + i, userLogin: "alice", state: "COMMENTED", commitId: pr.headSha, body: "", submittedAt: "2026-01-01T00:00:00Z" });
  sim.requests.length = 0;
  const r = await clientFor(sim, s).gatherEvidence(
    { installationId: s.installationId, owner: s.org, repo: s.repo, number: pr.number, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" },
    { planLookups: () => ({ collaborators: [], organizationMemberships: [], teams: [], apps: [], botUsers: [] }) },
  );
  if (r.kind !== "gathered") throw new Error("unavailable");
  expect(r.evidence.reviews.complete && r.evidence.reviews.items.length).toBe(100);
  expect(sim.requests.filter((q) => q.path.endsWith(`/pulls/${pr.number}/reviews`)).map((q) => new URLSearchParams(q.query).get("page"))).toEqual(["1", "2"]);
});
