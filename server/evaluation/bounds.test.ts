// One test per bound of DESIGN 3.6: at the bound it works, one past it blocks.
import { describe, expect, test } from "bun:test";
import {
  MAX_CODEOWNERS_BYTES,
  MAX_CODEOWNERS_RULES,
  MAX_DELEGATION_PATTERNS,
  MAX_DELEGATIONS,
  MAX_GUARDRAIL_PATTERNS,
  MAX_MATCH_STEPS,
  MAX_OPEN_PULL_REQUESTS,
  MAX_POLICY_FILE_BYTES,
  MAX_PULL_REQUEST_FILES,
  MAX_REQUIRED_APPROVALS,
  MAX_RESOLVED_OWNERS,
  MAX_REVIEWS,
  MAX_TRUSTED_APPS,
  MIN_REQUIRED_APPROVALS,
} from "../policy/bounds.ts";
import { parseCodeowners } from "../policy/codeowners.ts";
import { MatchBudget } from "../policy/match-budget.ts";
import { analyze } from "./analyze.ts";
import { parseOrganizationPolicy, parseRepositoryPolicy } from "../policy/policy-files.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence } from "./evidence.ts";
import {
  APP_SLUG, BASE_ORGANIZATION_POLICY, BOT, HEAD, USERS, approve, baseEvidence, delegationPolicy, fiveStarRule, review, sixtyDeepPath, withCodeowners, withFiles,
  withOrganizationPolicy, withRepositoryPolicy, withReviews,
} from "./evidence-fixture.ts";

const run = (evidence: Evidence) => evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
const codes = (evidence: Evidence) => run(evidence).reasons.map((reason) => reason.code);
const padded = (text: string, bytes: number) => text + "#".repeat(bytes - text.length - 1) + "\n";

describe("bounds", () => {
  test("the constants have the values DESIGN 3.6 decided", () => {
    expect([MAX_POLICY_FILE_BYTES, MAX_CODEOWNERS_BYTES, MAX_PULL_REQUEST_FILES, MAX_REVIEWS, MAX_OPEN_PULL_REQUESTS]).toEqual([65_536, 3_000_000, 3_000, 1_000, 1_000]);
    expect([MAX_RESOLVED_OWNERS, MAX_TRUSTED_APPS, MAX_DELEGATIONS, MAX_GUARDRAIL_PATTERNS, MAX_CODEOWNERS_RULES]).toEqual([200, 50, 100, 500, 100_000]);
    expect([MIN_REQUIRED_APPROVALS, MAX_REQUIRED_APPROVALS]).toEqual([1, 10]);
    expect(MAX_MATCH_STEPS).toBe(20_000_000);
  });

  test("a policy file of 64 KiB is read; one byte more is invalid", () => {
    const base = "schema_version = 1\nenabled = true\n";
    expect(parseRepositoryPolicy(padded(base, MAX_POLICY_FILE_BYTES)).kind).toBe("ok");
    const over = parseRepositoryPolicy(padded(base, MAX_POLICY_FILE_BYTES + 1));
    expect(over.kind).toBe("invalid");
  });

  test("a CODEOWNERS file just under 3,000,000 bytes is loaded; at 3,000,000 nothing is loaded", () => {
    const under = withReviews(withCodeowners(baseEvidence(), padded("* @alice\n", MAX_CODEOWNERS_BYTES - 1)), approve(USERS.alice));
    expect(run(under).conclusion).toBe("success");
    const at = withReviews(withCodeowners(baseEvidence(), padded("* @alice\n", MAX_CODEOWNERS_BYTES)), approve(USERS.alice));
    expect(codes(at)).toEqual(["codeowners_too_large"]);
  });

  test("the size of a CODEOWNERS file counts UTF-8 bytes, not characters", () => {
    const text = "* @alice\n#" + "é".repeat(MAX_CODEOWNERS_BYTES / 2) + "\n";
    expect(text.length).toBeLessThan(MAX_CODEOWNERS_BYTES);
    expect(codes(withCodeowners(baseEvidence(), text))).toEqual(["codeowners_too_large"]);
  });

  test("100,000 CODEOWNERS rules are loaded; the next rule is an error", () => {
    const rules = Array.from({ length: MAX_CODEOWNERS_RULES }, (_, i) => `/r${i} @a`).join("\n");
    expect(parseCodeowners(rules).errors).toEqual([]);
    const over = parseCodeowners(`${rules}\n/one-more @a`);
    expect(over.errors.map((error) => error.line)).toEqual([MAX_CODEOWNERS_RULES + 1]);
  });

  test("2,999 changed files are evaluated; 3,000 are rejected", () => {
    const files = Array.from({ length: MAX_PULL_REQUEST_FILES - 1 }, (_, i) => `src/f${i}.ts`);
    expect(run(withReviews(withFiles(baseEvidence(), files), approve(USERS.alice))).conclusion).toBe("success");
    const evidence = withReviews({ ...baseEvidence(), pullRequest: { ...baseEvidence().pullRequest, changedFiles: MAX_PULL_REQUEST_FILES } }, approve(USERS.alice));
    expect(codes(evidence)).toEqual(["too_many_files"]);
  });

  test("1,000 reviews are read; more are over the bound", () => {
    const comments = Array.from({ length: MAX_REVIEWS - 1 }, () => review(USERS.mallory, "COMMENTED"));
    expect(run(withReviews(baseEvidence(), ...comments, approve(USERS.alice))).conclusion).toBe("success");
    expect(codes(withReviews(baseEvidence(), ...comments, review(USERS.mallory, "COMMENTED"), approve(USERS.alice)))).toEqual(["too_many_reviews"]);
  });

  test("1,000 open pull requests are checked for a shared head; more are over the bound", () => {
    const items = Array.from({ length: MAX_OPEN_PULL_REQUESTS }, (_, i) => ({ number: 100 + i, headSha: "d".repeat(40) }));
    const at = withReviews({ ...baseEvidence(), sameHeadPullRequests: { complete: true, items } }, approve(USERS.alice));
    expect(run(at).conclusion).toBe("success");
    const over = { ...at, sameHeadPullRequests: { complete: true as const, items: [...items, { number: 5000, headSha: HEAD.replace("a", "e") }] } };
    expect(run(over).reasons.map((reason) => reason.code)).toEqual(["same_head_incomplete"]);
  });

  test("200 distinct owners are resolved; 201 are over the bound", () => {
    const owners = (n: number) => Array.from({ length: n }, (_, i) => `@owner${i}`).join(" ");
    expect(codes(withCodeowners(baseEvidence(), `* ${owners(MAX_RESOLVED_OWNERS)}\n`))).toEqual([]);
    expect(codes(withCodeowners(baseEvidence(), `* ${owners(MAX_RESOLVED_OWNERS + 1)}\n`))).toEqual(["too_many_owners"]);
  });

  test("50 trusted Apps may be enrolled; 51 are invalid", () => {
    const apps = (n: number) => Array.from({ length: n }, (_, i) => `[[trusted_apps]]\nslug = "app-${i}"\napp_id = ${i + 1}\n`).join("");
    expect(parseOrganizationPolicy(`schema_version = 1\n${apps(MAX_TRUSTED_APPS)}`).kind).toBe("ok");
    expect(parseOrganizationPolicy(`schema_version = 1\n${apps(MAX_TRUSTED_APPS + 1)}`).kind).toBe("invalid");
  });

  test("100 delegations are accepted; 101 are invalid", () => {
    const delegations = (n: number) => Array.from({ length: n }, () => `[[delegations]]\napp = "${APP_SLUG}"\npaths = ["docs/**"]\n`).join("");
    expect(parseRepositoryPolicy(`schema_version = 1\nenabled = true\n${delegations(MAX_DELEGATIONS)}`).kind).toBe("ok");
    expect(parseRepositoryPolicy(`schema_version = 1\nenabled = true\n${delegations(MAX_DELEGATIONS + 1)}`).kind).toBe("invalid");
  });

  test("500 guardrail patterns are accepted; 501 are invalid", () => {
    const patterns = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => `/p${i}/**`));
    expect(parseOrganizationPolicy(`schema_version = 1\n[guardrails]\nnon_delegable_paths = ${patterns(MAX_GUARDRAIL_PATTERNS)}\n`).kind).toBe("ok");
    expect(parseOrganizationPolicy(`schema_version = 1\n[guardrails]\nnon_delegable_paths = ${patterns(MAX_GUARDRAIL_PATTERNS + 1)}\n`).kind).toBe("invalid");
  });

  test("500 patterns per delegation are accepted; 501 are invalid", () => {
    const patterns = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => `/p${i}/**`));
    expect(parseRepositoryPolicy(`schema_version = 1\n[[delegations]]\napp = "x"\npaths = ${patterns(MAX_DELEGATION_PATTERNS)}\n`).kind).toBe("ok");
    expect(parseRepositoryPolicy(`schema_version = 1\n[[delegations]]\napp = "x"\npaths = ${patterns(MAX_DELEGATION_PATTERNS + 1)}\n`).kind).toBe("invalid");
  });

  test("required_approvals is accepted from 1 to 10 only", () => {
    const policy = (n: number) => parseRepositoryPolicy(`schema_version = 1\nenabled = true\nrequired_approvals = ${n}\n`).kind;
    expect([policy(MIN_REQUIRED_APPROVALS - 1), policy(MIN_REQUIRED_APPROVALS), policy(MAX_REQUIRED_APPROVALS), policy(MAX_REQUIRED_APPROVALS + 1)]).toEqual(["invalid", "ok", "ok", "invalid"]);
  });

  describe("path matching work", () => {
    const deep = (unit: string, repeat: number, file: string) => unit.repeat(repeat) + file;
    const spent = (evidence: Evidence) => {
      const probe = new MatchBudget(Number.POSITIVE_INFINITY);
      const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, probe);
      return { decision, steps: probe.used };
    };

    test("an evaluation whose matching fits its budget decides; one step less fails closed naming the bound", () => {
      const files = [deep("src/test/", 200, "a.snap"), deep("src/test/", 200, "b.txt"), "src/test/c.snap"];
      const evidence = withReviews(withFiles(withCodeowners(baseEvidence(), "* @bob\n/**/src/**/test/**/*.snap @alice\n"), files), approve(USERS.alice), approve(USERS.bob));
      const { decision, steps } = spent(evidence);
      expect(decision.conclusion).toBe("success");
      expect(evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, new MatchBudget(steps)).conclusion).toBe("success");
      const over = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, new MatchBudget(steps - 1));
      expect(over).toMatchObject({ kind: "conclusive", conclusion: "failure", ownerSets: [], unownedPathCount: 0 });
      expect(over.reasons.map((reason) => reason.code)).toEqual(["matching_budget_exceeded"]);
    });

    test("the delegation and guardrail checks spend from the same budget as the CODEOWNERS match", () => {
      const files = [deep("docs/guide/", 150, "a.md"), deep("docs/guide/", 150, "b.md")];
      const guardrails = BASE_ORGANIZATION_POLICY.replace('"/Makefile"', '"/**/docs/**/guide/**/deploy/**/*.yml"');
      const evidence = withReviews(
        withOrganizationPolicy(withRepositoryPolicy(withFiles(withCodeowners(baseEvidence(), "* @alice\n"), files), delegationPolicy(["/**/docs/**/guide/**/*.md"])), guardrails),
        approve(BOT),
      );
      const { decision, steps } = spent(evidence);
      expect(decision.conclusion).toBe("success");
      expect(decision.ownerSets[0]!.counted).toMatchObject([{ reviewer: BOT.login, via: { kind: "app", app: APP_SLUG }, rule: "app_delegation" }]);
      const analysis = new MatchBudget(Number.POSITIVE_INFINITY);
      analyze(evidence, DEFAULT_EVALUATION_SETTINGS, analysis);
      expect(analysis.used).toBeLessThan(steps - 1); // so the last step is spent by the App delegation check
      const over = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, new MatchBudget(steps - 1));
      expect(over).toMatchObject({ kind: "conclusive", conclusion: "failure", ownerSets: [] });
      expect(over.reasons.map((reason) => reason.code)).toEqual(["matching_budget_exceeded"]);
    });

    test("a CODEOWNERS file whose parsing alone needs more than the budget fails closed naming the bound", () => {
      const rules = Array.from({ length: 2_000 }, (_, i) => `/services/svc-${i}/ @alice`).join("\n");
      const evidence = withReviews(withFiles(withCodeowners(baseEvidence(), rules), ["services/svc-1/a.ts"]), approve(USERS.alice));
      const { decision, steps } = spent(evidence);
      expect(decision.conclusion).toBe("success");
      const parsing = new MatchBudget(Number.POSITIVE_INFINITY);
      parseCodeowners(rules, parsing);
      expect(parsing.used).toBeGreaterThan(1_000);
      expect(steps).toBeGreaterThan(parsing.used);
      const over = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, new MatchBudget(parsing.used - 1));
      expect(over).toMatchObject({ kind: "conclusive", conclusion: "failure", ownerSets: [], unownedPathCount: 0 });
      expect(over.reasons.map((reason) => reason.code)).toEqual(["matching_budget_exceeded"]);
    });

    test("100 rules of five ** against 2,999 sixty-deep paths fail closed at MAX_MATCH_STEPS", () => {
      const rules = Array.from({ length: 100 }, (_, i) => `${fiveStarRule(i)} @alice`).join("\n");
      const files = Array.from({ length: MAX_PULL_REQUEST_FILES - 1 }, (_, i) => sixtyDeepPath(`f${i}.txt`));
      const budget = new MatchBudget(MAX_MATCH_STEPS);
      const decision = evaluate(withReviews(withFiles(withCodeowners(baseEvidence(), rules), files), approve(USERS.alice)), DEFAULT_EVALUATION_SETTINGS, budget);
      expect(decision.conclusion).toBe("failure");
      expect(decision.reasons.map((reason) => reason.code)).toEqual(["matching_budget_exceeded"]);
      expect(budget.used).toBeGreaterThan(MAX_MATCH_STEPS);
      expect(budget.used).toBeLessThan(MAX_MATCH_STEPS + 1_000);
    });
  });
});
