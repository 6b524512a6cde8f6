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
    expect(section).toContain("<code>CODEOWNERS</code> line <code>3</code>: invalid owner 'not\\-an\\-owner'".replace(/'/g, "\\'"));
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
    const evidence = editingCodeowners(`* ${Array.from({ length: 50 }, (_, i) => `@owner-${i}-${long.slice(0, 80)}`).join(" ")}\n${invalid}\n`, files, withCodeowners(baseEvidence(), BASE_CODEOWNERS));
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
