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
    test(`${scenario.id}: the check shows ${scenario.expected.verdict} with "${scenario.expected.title}"`, () => {
      const result = explain(scenario.build(), "");
      expect(result.decision.kind).toBe("conclusive");
      const { published } = result;
      if (published.kind === "none") throw new Error("every scenario writes a check");
      expect(published.kind === "completed" ? published.conclusion : "in progress").toBe(scenario.expected.verdict);
      // Only a shared head is left in progress, and it would fail: no scenario hides a success.
      expect(result.decision.conclusion).toBe(published.kind === "completed" ? published.conclusion : "failure");
      expect(published.output.title).toBe(scenario.expected.title);
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

  test("the break-glass scenarios explain the override and every refusal, and the reviews say what each request did", () => {
    const granted = explain(SCENARIOS.find((s) => s.id === "break-glass")!.build(), "");
    expect(granted.decision.breakGlass).toMatchObject({ reviewer: "sam", team: "sre", unsatisfiedOwnerSets: [0] });
    expect(plain(granted.reviews[0]!.effects[0]!)).toBe("overrides the approval requirements (break-glass, member of sre)");
    const refused = explain(SCENARIOS.find((s) => s.id === "break-glass-refused")!.build(), "");
    expect(refused.decision.breakGlassRefusals.map((r) => `${r.reviewer} ${r.code}`)).toEqual(["bob wrong_state", "olga not_a_member", "pat author", "erin short_reason", "sam stale_commit"]);
    expect(refused.reviews.map((r) => plain(r.effects[0]!).split(":")[0])).toEqual([
      "break-glass request refused (stale_commit)", "break-glass request refused (short_reason)", "break-glass request refused (author)",
      "break-glass request refused (not_a_member)", "break-glass request refused (wrong_state)",
    ]);
  });

  test("the path tester answers with the owning line, or unowned", () => {
    const state = SCENARIOS[0]!.build();
    expect(explain(state, "src/deep/file.ts").query).toMatchObject({ line: 5, owners: ["@alice", "@bob"] });
    expect(explain(state, "generated/api.ts").query).toMatchObject({ line: 14, owners: [] });
  });
});

describe("review effects", () => {
  const effects = (id: string, edit?: (state: ReturnType<typeof SCENARIOS[number]["build"]>) => ReturnType<typeof SCENARIOS[number]["build"]>) => {
    const state = SCENARIOS.find((s) => s.id === id)!.build();
    return explain(edit ? edit(state) : state, "").reviews.map((r) => `${r.position} ${r.reviewer}: ${r.effects.map(plain).join("; ")}`);
  };

  test("counted, blocking and not counting reviews say so", () => {
    expect(effects("changes-requested")).toEqual(["1 alice: counts for owner set 1 as @alice", "2 bob: blocks owner set 1 (changes requested)"]);
    expect(effects("older-head")).toEqual(["1 alice: does not count for owner set 1: approved 9a8b7c6, not the current head 4f2c9e1"]);
    expect(effects("app-docs")).toEqual(["1 docs-review-bot[bot]: counts for owner set 1 through the App delegation docs-review-bot"]);
  });

  test("a superseded review, a comment and a dismissed review are told apart", () => {
    const list = effects("owner-approves-head", (state) => {
      const reviews = state.evidence.reviews.complete ? state.evidence.reviews.items : [];
      const alice = reviews[0]!;
      return {
        ...state,
        evidence: {
          ...state.evidence,
          reviews: {
            complete: true,
            items: [
              { ...alice, id: 90, state: "CHANGES_REQUESTED" },
              { ...alice, id: 91, state: "COMMENTED" },
              alice,
              { id: 92, user: { id: 106, login: "olga", type: "User" }, state: "DISMISSED", commitId: alice.commitId },
            ],
          },
        },
      };
    });
    expect(list).toEqual([
      "1 alice: superseded by review #3 of the same reviewer",
      "2 alice: commented: neither approves nor blocks",
      "3 alice: counts for owner set 1 as @alice",
      "4 olga: dismissed: neither approves nor blocks",
    ]);
  });
});
