import { describe, expect, test } from "bun:test";
import { MAX_CODEOWNERS_BYTES, MAX_CODEOWNERS_RULES, MAX_MATCH_STEPS, MAX_POLICY_FILE_BYTES } from "./bounds.ts";
import { parseCodeowners } from "./codeowners.ts";
import { MatchBudget } from "./match-budget.ts";
import { validate, type Finding, type FindingKind, type ValidatedFile, type ValidationInput } from "./validate.ts";

const LOCATIONS = [".forge/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"];
const POLICY = ".forge/service-policy.toml";
const ENABLED = "schema_version = 1\nenabled = true\n";
const ORGANIZATION = 'schema_version = 1\n[[trusted_apps]]\nslug = "docs-bot"\napp_id = 7\n[guardrails]\nnon_delegable_paths = ["deploy/**"]\n';

function run(options: { codeowners?: string | ValidatedFile[]; policy?: string | null; organization?: string; tree?: string[]; matchSteps?: number; forgeDirectory?: string } = {}) {
  const codeowners = options.codeowners === undefined ? [{ path: "CODEOWNERS", text: "* @acme/core\n" }] : typeof options.codeowners === "string" ? [{ path: "CODEOWNERS", text: options.codeowners }] : options.codeowners;
  const input: ValidationInput = {
    codeowners,
    codeownersLocations: LOCATIONS,
    forgeDirectory: options.forgeDirectory ?? ".forge",
    repositoryPolicy: options.policy === null ? null : { path: POLICY, text: options.policy ?? ENABLED },
    organizationPolicy: options.organization === undefined ? null : { path: "org.toml", text: options.organization },
    policyPath: POLICY,
    tree: options.tree ?? null,
    ...(options.matchSteps === undefined ? {} : { matchSteps: options.matchSteps }),
  };
  return validate(input);
}

const only = (findings: readonly Finding[], kind: FindingKind) => findings.filter((finding) => finding.kind === kind);
const brief = (finding: Finding) => ({ kind: finding.kind, severity: finding.severity, file: finding.file, line: finding.line });

describe("CODEOWNERS findings", () => {
  test("a clean file with a valid policy gives no finding", () => {
    const report = run({ codeowners: "* @acme/core\n/docs/ @alice\n", tree: ["a.ts", "docs/x.md"] });
    expect(report.findings).toEqual([]);
    expect(report.summary).toMatchObject({ errors: 0, warnings: 0, notices: 0, codeowners: "CODEOWNERS", rules: 2, paths: 2, unownedPaths: 0 });
  });

  test("every invalid line is an error at its line with the parser's message", () => {
    const report = run({ codeowners: "* @acme/core\n!x @a\n\n*.[ch] @bob\n/src/ bob\n" });
    expect(only(report.findings, "invalid_codeowners_line").map((f) => [f.line, f.message, f.severity])).toEqual([
      [2, "negation ('!') is not supported in CODEOWNERS", "error"],
      [4, "character ranges ('[ ]') are not supported in CODEOWNERS", "error"],
      [5, "invalid owner 'bob'", "error"],
    ]);
  });

  test("an owner longer than the forge allows is an invalid line, quoted by its start and length", () => {
    const login = `@${"u".repeat(40)}`;
    const report = run({ codeowners: `* @acme/core\n/src/ ${login}\n/x @${"a-".repeat(100_000)}\n` });
    expect(only(report.findings, "invalid_codeowners_line").map((f) => [f.line, f.message])).toEqual([
      [2, `invalid owner '${login}'`],
      [3, `invalid owner '@${"a-".repeat(29)}a…' (200001 characters)`],
    ]);
  });

  test("an e-mail owner is a warning at its line: the service cannot resolve it, so it never approves", () => {
    const report = run({ codeowners: "* @acme/core\n/docs/ docs@example.com @alice\n/legal/ legal@example.com counsel@example.org\n/src/ @bob\n" });
    expect(report.findings.map(brief)).toEqual([
      { kind: "email_owner_never_approves", severity: "warning", file: "CODEOWNERS", line: 2 },
      { kind: "email_owner_never_approves", severity: "warning", file: "CODEOWNERS", line: 3 },
    ]);
    expect(report.findings.map((f) => f.message)).toEqual([
      "owner 'docs@example.com' is an e-mail address: the service cannot resolve it to an account, so it never approves; name the account (@login) instead",
      "owners 'legal@example.com', 'counsel@example.org' are e-mail addresses: the service cannot resolve them to accounts, so they never approve (no owner of this rule can approve); name the accounts (@login) instead",
    ]);
    expect(report.summary).toMatchObject({ errors: 0, warnings: 2 });
  });

  test("a rule with many e-mail owners is one finding naming the first five", () => {
    const owners = Array.from({ length: 8 }, (_, i) => `o${i}@example.com`);
    const [finding] = run({ codeowners: `* ${owners.join(" ")}\n` }).findings;
    expect(finding!.message).toStartWith(`owners ${owners.slice(0, 5).map((o) => `'${o}'`).join(", ")} and 3 more are e-mail addresses`);
  });

  test("the first existing location is read and later ones are reported as ignored", () => {
    const report = run({ codeowners: [{ path: ".forge/CODEOWNERS", text: "* @a\n" }, { path: "docs/CODEOWNERS", text: "!broken\n" }] });
    expect(report.summary.codeowners).toBe(".forge/CODEOWNERS");
    expect(report.findings.map(brief)).toEqual([{ kind: "shadowed_codeowners", severity: "warning", file: "docs/CODEOWNERS", line: null }]);
    expect(report.findings[0]!.message).toContain("the service reads .forge/CODEOWNERS");
  });

  test("no code-owners file is a notice naming the locations", () => {
    const report = run({ codeowners: [] });
    expect(report.findings.map(brief)).toEqual([{ kind: "codeowners_missing", severity: "notice", file: null, line: null }]);
    expect(report.findings[0]!.message).toContain(".forge/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS");
  });

  test("a file at the size bound, read or not, is an error and none of it is checked", () => {
    const text = "* @a\n!bad\n" + "#".repeat(MAX_CODEOWNERS_BYTES - 11) + "\n";
    for (const file of [{ path: "CODEOWNERS", text }, { path: "CODEOWNERS", bytes: MAX_CODEOWNERS_BYTES }]) {
      const report = run({ codeowners: [file] });
      expect(report.findings.map(brief)).toEqual([{ kind: "bound_exceeded", severity: "error", file: "CODEOWNERS", line: null }]);
      expect(report.findings[0]!.message).toContain(`is ${MAX_CODEOWNERS_BYTES} bytes; it must be under ${MAX_CODEOWNERS_BYTES} bytes`);
    }
    expect(run({ codeowners: [{ path: "CODEOWNERS", text: "* @a\n" + "#".repeat(MAX_CODEOWNERS_BYTES - 7) + "\n" }] }).findings).toEqual([]);
  });

  test("rules past the rule bound are a bound finding at the first rule not loaded", () => {
    const text = Array.from({ length: MAX_CODEOWNERS_RULES + 1 }, (_, i) => `/d${i}/ @a`).join("\n");
    const findings = run({ codeowners: text }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "bound_exceeded", severity: "error", file: "CODEOWNERS", line: MAX_CODEOWNERS_RULES + 1 }]);
  });

  test("without a tree, an earlier rule with the same pattern as a later one is dead", () => {
    const findings = run({ codeowners: "/docs/ @a\n* @b\n/docs/ @c\n" }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "dead_rule", severity: "warning", file: "CODEOWNERS", line: 1 }]);
    expect(findings[0]!.message).toContain("line 3 has the same pattern");
  });
});

describe("tree findings", () => {
  const tree = ["README.md", "src/a/b.ts", "src/c.ts", "lib/q.c", "vendor/x.js", "docs/guide.md"];

  test("a rule matching no path of the tree owns nothing", () => {
    const findings = run({ codeowners: "* @core\n/nothing/ @erin\n", tree }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "rule_owns_nothing", severity: "warning", file: "CODEOWNERS", line: 2 }]);
    expect(findings[0]!.message).toBe("'/nothing/' matches no path of the tree");
  });

  test("a rule whose every path a later rule re-owns is dead, naming the later rule", () => {
    const findings = run({ codeowners: "* @core\n/src/a/ @carol\n/src/ @bob\n", tree }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "dead_rule", severity: "warning", file: "CODEOWNERS", line: 2 }]);
    expect(findings[0]!.message).toContain("e.g. line 3 '/src/' owns src/a/b.ts");
  });

  test("with a tree, earlier rules with the same pattern as a later one are dead, naming the rule that owns their paths", () => {
    const findings = run({ codeowners: "/src/ @a\n* @core\n/src/ @b\n/src/a/ @c\n/src/ @d\n/nothing/ @e\n/nothing/ @f\n", tree }).findings;
    expect(findings.map((f) => [f.kind, f.line])).toEqual([["dead_rule", 1], ["dead_rule", 3], ["dead_rule", 4], ["rule_owns_nothing", 6], ["rule_owns_nothing", 7]]);
    expect(findings[0]!.message).toContain("e.g. line 5 '/src/' owns src/a/b.ts");
    expect(findings[1]!.message).toContain("e.g. line 5 '/src/' owns src/a/b.ts");
  });

  test("a broad first rule overtaken on every path is dead, but one that still owns a path is not", () => {
    expect(only(run({ codeowners: "* @core\n** @other\n", tree }).findings, "dead_rule").map((f) => f.line)).toEqual([1]);
    expect(only(run({ codeowners: "* @core\n/src/ @bob\n", tree }).findings, "dead_rule")).toEqual([]);
  });

  test("unowned paths are counted, with the first few named, including paths of a rule without owners", () => {
    const report = run({ codeowners: "/src/ @bob\n/vendor/\n", tree });
    const [finding] = only(report.findings, "unowned_paths");
    expect(brief(finding!)).toEqual({ kind: "unowned_paths", severity: "warning", file: "CODEOWNERS", line: null });
    expect(finding!.message).toBe("4 of 6 paths have no code owner, so changing them needs no owner's approval: README.md, lib/q.c, vendor/x.js, docs/guide.md");
    expect(report.summary.unownedPaths).toBe(4);
  });

  test("past five unowned paths the rest are counted, not listed", () => {
    const many = Array.from({ length: 12 }, (_, i) => `p${i}.txt`);
    const [finding] = only(run({ codeowners: "/src/ @bob\n", tree: many }).findings, "unowned_paths");
    expect(finding!.message).toEndWith("p0.txt, p1.txt, p2.txt, p3.txt, p4.txt and 7 more");
  });

  test("owners are found by the service's matcher: what the validator says a path's rule is, the parser's match says too", () => {
    // `docs/*` owns direct children only (GitHub), so docs/a/b.md falls to `*`; `/build/` needs something below it.
    const findings = run({ codeowners: "* @core\ndocs/* @docs\n/build/ @ops\n", tree: ["docs/a/b.md", "build"] }).findings;
    expect(findings.map((f) => [f.kind, f.line])).toEqual([["rule_owns_nothing", 2], ["rule_owns_nothing", 3]]);
  });

  test("a hostile pattern stops at the step budget with one error and no partial tree finding", () => {
    // No literal segment and no extension: the index offers these rules for every path, and each test walks every state.
    const rules = Array.from({ length: 50 }, (_, i) => `/**/a*/**/a*/**/a*/**/a*/**/z${i}*`).join("\n");
    const deep = Array.from({ length: 200 }, (_, i) => "a/".repeat(60) + `f${i}`);
    const report = run({ codeowners: `* @core\n${rules}\n/never/ @x\n`, tree: deep, matchSteps: 1_000_000 });
    expect(report.findings.map(brief)).toEqual([{ kind: "match_budget_exceeded", severity: "error", file: null, line: null }]);
    expect(report.findings[0]!.message).toContain("more than 1000000 steps");
    expect(report.summary.unownedPaths).toBeNull();
    expect(report.summary.matchSteps).toBeGreaterThan(1_000_000);
  });

  test("a tree whose costliest pull request would exceed the service's matching budget gets a bound warning", () => {
    const rules = Array.from({ length: 40 }, (_, i) => `/**/a/**/b/**/c/**/*.r${i}`).join("\n");
    const tree = Array.from({ length: 3000 }, (_, i) => "a/b/c/".repeat(12) + `f${i}.txt`);
    const report = run({ codeowners: `* @core\n${rules}\n`, tree });
    const [bound] = only(report.findings, "bound_exceeded");
    expect(bound?.severity).toBe("warning");
    expect(bound?.message).toContain(`past ${MAX_MATCH_STEPS} the service fails closed`);
    expect(only(run({ codeowners: `* @core\n${rules}\n`, tree: tree.slice(0, 10) }).findings, "bound_exceeded")).toEqual([]);
  });

  test("the bound warning counts the steps the service spends parsing the file, as its evaluation does", () => {
    const rules = Array.from({ length: 40 }, (_, i) => `/**/a/**/b/**/c/**/*.r${i}`).join("\n");
    const tree = Array.from({ length: 3000 }, (_, i) => "a/b/c/".repeat(12) + `f${i}.txt`);
    const stepsIn = (text: string) => Number(/needs (\d+) matching steps/.exec(only(run({ codeowners: text, tree }).findings, "bound_exceeded")[0]!.message)![1]);
    const plain = `* @core\n${rules}\n`;
    const commented = `${plain}# ${"c".repeat(100_000)}\n`; // the same rules and matching, a larger file to parse
    const parsing = (text: string) => {
      const budget = new MatchBudget(Number.POSITIVE_INFINITY);
      parseCodeowners(text, budget);
      return budget.used;
    };
    expect(stepsIn(commented) - stepsIn(plain)).toBe(parsing(commented) - parsing(plain));
    expect(parsing(commented)).toBeGreaterThan(parsing(plain));
  });
});

describe("policy findings", () => {
  test("each policy error is reported as the check output lists it, at the line of its field", () => {
    const policy = 'schema_version = 1\nenabled = true\n[[delegations]]\napp = "Bad App"\npaths = [\n  "docs/**",\n  "!x",\n]\nowners = ["nope"]\n';
    const findings = run({ policy }).findings;
    expect(findings.map((f) => [f.kind, f.line, f.message])).toEqual([
      ["policy_error", 4, "delegations[0].app: Expected string to match '^[a-z0-9][a-z0-9-]{0,99}$'"],
    ]);
    const patterns = run({ policy: policy.replace("Bad App", "bot") }).findings;
    expect(patterns.map((f) => [f.kind, f.line, f.message])).toEqual([
      ["policy_error", 5, "delegations[0].paths[1]: negation ('!') is not supported in CODEOWNERS"],
      ["policy_error", 9, "delegations[0].owners[0]: invalid owner 'nope'"],
    ]);
  });

  test("a TOML syntax error points at the parser's line", () => {
    const findings = run({ policy: "schema_version = 1\nenabled = \n" }).findings;
    expect(findings.map((f) => [f.kind, f.file, f.line, f.message])).toEqual([["policy_error", POLICY, 2, "line 2, column 11: Invalid TOML document: invalid value"]]);
  });

  test("a repository policy that enrolls Apps is its own finding, still carrying the parser's message", () => {
    const findings = run({ policy: `${ENABLED}\n[[trusted_apps]]\nslug = "x"\napp_id = 1\n` }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "repository_enrolls_apps", severity: "error", file: POLICY, line: 4 }]);
    expect(findings[0]!.message).toStartWith("trusted_apps: Unexpected property (a repository policy cannot enroll Apps");
  });

  test("a repository policy naming break_glass is its own error at its line: only the organization policy enables overrides", () => {
    const findings = run({ policy: `${ENABLED}[break_glass]\nteams = ["devs"]\n` }).findings;
    expect(findings.map(brief)).toEqual([{ kind: "repository_enables_break_glass", severity: "error", file: POLICY, line: 3 }]);
    expect(findings[0]!.message).toStartWith("break_glass: only the organization policy can enable break-glass overrides");
  });

  test("an organization policy's [break_glass] is validated and, when valid, noted with its teams and reason length", () => {
    const valid = run({ organization: 'schema_version = 1\n[break_glass]\nteams = ["sre", "incident"]\n' }).findings;
    expect(valid.map(brief)).toEqual([{ kind: "break_glass_enabled", severity: "notice", file: "org.toml", line: 2 }]);
    expect(valid[0]!.message).toContain("at least 20 visible characters");
    expect(valid[0]!.message).toContain("sre, incident");
    const invalid = run({ organization: 'schema_version = 1\n[break_glass]\nteams = ["acme/sre"]\nmin_reason_length = 5\nextra = 1\n' }).findings;
    expect(invalid.map((f) => [f.kind, f.line, f.message.split(":")[0]])).toEqual([
      ["policy_error", 3, "break_glass.teams[0]"],
      ["policy_error", 4, "break_glass.min_reason_length"],
      ["policy_error", 5, "break_glass.extra"],
    ]);
  });

  test("an organization policy is judged by the organization parser", () => {
    const findings = run({ organization: 'schema_version = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 1\n[[trusted_apps]]\nslug = "a"\napp_id = 2\n' }).findings;
    expect(findings.map((f) => [f.kind, f.file, f.line, f.message])).toEqual([["policy_error", "org.toml", 6, "trusted_apps[1].slug: App 'a' is enrolled twice"]]);
  });

  test("a policy over the size bound is a bound finding with the parser's message, read or not", () => {
    const big = ENABLED + "#".repeat(MAX_POLICY_FILE_BYTES);
    for (const findings of [run({ policy: big }).findings, validate({ codeowners: [], codeownersLocations: LOCATIONS, forgeDirectory: ".forge", repositoryPolicy: { path: POLICY, bytes: 70_000 }, organizationPolicy: null, policyPath: POLICY, tree: null }).findings.filter((f) => f.file === POLICY)]) {
      expect(findings.map(brief)).toEqual([{ kind: "bound_exceeded", severity: "error", file: POLICY, line: null }]);
      expect(findings[0]!.message).toMatch(new RegExp(`^file: policy file is \\d+ bytes; the limit is ${MAX_POLICY_FILE_BYTES}$`));
    }
  });

  test("no policy, or one that does not enable the service, is a notice", () => {
    expect(run({ policy: null }).findings.map(brief)).toEqual([{ kind: "policy_not_enabled", severity: "notice", file: null, line: null }]);
    expect(run({ policy: "schema_version = 1\nenabled = false\n" }).findings.map(brief)).toEqual([{ kind: "policy_not_enabled", severity: "notice", file: POLICY, line: null }]);
    expect(run({ policy: "schema_version = 1\n" }).findings[0]!.message).toContain("does not say enabled = true");
  });

  test("a delegation to an App the organization does not enroll is an error when the organization policy is given", () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["docs/**"]\n[[delegations]]\napp = "other-bot"\npaths = ["src/**"]\n`;
    const findings = run({ policy, organization: ORGANIZATION }).findings;
    expect(findings.map((f) => [f.kind, f.line, f.message])).toEqual([["delegation_app_not_enrolled", 7, "delegations[1].app: App other-bot is not enrolled in the organization policy's trusted_apps"]]);
  });

  test("without the organization policy, delegations whose Apps were not checked are a notice naming --organization-policy", () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["docs/**"]\n[[delegations]]\napp = "other-bot"\npaths = ["src/**"]\n[[delegations]]\napp = "docs-bot"\npaths = ["guides/**"]\n`;
    const report = run({ policy });
    expect(report.findings.map(brief)).toEqual([{ kind: "delegation_apps_unchecked", severity: "notice", file: POLICY, line: 4 }]);
    expect(report.findings[0]!.message).toBe(
      "delegations name the Apps docs-bot, other-bot, whose enrollment was not checked: give the organization policy with --organization-policy FILE (an App it does not enroll fails the check on every pull request)",
    );
    expect(report.summary).toMatchObject({ errors: 0, warnings: 0, notices: 1 });
    // With the organization policy the enrollment is checked instead: no notice.
    expect(only(run({ policy, organization: ORGANIZATION }).findings, "delegation_apps_unchecked")).toEqual([]);
    // No delegation, nothing to check.
    expect(only(run({ policy: ENABLED }).findings, "delegation_apps_unchecked")).toEqual([]);
    // An organization policy that was given but is invalid has its own errors; the notice would send the reader for a flag already given.
    expect(run({ policy, organization: "schema_version = 2\n" }).findings.map((f) => f.kind)).toEqual(["policy_error"]);
    // Matching past the validator's bound drops the delegation step's findings, never the notice.
    expect(only(run({ policy, matchSteps: 1 }).findings, "delegation_apps_unchecked")).toHaveLength(1);
  });

  test("a delegation pattern covering non-delegable paths is a warning naming them: built-in, guardrail and enrolled App files", () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["docs/**", "**/*.toml", "deploy/**"]\n`;
    const tree = ["docs/a.md", "CODEOWNERS", POLICY, "docs-bot.toml", "deploy/run.sh", ".forge/workflows/ci.yml"];
    const findings = run({ policy, organization: ORGANIZATION, tree }).findings.filter((f) => f.kind === "delegation_non_delegable");
    expect(findings.map((f) => [f.line, f.message])).toEqual([
      [5, `delegations[0].paths[1] '**/*.toml' covers non-delegable paths, where an approval by docs-bot never counts: ${POLICY}, docs-bot.toml`],
      [5, "delegations[0].paths[2] 'deploy/**' covers non-delegable paths, where an approval by docs-bot never counts: deploy/run.sh"],
    ]);
  });

  test("the forge directory's workflows and actions are non-delegable: .github's under .github, not under .forge", () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["/.github/**"]\n`;
    const tree = [".github/workflows/ci.yml", ".github/actions/setup/action.yml", ".github/dependabot.yml"];
    const under = (forgeDirectory: string) => run({ policy, organization: ORGANIZATION, tree, forgeDirectory }).findings.filter((f) => f.kind === "delegation_non_delegable").map((f) => f.message);
    expect(under(".github")).toEqual(["delegations[0].paths[0] '/.github/**' covers non-delegable paths, where an approval by docs-bot never counts: .github/workflows/ci.yml, .github/actions/setup/action.yml"]);
    expect(under(".forge")).toEqual([]);
  });

  test("without a tree a delegation of everything is still seen covering the code-owners file and the policy", () => {
    const policy = `${ENABLED}[[delegations]]\napp = "docs-bot"\npaths = ["**"]\n`;
    const findings = run({ policy }).findings.filter((f) => f.kind !== "delegation_apps_unchecked");
    expect(findings.map((f) => [f.kind, f.message])).toEqual([["delegation_non_delegable", `delegations[0].paths[0] '**' covers non-delegable paths, where an approval by docs-bot never counts: CODEOWNERS, ${POLICY}`]]);
  });
});

describe("report", () => {
  test("findings are ordered by file, then line, whole-file findings first, and the summary counts severities", () => {
    const report = run({ codeowners: "!a @x\n/src/ @b\n!c\n", policy: "schema_version = 1\n", tree: ["src/x", "y"] });
    expect(report.findings.map((f) => [f.file, f.line])).toEqual([[POLICY, null], ["CODEOWNERS", null], ["CODEOWNERS", 1], ["CODEOWNERS", 3]]);
    expect(report.summary).toMatchObject({ errors: 2, warnings: 1, notices: 1 });
  });
});
