// The change preview in the check output (issue 19 item 2): after the decision, never changing it, bounded and escaped.
import { describe, expect, test } from "bun:test";
import { MAX_CHECK_OUTPUT_CHARS } from "../policy/bounds.ts";
import type { PreviewResult } from "./change-preview.ts";
import { decideCheck } from "./decide-check.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type HeadFiles } from "./evidence.ts";
import { approve, BASE_CODEOWNERS, baseEvidence, found, USERS, withCodeowners, withFiles, withReviews } from "./evidence-fixture.ts";
import { PREVIEW_HEADING, renderCheck } from "./render-check.ts";

const settings = DEFAULT_EVALUATION_SETTINGS;

/** The base fixture with a pull request that changes CODEOWNERS to `headText` (and `files`). */
function editingCodeowners(headText: string, files: readonly string[] = ["CODEOWNERS", "src/app.ts"], evidence: Evidence = baseEvidence()): Evidence {
  const changed = withFiles(evidence, files);
  const headFiles: HeadFiles = { codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", headText) }, repositoryPolicy: changed.repositoryPolicy };
  return { ...changed, headFiles };
}
const withoutHead = ({ headFiles: _, ...evidence }: Evidence): Evidence => evidence;

describe("change preview in the check output", () => {
  test("the decision and its output are the same with and without the preview, which follows the decision's summary", () => {
    for (const evidence of [editingCodeowners("* @bob\n!bad\n"), withReviews(editingCodeowners("* @bob\n"), approve(USERS.alice), approve(USERS.bob))]) {
      const withPreview = decideCheck(evidence, settings);
      const plain = decideCheck(withoutHead(evidence), settings);
      expect(withPreview.decision).toEqual(plain.decision);
      expect(withPreview.decision).toEqual(evaluate(withoutHead(evidence), settings));
      expect(withPreview.output.title).toBe(plain.output.title);
      expect(withPreview.output.text).toBe(plain.output.text);
      expect(withPreview.output.summary.startsWith(`${plain.output.summary}\n\n${PREVIEW_HEADING}`)).toBe(true);
      expect(plain.output.summary).not.toContain(PREVIEW_HEADING);
    }
    expect(decideCheck(withReviews(editingCodeowners("* @bob\n"), approve(USERS.alice), approve(USERS.bob)), settings).decision.conclusion).toBe("success");
  });

  test("the section lists the head's invalid lines and each changed file whose owners would change", () => {
    const { output } = decideCheck(editingCodeowners("* @acme/core\n/src/ @bob\n/x not-an-owner\n"), settings);
    const section = output.summary.slice(output.summary.indexOf(PREVIEW_HEADING));
    expect(section).toContain("<code>CODEOWNERS</code> line <code>3</code>: <code>invalid owner &#39;not\\-an\\-owner&#39;</code>");
    expect(section).toContain("- <code>src/app\\.ts</code>: <code>\\@alice</code> → <code>\\@bob</code>");
    expect(section).not.toContain("<code>CODEOWNERS</code>: ");
  });

  test("a head read that failed leaves a short note and the same decision", () => {
    const evidence: Evidence = { ...editingCodeowners("* @bob\n"), headFiles: { codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: { kind: "incomplete", cause: "transient", detail: "GET /repos/{owner}/{repo}/contents/{path}: 502" } }, repositoryPolicy: baseEvidence().repositoryPolicy } };
    const withNote = decideCheck(evidence, settings);
    expect(withNote.decision).toEqual(evaluate(withoutHead(evidence), settings));
    expect(withNote.output.summary).toContain("The preview is left out");
    expect(withNote.output.summary).not.toContain("would change");
  });

  test("hostile paths and file contents are escaped in the section", () => {
    const evil = "src/<img src=x onerror=alert(1)>[x](http://e)\u202E.ts";
    const { output } = decideCheck(editingCodeowners(`* @bob\n/y @ok\u202E<b>\n`, ["CODEOWNERS", evil]), settings);
    const section = output.summary.slice(output.summary.indexOf(PREVIEW_HEADING));
    expect(section).toContain("&lt;img src=x onerror=alert\\(1\\)&gt;\\[x\\]\\(http\\://e\\)\\\\u\\{202E\\}\\.ts");
    expect(section).not.toContain("<img");
    expect(section).not.toContain("<b>");
    expect(section).not.toContain("\u202E");
  });

  test("a large preview stays within the forge's limit and leaves the decision's summary whole", () => {
    const long = "x".repeat(100_000);
    const files = Array.from({ length: 2_000 }, (_, i) => `src/${long.slice(0, 150)}/${i}.ts`);
    const invalid = Array.from({ length: 500 }, (_, i) => `/${long.slice(0, 1000)}${i} not-an-owner-${long.slice(0, 2000)}`).join("\n");
    // Owners as long as a login may be (39 characters): a longer one would make the line invalid.
    const evidence = editingCodeowners(`* ${Array.from({ length: 50 }, (_, i) => `@owner-${i}-${long.slice(0, 29)}`.slice(0, 40)).join(" ")}\n${invalid}\n`, files, withCodeowners(baseEvidence(), BASE_CODEOWNERS));
    const plain = decideCheck(withoutHead(evidence), settings);
    const { output } = decideCheck(evidence, settings);
    for (const field of [output.title, output.summary, output.text]) expect(field.length).toBeLessThanOrEqual(MAX_CHECK_OUTPUT_CHARS);
    expect(output.summary.startsWith(plain.output.summary)).toBe(true);
    expect(output.summary).toContain("and 450 more");
    expect(output.summary).toContain("Changed files whose owners would change \\(2000\\)");
    expect(output.summary).toContain("Output truncated");
  });

  test("a decision that is not conclusive gets no section", () => {
    const preview: PreviewResult = { kind: "unavailable", why: ["x"] };
    const notEnabled = evaluate({ ...baseEvidence(), repositoryPolicy: { kind: "missing" } }, settings);
    expect(renderCheck(notEnabled, preview).summary).not.toContain(PREVIEW_HEADING);
  });
});

/** A preview with `changes` changed paths whose owners before and after are `owners` (built directly: the rendering alone). */
function previewOf(changes: number, before: readonly string[], after: readonly string[]): PreviewResult {
  return {
    kind: "preview",
    codeownersPath: { before: "CODEOWNERS", after: "CODEOWNERS" },
    invalid: [],
    invalidOmitted: 0,
    problems: [],
    requiredApprovals: null,
    ownershipChanges: Array.from({ length: changes }, (_, i) => ({ path: `src/f${i}.ts`, before: { owners: before, apps: [] }, after: { owners: after, apps: [] } })),
    ownershipChangesOmitted: 0,
    notes: [],
  };
}
const sectionOf = (summary: string) => summary.slice(summary.indexOf(PREVIEW_HEADING));

describe("preview text stays data", () => {
  /** The section with every code span removed: what the forge's mention and reference filters would read. */
  const prose = (summary: string) => sectionOf(summary).split("\n").slice(1).join("\n").replace(/<code>.*?<\/code>/g, "");

  test("a CODEOWNERS token quoted by a parser message reaches the output only inside a code span", () => {
    const { output } = decideCheck(editingCodeowners("* @bob\n/x @acme/security-team,please-review\n/y #12 @bob\n"), settings);
    expect(sectionOf(output.summary)).toContain("security\\-team,please\\-review");
    expect(prose(output.summary)).not.toMatch(/@|#\d/);
  });

  test("TOML key text of a repository policy error reaches the output only inside a code span", () => {
    const evidence = editingCodeowners("* @bob\n", [".forge/service-policy.toml", "src/app.ts"]);
    const policy = found(".forge/service-policy.toml", `schema_version = 1\nenabled = true\n"@acme/security-team" = 1\n[x]\n"#7" = 2\n`);
    const { output } = decideCheck({ ...evidence, headFiles: { ...evidence.headFiles!, repositoryPolicy: policy } }, settings);
    expect(sectionOf(output.summary)).toContain("security\\-team");
    expect(prose(output.summary)).not.toMatch(/@|#\d/);
  });
});

describe("change preview rendering bounds", () => {
  const decision = () => evaluate(withFiles(baseEvidence(), ["CODEOWNERS", "src/app.ts"]), settings);

  test("owners in the preview are shortened as paths are, so every changed path is still listed", () => {
    const huge = `@${"a-".repeat(500_000)}z`;
    const { summary } = renderCheck(decision(), previewOf(100, ["@alice"], [huge]));
    const section = sectionOf(summary);
    for (let i = 0; i < 100; i++) expect(section).toContain(`- <code>src/f${i}\\.ts</code>: <code>\\@alice</code> → <code>\\@a\\-`);
    expect(section).not.toContain("Output truncated");
    const longest = Math.max(...section.split("\n").map((line) => line.length));
    expect(longest).toBeLessThan(2_000);
  });

  test("a preview with more owners than the output can hold is cut by lines, never after joining it all", () => {
    const owners = Array.from({ length: 10 }, (_, i) => `@owner-${i}-${"x".repeat(30)}`);
    const { summary } = renderCheck(decision(), previewOf(5_000, owners, ["@bob"]));
    expect(summary.length).toBeLessThanOrEqual(MAX_CHECK_OUTPUT_CHARS);
    expect(summary).toContain("Output truncated");
    expect(summary.endsWith("\n")).toBe(true);
    expect(sectionOf(summary)).toContain("<code>src/f0\\.ts</code>");
  });

  test("an owner set with thousands of owners lists some in the decision's text and counts the rest", () => {
    const owners = Array.from({ length: 5_000 }, (_, i) => `@o${i}`);
    const output = renderCheck(evaluate(withCodeowners(baseEvidence(), `* ${owners.join(" ")}\n`), settings));
    expect(output.text).toContain("### Owner set 1");
    expect(output.text).toMatch(/Owners\\: (<code>\\@o\d+<\/code> ){1,50}and \d+ more/);
    expect(output.text.length).toBeLessThanOrEqual(MAX_CHECK_OUTPUT_CHARS);
  });
});
