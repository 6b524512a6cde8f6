// The rules at a commit (a merge group's members merge onto commits of the queue, DESIGN 3.14): read as a decision reads them
// at its base, each commit's once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rulesOfReads } from "../merge-queue/judge.ts";
import { countsSince } from "../simulator/request-counter.ts";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { clientFor } from "./test-support.ts";

let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys() });
});
afterAll(() => sim.stop());

test("the code-owners file and repository policy at a commit, with their blobs; a commit's rules are read once", async () => {
  const client = clientFor(sim, s);
  const at = { installationId: s.installationId, owner: s.org, repo: s.repo, ref: s.baseSha, policyPath: POLICY_PATH, forgeDirectory: ".forge" };
  const before = sim.counter.snapshot();
  const rules = await client.readRulesAt(at);
  expect(rules.repositoryPolicy).toMatchObject({ kind: "found", path: POLICY_PATH, blobSha: expect.stringMatching(/^[0-9a-f]{40}$/) });
  const found = Object.values(rules.codeowners).find((read) => read?.kind !== "missing");
  expect(found).toMatchObject({ kind: "found", blobSha: expect.stringMatching(/^[0-9a-f]{40}$/) });
  expect(rulesOfReads(rules.codeowners, rules.repositoryPolicy, ".forge")).toMatchObject({ known: true });
  const first = countsSince(before, sim.counter.snapshot());
  expect(first.total).toBeGreaterThan(0);
  await client.readRulesAt(at);
  expect(countsSince(before, sim.counter.snapshot())).toEqual(first);
  // Another commit whose code-owners file changed has other rules.
  const { sha } = await sim.control.commit({ owner: s.org, repo: s.repo, branch: "main", files: { [(found as { path: string }).path]: "* @acme/core\n" } });
  const moved = await client.readRulesAt({ ...at, ref: sha });
  expect(rulesOfReads(moved.codeowners, moved.repositoryPolicy, ".forge")!.codeowners!.blobSha).not.toBe(rulesOfReads(rules.codeowners, rules.repositoryPolicy, ".forge")!.codeowners!.blobSha);
});
