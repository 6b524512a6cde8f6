import { describe, expect, test } from "bun:test";
import { MAX_MATCH_STEPS } from "../policy/bounds.ts";
import { parseCodeowners } from "../policy/codeowners.ts";
import { MatchBudget } from "../policy/match-budget.ts";
import { parseRepositoryPolicy } from "../policy/policy-files.ts";
import {
  changedPaths,
  headReadsNeeded,
  MAX_PREVIEW_CHANGES,
  MAX_PREVIEW_PROBLEMS,
  previewChange,
  previewFromEvidence,
  type ChangePreview,
  type ChangePreviewInput,
  type PreviewResult,
} from "./change-preview.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type CodeownersEvidence } from "./evidence.ts";
import { APP_SLUG, BASE_CODEOWNERS, BASE_ORGANIZATION_POLICY, baseEvidence, delegationPolicy, ENABLED_POLICY, fiveStarRule, found, sixtyDeepPath, withCodeowners, withFiles } from "./evidence-fixture.ts";

const base = { codeowners: { path: "CODEOWNERS" as const, text: BASE_CODEOWNERS }, repositoryPolicy: ENABLED_POLICY };

function preview(input: Partial<ChangePreviewInput> & Pick<ChangePreviewInput, "head" | "changedFiles">): ChangePreview {
  const result = previewChange({ base, organizationPolicy: BASE_ORGANIZATION_POLICY, ...input });
  if (result.kind !== "preview") throw new Error(`no preview: ${JSON.stringify(result)}`);
  return result;
}

describe("change preview", () => {
  test("a CODEOWNERS edit lists each changed path whose owner set changes, and only those", () => {
    const result = preview({
      head: { ...base, codeowners: { path: "CODEOWNERS", text: `${BASE_CODEOWNERS}/src/api/ @bob @Alice\n` } },
      changedFiles: ["src/api/a.ts", "src/app.ts", "docs/a.md", "CODEOWNERS"],
    });
    expect(result.ownershipChanges).toEqual([{ path: "src/api/a.ts", before: { owners: ["@alice"], apps: [] }, after: { owners: ["@Alice", "@bob"], apps: [] } }]);
    expect(result.invalid).toEqual([]);
    expect(result.codeownersPath).toEqual({ before: "CODEOWNERS", after: "CODEOWNERS" });
  });

  test("a path that loses its owners shows an empty owner set after", () => {
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: "/docs/ @acme/docs\n" } }, changedFiles: ["src/app.ts"] });
    expect(result.ownershipChanges).toEqual([{ path: "src/app.ts", before: { owners: ["@alice"], apps: [] }, after: { owners: [], apps: [] } }]);
  });

  test("the head's invalid lines are listed with the parser's own line numbers and messages", () => {
    const text = "* @acme/core\n!x @bob\n/src/ alice\n";
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text } }, changedFiles: ["CODEOWNERS"] });
    expect(result.invalid).toEqual(parseCodeowners(text).errors.map((error) => ({ file: "CODEOWNERS", line: error.line, message: error.message })));
    expect(result.invalid.map((problem) => problem.line)).toEqual([2, 3]);
  });

  test("a CODEOWNERS added at a location of higher precedence takes over from the base's", () => {
    const result = previewChange({
      base,
      // The head adds .forge/CODEOWNERS, the location the decision reads first.
      head: { ...base, codeowners: { path: ".forge/CODEOWNERS", text: "* @carol\n" } },
      changedFiles: [".forge/CODEOWNERS", "src/app.ts"],
    }) as ChangePreview;
    expect(result.codeownersPath).toEqual({ before: "CODEOWNERS", after: ".forge/CODEOWNERS" });
    expect(result.ownershipChanges).toContainEqual({ path: "src/app.ts", before: { owners: ["@alice"], apps: [] }, after: { owners: ["@carol"], apps: [] } });
  });

  test("a repository policy edit lists its errors with their lines or fields, as the policy parser reports them", () => {
    const syntax = preview({ head: { ...base, repositoryPolicy: "schema_version = 1\nenabled = true\nrequired_approvals = \n" }, changedFiles: [".forge/service-policy.toml"] });
    expect(syntax.invalid).toHaveLength(1);
    expect(syntax.invalid[0]).toMatchObject({ file: ".forge/service-policy.toml", line: 3 });

    const schema = "schema_version = 1\nenabled = true\nrequired_approvals = 42\n";
    const parsed = parseRepositoryPolicy(schema);
    if (parsed.kind !== "invalid") throw new Error("the fixture should be invalid");
    const field = preview({ head: { ...base, repositoryPolicy: schema }, changedFiles: [".forge/service-policy.toml"] });
    expect(field.invalid).toEqual(parsed.errors.map((error) => ({ file: ".forge/service-policy.toml", line: null, message: `${error.location}: ${error.message}` })));
  });

  test("a delegation added by the policy shows the App on the paths it may approve, never on non-delegable ones", () => {
    // The base's policy delegates to the App already: the base decision's output shows its enrollment.
    const result = preview({
      base: { ...base, repositoryPolicy: delegationPolicy(["/src/**"]) },
      head: { ...base, repositoryPolicy: delegationPolicy(["/docs/**", "/deploy/**"]) },
      changedFiles: ["docs/a.md", "deploy/x.yaml", "src/app.ts", ".forge/service-policy.toml"],
    });
    expect(result.ownershipChanges).toEqual([
      { path: "docs/a.md", before: { owners: ["@acme/docs"], apps: [] }, after: { owners: ["@acme/docs"], apps: [APP_SLUG] } },
      { path: "src/app.ts", before: { owners: ["@alice"], apps: [APP_SLUG] }, after: { owners: ["@alice"], apps: [] } },
    ]);
  });

  test("a change of required approvals is reported", () => {
    const result = preview({ head: { ...base, repositoryPolicy: "schema_version = 1\nenabled = true\nrequired_approvals = 2\n" }, changedFiles: [".forge/service-policy.toml"] });
    expect(result.requiredApprovals).toEqual({ before: 1, after: 2 });
  });

  test("a delegation to an App the organization did not enroll is a head problem worded as the decision words it", () => {
    const policy = `schema_version = 1\nenabled = true\n[[delegations]]\napp = "stranger"\npaths = ["/docs/**"]\n`;
    // The base delegates to the same App: the base decision already says it is not enrolled.
    const basePolicy = `schema_version = 1\nenabled = true\n[[delegations]]\napp = "stranger"\npaths = ["/src/**"]\n`;
    const result = preview({ base: { ...base, repositoryPolicy: basePolicy }, head: { ...base, repositoryPolicy: policy }, changedFiles: [".forge/service-policy.toml"] });
    expect(result.problems.map((reason) => reason.code)).toEqual(["delegation_app_not_enrolled"]);
  });

  test("a delegation the head adds to an App the base does not delegate to discloses nothing of the organization's enrollment", () => {
    const delegatingTo = (app: string) => `schema_version = 1\nenabled = true\n[[delegations]]\napp = "${app}"\npaths = ["/docs/**"]\n`;
    const previewOf = (app: string) =>
      preview({ head: { ...base, repositoryPolicy: delegatingTo(app) }, changedFiles: ["docs/a.md", "src/app.ts", ".forge/service-policy.toml"] });
    const enrolled = previewOf(APP_SLUG);
    const stranger = previewOf("stranger");
    // The same answer whether the organization enrolled the App or not: only the name the head wrote differs.
    expect(JSON.parse(JSON.stringify(enrolled).replaceAll(APP_SLUG, "stranger"))).toEqual(stranger);
    expect(enrolled.problems).toEqual([]);
    expect(enrolled.ownershipChanges).toEqual([]);
    expect(JSON.stringify(enrolled.notes)).toContain(APP_SLUG);
  });

  test("a head policy that turns the check off says so and compares no owner sets", () => {
    const result = preview({ head: { ...base, repositoryPolicy: "schema_version = 1\nenabled = false\n" }, changedFiles: ["src/app.ts"] });
    expect(result.ownershipChanges).toEqual([]);
    expect(JSON.stringify(result.notes)).toContain("would not run");
  });

  test("the owners after the change are those the decision would find with the head's file", () => {
    const head = "* @acme/core\n/src/ @bob\n/src/*.md @erin @bob\n/docs/\n";
    const files = ["src/app.ts", "src/readme.md", "docs/a.md", "lib/x.c", "src/deep/y.md"];
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: head } }, changedFiles: files });
    const decision = evaluate(withCodeowners(withFiles(baseEvidence(), files), head), DEFAULT_EVALUATION_SETTINGS);
    const byPath = new Map(decision.ownerSets.flatMap((set) => set.paths.map((path) => [path, set.owners] as const)));
    const before = evaluate(withFiles(baseEvidence(), files), DEFAULT_EVALUATION_SETTINGS);
    const beforeByPath = new Map(before.ownerSets.flatMap((set) => set.paths.map((path) => [path, set.owners] as const)));
    const expected = files.filter((path) => JSON.stringify(byPath.get(path) ?? []) !== JSON.stringify(beforeByPath.get(path) ?? [])).sort();
    expect(expected.length).toBeGreaterThan(0);
    expect(result.ownershipChanges.map((change) => change.path)).toEqual(expected);
    for (const change of result.ownershipChanges) expect(change.after.owners).toEqual(byPath.get(change.path) ?? []);
  });

  test("listed changes and invalid lines are bounded, the rest counted", () => {
    const files = Array.from({ length: MAX_PREVIEW_CHANGES + 30 }, (_, i) => `src/f${i}.ts`);
    const invalidLines = Array.from({ length: MAX_PREVIEW_PROBLEMS + 7 }, (_, i) => `/x${i} not-an-owner`).join("\n");
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: `* @zed\n${invalidLines}\n` } }, changedFiles: files });
    expect(result.ownershipChanges).toHaveLength(MAX_PREVIEW_CHANGES);
    expect(result.ownershipChangesOmitted).toBe(30);
    expect(result.invalid).toHaveLength(MAX_PREVIEW_PROBLEMS);
    expect(result.invalidOmitted).toBe(7);
  });

  test("path matching beyond the preview's budget compares no owner sets and says why", () => {
    const head = Array.from({ length: 100 }, (_, i) => fiveStarRule(i)).join("\n");
    const files = Array.from({ length: 50 }, (_, i) => sixtyDeepPath(`f${i}.x`));
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: head } }, changedFiles: files, budget: new MatchBudget(100_000) });
    expect(result.ownershipChanges).toEqual([]);
    expect(JSON.stringify(result.notes)).toContain("steps");
  });

  test("the preview spends at most a quarter of the decision's matching budget", () => {
    // About 6,200,000 steps: within the decision's MAX_MATCH_STEPS, over a quarter of it.
    const head = ["* @bob", ...Array.from({ length: 10 }, (_, i) => `${fiveStarRule(i)} @carol`)].join("\n");
    const files = Array.from({ length: 1_000 }, (_, i) => sixtyDeepPath(`f${i}.x`));
    const probe = new MatchBudget(Number.POSITIVE_INFINITY);
    preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: head } }, changedFiles: files, budget: probe });
    expect(probe.used).toBeGreaterThan(MAX_MATCH_STEPS / 4);
    expect(probe.used).toBeLessThan(MAX_MATCH_STEPS);
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: head } }, changedFiles: files });
    expect(result.ownershipChanges).toEqual([]);
    expect(JSON.stringify(result.notes)).toContain(String(MAX_MATCH_STEPS / 4));
  });

  test("hostile paths and owners are returned as data, untouched", () => {
    const path = "src/[x](http://evil)\u202e.ts";
    const result = preview({ head: { ...base, codeowners: { path: "CODEOWNERS", text: "* @mallory\n" } }, changedFiles: [path] });
    expect(result.ownershipChanges.map((change) => change.path)).toEqual([path]);
  });
});

describe("preview from evidence", () => {
  const forgeBase: CodeownersEvidence = { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", BASE_CODEOWNERS) };

  test("evidence without head files has no preview", () => {
    expect(previewFromEvidence(baseEvidence(), DEFAULT_EVALUATION_SETTINGS)).toBeNull();
  });

  test("a head file that could not be read leaves the preview out, saying why", () => {
    const evidence = { ...withFiles(baseEvidence(), ["CODEOWNERS"]), headFiles: { codeowners: { ".forge/CODEOWNERS": { kind: "missing" as const }, CODEOWNERS: { kind: "incomplete" as const, cause: "transient" as const, detail: "GET /repos/{owner}/{repo}/contents/{path} answered 502" } }, repositoryPolicy: baseEvidence().repositoryPolicy } };
    const result: PreviewResult | null = previewFromEvidence(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(result?.kind).toBe("unavailable");
  });

  test("head files in the evidence are compared against the base reads", () => {
    const evidence = { ...withFiles(baseEvidence(), ["CODEOWNERS", "src/app.ts"]), headFiles: { codeowners: { ...forgeBase, CODEOWNERS: found("CODEOWNERS", "* @bob\n") }, repositoryPolicy: baseEvidence().repositoryPolicy } };
    const result = previewFromEvidence(evidence, DEFAULT_EVALUATION_SETTINGS) as ChangePreview;
    expect(result.ownershipChanges).toContainEqual({ path: "src/app.ts", before: { owners: ["@alice"], apps: [] }, after: { owners: ["@bob"], apps: [] } });
  });
});

describe("which head files the preview needs", () => {
  const where = DEFAULT_EVALUATION_SETTINGS;
  const policyPath = where.policyPath;
  const atCodeowners: CodeownersEvidence = { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", BASE_CODEOWNERS) };
  const modified = (...paths: string[]) => paths.map((filename) => ({ filename, status: "modified" }));

  test("none when no policy file changes", () => {
    expect(headReadsNeeded(modified("src/app.ts", "README.md"), atCodeowners, where)).toBeNull();
  });
  test("the code-owners file the base uses", () => {
    expect(headReadsNeeded(modified("CODEOWNERS"), atCodeowners, where)).toEqual({ codeowners: true, repositoryPolicy: false });
  });
  test("a code-owners file at a location of higher precedence", () => {
    expect(headReadsNeeded(modified(".forge/CODEOWNERS"), atCodeowners, where)).toEqual({ codeowners: true, repositoryPolicy: false });
  });
  test("not a code-owners file at a location of lower precedence, which the base's file overrides", () => {
    expect(headReadsNeeded(modified("docs/CODEOWNERS"), atCodeowners, where)).toBeNull();
  });
  test("any location when the base has no code-owners file", () => {
    const none: CodeownersEvidence = { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: { kind: "missing" }, "docs/CODEOWNERS": { kind: "missing" } };
    expect(headReadsNeeded(modified("docs/CODEOWNERS"), none, where)).toEqual({ codeowners: true, repositoryPolicy: false });
  });
  test("the base's code-owners file renamed away", () => {
    expect(headReadsNeeded([{ filename: "OWNERS.old", status: "renamed", previousFilename: "CODEOWNERS" }], atCodeowners, where)).toEqual({ codeowners: true, repositoryPolicy: false });
  });
  test("the repository policy", () => {
    expect(headReadsNeeded(modified(policyPath), atCodeowners, where)).toEqual({ codeowners: false, repositoryPolicy: true });
  });
  test("under the forge directory .github, a .github/CODEOWNERS takes precedence and a .forge/CODEOWNERS is no policy file", () => {
    const github = { ...where, forgeDirectory: ".github", policyPath: ".github/service-policy.toml" };
    const base: CodeownersEvidence = { ".github/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", BASE_CODEOWNERS) };
    expect(headReadsNeeded(modified(".github/CODEOWNERS"), base, github)).toEqual({ codeowners: true, repositoryPolicy: false });
    expect(headReadsNeeded(modified(".forge/CODEOWNERS", ".forge/service-policy.toml"), base, github)).toBeNull();
    expect(headReadsNeeded(modified(".github/service-policy.toml"), base, github)).toEqual({ codeowners: false, repositoryPolicy: true });
  });
  test("changed paths include the previous path of a rename", () => {
    expect([...changedPaths([{ filename: "b", status: "renamed", previousFilename: "a" }])]).toEqual(["b", "a"]);
  });
});
