import { describe, expect, test } from "bun:test";
import { plain } from "../../server/evaluation/index.ts";
import { decodeState, encodeState } from "./codec.ts";
import { explain } from "./engine.ts";
import { SCENARIOS } from "./scenarios.ts";

describe("built-in scenarios", () => {
  test("ids are unique and every scenario says what it teaches", () => {
    expect(new Set(SCENARIOS.map((s) => s.id)).size).toBe(SCENARIOS.length);
    for (const scenario of SCENARIOS) expect(scenario.lesson.length).toBeGreaterThan(20);
  });

  for (const scenario of SCENARIOS) {
    test(`${scenario.id}: the engine concludes ${scenario.expected.conclusion} with "${scenario.expected.title}"`, () => {
      const result = explain(scenario.build(), "");
      expect(result.decision.kind).toBe("conclusive");
      expect(result.decision.conclusion).toBe(scenario.expected.conclusion);
      expect(result.check.title).toBe(scenario.expected.title);
      expect(result.codeowners.errorCount).toBe(0);
      expect(result.repositoryPolicyErrors).toEqual([]);
      expect(result.organizationPolicyErrors).toEqual([]);
      // No scenario may fail for a reason other than the one it teaches: every fact it needs is in its directory.
      for (const set of result.decision.ownerSets) expect(set.unresolved).toEqual([]);
    });

    test(`${scenario.id}: survives the URL fragment unchanged`, async () => {
      const state = scenario.build();
      const decoded = await decodeState(`#${await encodeState(state)}`);
      expect(decoded).toEqual({ ok: true, state });
    });
  }

  test("an older-head approval says why it did not count", () => {
    const result = explain(SCENARIOS.find((s) => s.id === "older-head")!.build(), "");
    expect(plain(result.decision.ownerSets[0]!.notCounted[0]!.why)).toContain("not the current head");
  });

  test("the workflow scenario names the built-in rule; the guardrail scenario names the organization's", () => {
    const workflows = explain(SCENARIOS.find((s) => s.id === "app-workflows")!.build(), "");
    expect(workflows.setPaths[0]![0]!.nonDelegable).toEqual({ pattern: "/.forge/workflows/**", origin: "built-in" });
    const guardrail = explain(SCENARIOS.find((s) => s.id === "guardrail-insecure")!.build(), "");
    expect(guardrail.decision.insecureChangesAllowed).toBe(true);
    expect(guardrail.setPaths[0]![0]!.nonDelegable).toEqual({ pattern: "deploy/**", origin: "organization guardrail" });
  });

  test("the path tester answers with the owning line, or unowned", () => {
    const state = SCENARIOS[0]!.build();
    expect(explain(state, "src/deep/file.ts").query).toMatchObject({ line: 5, owners: ["@alice", "@bob"] });
    expect(explain(state, "generated/api.ts").query).toMatchObject({ line: 14, owners: [] });
  });
});
