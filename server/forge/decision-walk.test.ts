// The client's evidence fed to the real decision core: fail → approve → succeed → new commit → fail, with the check run written
// on each exact head. Proves the gathered evidence is what evaluate() and planLookups() expect.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { DEFAULT_EVALUATION_SETTINGS, evaluate, planLookups } from "../evaluation/index.ts";
import { clientFor } from "./test-support.ts";

let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys(), extraFiles: 150, renames: 5 });
});
afterAll(async () => { await sim.stop(); });

async function evaluateNow(number = s.pullNumber) {
  const client = clientFor(sim, s);
  const result = await client.gatherEvidence(
    { installationId: s.installationId, owner: s.org, repo: s.repo, number, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" },
    { planLookups: (e, known) => planLookups(e, DEFAULT_EVALUATION_SETTINGS, known) },
  );
  if (result.kind !== "gathered") throw new Error("pull request unavailable");
  const decision = evaluate(result.evidence, DEFAULT_EVALUATION_SETTINGS);
  const target = { installationId: s.installationId, owner: s.org, repo: s.repo, headSha: result.evidence.pullRequest.headSha };
  const check = await client.ensureCheckInProgress(target, { title: "Evaluating", summary: "…" });
  if (decision.conclusion) await client.completeCheck(target, check, decision.conclusion, { title: decision.conclusion, summary: "s", text: "t" });
  return { decision, headSha: target.headSha };
}

test("a pull request fails, succeeds once eligible owners approve the head, and fails again after a new commit", async () => {
  const first = await evaluateNow();
  expect(first.decision.kind).toBe("conclusive");
  expect(first.decision.conclusion).toBe("failure");

  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "alice", state: "APPROVED" });
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "dave", state: "APPROVED" });
  const second = await evaluateNow();
  expect(second.decision.reasons).toEqual([]);
  expect(second.decision.conclusion).toBe("success");

  const pushed = await sim.control.pushToPullRequest({ owner: s.org, repo: s.repo, number: s.pullNumber, files: { "src/index.ts": "export const changed = 1;\n" } });
  const third = await evaluateNow();
  expect(third.headSha).toBe(pushed.sha);
  expect(third.decision.conclusion).toBe("failure");

  const runs = sim.control.checkRuns({ owner: s.org, repo: s.repo });
  expect(runs.map((r) => [r.head_sha, r.status, r.conclusion])).toEqual([
    [s.headSha, "completed", "success"], [pushed.sha, "completed", "failure"],
  ]);
  expect(runs.every((r) => r.app?.id === s.appId && r.name === "Service / approval")).toBe(true);
});

test("an enrolled App's approval stands in for the docs owners on a delegated path", async () => {
  await sim.control.commit({ owner: s.org, repo: s.repo, branch: "docs-only", files: { "docs/intro.md": "# Intro\n" } });
  const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "docs-only", author: "erin" });
  expect((await evaluateNow(pr.number)).decision.conclusion).toBe("failure");
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: `${s.botSlug}[bot]`, state: "APPROVED" });
  const after = await evaluateNow(pr.number);
  expect(after.decision.reasons).toEqual([]);
  expect(after.decision.conclusion).toBe("success");
});
