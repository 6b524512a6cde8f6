import { describe, expect, test } from "bun:test";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, evaluate as evaluateWith } from "../evaluation/index.ts";
import { approve, baseEvidence, review, USERS, withFiles, withReviews } from "../evaluation/evidence-fixture.ts";
import { decodeSubjects, MAX_AUTHORITY_SUBJECTS } from "../store/index.ts";
import { resultSubjects } from "./result-subjects.ts";

/** Whom a decided result depends on (issue 18 item 3): the users and teams its owner sets name, and its reviewers. */
const evaluate = (evidence: Evidence) => evaluateWith(evidence, DEFAULT_EVALUATION_SETTINGS);

describe("the subjects a result depends on", () => {
  const subjectsOf = (evidence: ReturnType<typeof baseEvidence>) => decodeSubjects(resultSubjects(evaluate(evidence), evidence));

  test("the owners its owner sets name and the authors of its reviews, in lower case", () => {
    const evidence = withReviews(withFiles(baseEvidence(), ["src/a.ts", "docs/guide.md", "README.md"]), approve({ ...USERS.mallory, login: "Mallory" }), review(USERS.carol, "COMMENTED"));
    expect(subjectsOf(evidence)).toEqual(new Set(["user:alice", "team:acme/docs", "team:acme/core", "user:mallory", "user:carol"]));
  });

  test("a change no owner set covers depends on nobody but its reviewers", () => {
    expect(subjectsOf(withReviews(withFiles(baseEvidence(), ["vendor/lib.js"]), approve(USERS.erin)))).toEqual(new Set(["user:erin"]));
  });

  test("unknown when the reviews are not all known or the list is over its bound", () => {
    const gap = { ...withFiles(baseEvidence(), ["src/a.ts"]), reviews: { complete: false as const, cause: "transient" as const, detail: "page 2 missing", retryAfterMs: null } };
    expect(resultSubjects(evaluate(withFiles(baseEvidence(), ["src/a.ts"])), gap as never)).toBeNull();
    const many = Array.from({ length: MAX_AUTHORITY_SUBJECTS + 1 }, (_, i) => review({ id: 100 + i, login: `user-${i}`, type: "User" }, "COMMENTED"));
    const crowded = withReviews(withFiles(baseEvidence(), ["src/a.ts"]), ...many);
    expect(resultSubjects(evaluate(crowded), crowded)).toBeNull();
  });
});
