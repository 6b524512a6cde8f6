// The spec's invariants 1-6 ("What the service does", item 9), one behaviour each; rule-by-rule detail is in evaluate.test.ts.
import { describe, expect, test } from "bun:test";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence } from "./evidence.ts";
import { BOT, OLD_HEAD, USERS, approve, baseEvidence, delegationPolicy, withCodeowners, withFiles, withRepositoryPolicy, withReviews } from "./evidence-fixture.ts";

const conclusion = (evidence: Evidence) => {
  const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
  return decision.kind === "conclusive" ? decision.conclusion : decision.kind;
};
const approved = () => withReviews(baseEvidence(), approve(USERS.alice));

describe("spec invariants", () => {
  test("1: incomplete or contradictory evidence never yields success", () => {
    expect(conclusion(approved())).toBe("success");
    expect(conclusion({ ...approved(), files: { complete: false, cause: "transient", detail: "timeout" } })).toBe("retry");
    expect(conclusion({ ...approved(), reviews: { complete: false, cause: "over_bound", detail: "truncated" } })).toBe("failure");
    expect(conclusion({ ...approved(), pullRequest: { ...approved().pullRequest, changedFiles: 5 } })).toBe("failure");
  });
  test("2: a review for an older head never satisfies the current head", () => {
    expect(conclusion(withReviews(baseEvidence(), approve(USERS.alice, OLD_HEAD)))).toBe("failure");
  });
  test("3: a repository cannot enroll its own trusted App", () => {
    const policy = `${delegationPolicy(["**"])}\n[[trusted_apps]]\nslug = "own-bot"\napp_id = 5\n`;
    const evidence = withReviews(withRepositoryPolicy({ ...baseEvidence(), organizationPolicy: { kind: "missing" } }, policy), approve(BOT));
    expect(conclusion(evidence)).toBe("failure");
  });
  test("4: a label is never approval evidence by itself", () => {
    const evidence = withRepositoryPolicy(withFiles(baseEvidence(), ["docs/a.md"]), delegationPolicy(["docs/**"], 'required_label = "bot-review"'));
    expect(conclusion({ ...evidence, pullRequest: { ...evidence.pullRequest, labels: ["bot-review"] } })).toBe("failure");
  });
  test("5: every distinct effective owner set is satisfied independently", () => {
    const evidence = withFiles(withCodeowners(baseEvidence(), "/a/ @alice\n/b/ @alice @bob\n"), ["a/x", "b/y"]);
    expect(conclusion(withReviews(evidence, approve(USERS.bob)))).toBe("failure");
    expect(conclusion(withReviews(evidence, approve(USERS.alice)))).toBe("success");
  });
  test("6: both the old and new path of a rename are evaluated; incomplete rename evidence fails closed", () => {
    const renamed = withFiles(baseEvidence(), [{ filename: "docs/app.ts", status: "renamed", previousFilename: "src/app.ts" }]);
    expect(conclusion(withReviews(renamed, approve(USERS.erin)))).toBe("failure");
    expect(conclusion(withReviews(renamed, approve(USERS.erin), approve(USERS.alice)))).toBe("success");
    const incomplete = withFiles(baseEvidence(), [{ filename: "docs/app.ts", status: "renamed" }]);
    expect(conclusion(withReviews(incomplete, approve(USERS.erin), approve(USERS.alice)))).toBe("failure");
  });
});
