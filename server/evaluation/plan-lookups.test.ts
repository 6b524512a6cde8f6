import { describe, expect, test } from "bun:test";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS } from "./evidence.ts";
import { BOT, OLD_HEAD, USERS, approve, baseEvidence, delegationPolicy, directoryFromPlan, review, withFiles, withRepositoryPolicy, withReviews } from "./evidence-fixture.ts";
import { planLookups } from "./plan-lookups.ts";

describe("planLookups", () => {
  test("without reviews nothing needs looking up", () => {
    const { directory: _unused, ...withoutDirectory } = baseEvidence();
    expect(planLookups(withoutDirectory, DEFAULT_EVALUATION_SETTINGS)).toEqual({
      collaborators: [],
      organizationMemberships: [],
      teams: [],
      apps: [],
      botUsers: [],
    });
  });
  test("names the owners who reviewed, the teams of the changed paths and the enrolled Apps that approved", () => {
    const evidence = withReviews(
      withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["src/a.ts", "docs/b.md", "README.md"]),
      approve(USERS.alice),
      review(USERS.bob, "CHANGES_REQUESTED"),
      approve(USERS.carol, OLD_HEAD),
      approve(BOT),
    );
    const plan = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(plan.collaborators).toEqual(["alice"]);
    expect(plan.organizationMemberships).toEqual(["alice"]);
    expect(plan.teams).toEqual([
      { team: "acme/core", members: ["alice", "bob"] },
      { team: "acme/docs", members: ["alice", "bob"] },
    ]);
    expect(plan.apps).toEqual(["docs-review-bot"]);
    expect(plan.botUsers).toEqual([BOT.login]);
  });
  test("evidence fetched by the plan gives the same decision as complete directory facts", () => {
    const cases = [
      withReviews(baseEvidence(), approve(USERS.alice)),
      withReviews(withFiles(baseEvidence(), ["README.md", "docs/x.md"]), approve(USERS.bob), approve(USERS.erin), review(USERS.dave, "CHANGES_REQUESTED")),
      withReviews(withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["docs/x.md"]), approve(BOT)),
    ];
    for (const evidence of cases) {
      const planned = evaluate(directoryFromPlan(evidence), DEFAULT_EVALUATION_SETTINGS);
      const complete = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
      expect(planned.reasons).toEqual([]);
      expect([planned.kind, planned.conclusion]).toEqual([complete.kind, complete.conclusion]);
    }
  });
});
