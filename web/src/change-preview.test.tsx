import { describe, expect, test } from "bun:test";
import { renderToStaticMarkup } from "react-dom/server";
import { MAX_PREVIEW_CHANGES } from "../../server/evaluation/index.ts";
import { MAX_CODEOWNERS_BYTES } from "../../server/policy/bounds.ts";
import { explain } from "./engine.ts";
import { ChangePreviewView, ExplanationView } from "./explanation.tsx";
import { largeState } from "./large-state.ts";
import { Markdown } from "./markdown.tsx";
import { EVIDENCE_DOCUMENT_FORMAT, readStateText } from "./read-state.ts";
import { BASE_CODEOWNERS, SCENARIOS } from "./scenarios.ts";
import { withChangePreview, withEvidence, withHeadCodeownersAt, type PlaygroundState } from "./state.ts";

const scenario = (id: string) => SCENARIOS.find((s) => s.id === id)!.build();
const withHead = (state: PlaygroundState, text: string) => withEvidence(state, (e) => withHeadCodeownersAt(withChangePreview(e), "CODEOWNERS", text, ".forge"));
/** The page's text without tags, as a reader (and Playwright's toContainText) sees it. */
const text = (html: string) => html.replace(/<[^>]+>/g, "").replace(/&#x27;/g, "'").replace(/&gt;/g, ">");
const page = (state: PlaygroundState) => text(renderToStaticMarkup(<ExplanationView explanation={explain(state, "")} onLine={() => {}} onPreviewLine={() => {}} />));

describe("the change preview beside the decision", () => {
  test("without a second CODEOWNERS there is no preview", () => {
    const state = scenario("two-owner-sets");
    expect(explain(state, "").preview).toBeNull();
    expect(page(state)).not.toContain("After this pull request");
  });

  test("moving a changed file's ownership in the second CODEOWNERS shows path: before → after, and the decision stays the base's", () => {
    const state = scenario("two-owner-sets");
    const edited = withHead(state, BASE_CODEOWNERS.replace("/docs/                 @acme/docs", "/docs/ @olga"));
    const before = explain(state, "");
    const after = explain(edited, "");
    expect(after.decision).toEqual(before.decision);
    expect(after.check.title).toBe(before.check.title);
    expect(after.check.text).toBe(before.check.text);
    expect(after.preview).toMatchObject({ kind: "preview", invalid: [], ownershipChanges: [{ path: "docs/guide.md", before: { owners: ["@acme/docs"] }, after: { owners: ["@olga"] } }], ownershipChangesOmitted: 0 });
    expect(page(edited)).toContain("docs/guide.md: @acme/docs (or App docs-review-bot) → @olga (or App docs-review-bot)");
  });

  test("the check run shown in the page gains the preview section after the decision's own summary, as the forge's does", () => {
    const state = scenario("two-owner-sets");
    const before = explain(state, "").check.summary;
    const after = explain(withHead(state, BASE_CODEOWNERS.replace("/docs/                 @acme/docs", "/docs/ @olga")), "").check.summary;
    expect(before).not.toContain("### Preview");
    expect(after.startsWith(`${before}\n\n### Preview`)).toBe(true);
    expect(after).toContain("<code>docs/guide\\.md</code>: <code>\\@acme/docs</code>");
  });

  test("the preview section of the check run renders without stray backslashes", () => {
    const state = withHead(scenario("two-owner-sets"), `${BASE_CODEOWNERS.replace("/docs/                 @acme/docs", "/docs/ @olga")}/broken/ not-an-owner\n`);
    const html = renderToStaticMarkup(<Markdown source={explain(state, "").check.summary} />);
    expect(html).toContain("<h4>Preview: this pull request&#x27;s policy change</h4>");
    expect(html).toContain("<code>docs/guide.md</code>: <code>@acme/docs</code>");
    expect(text(html)).toContain("CODEOWNERS line 15: invalid owner 'not-an-owner'");
    expect(html).not.toMatch(/\\[!-/:-@[-`{-~]/);
  });

  test("an evidence document whose pull request changes CODEOWNERS opens with the second file and its preview", () => {
    const state = withHead(scenario("owner-approves-head"), "* @bob\n");
    const read = readStateText(JSON.stringify({ format: EVIDENCE_DOCUMENT_FORMAT, version: 1, evidence: state.evidence, settings: state.settings }));
    if (!read.ok) throw new Error(read.error);
    expect(read.state.evidence.headFiles).toEqual(state.evidence.headFiles);
    expect(explain(read.state, "").preview).toMatchObject({ kind: "preview", ownershipChanges: [{ path: "src/app.ts", before: { owners: ["@alice", "@bob"] }, after: { owners: ["@bob"] } }] });
  });

  test("an unchanged second CODEOWNERS says nothing would change", () => {
    const state = withHead(scenario("two-owner-sets"), BASE_CODEOWNERS);
    expect(page(state)).toContain("The new file is valid and no changed file's owners would change.");
  });

  test("an invalid line of the second CODEOWNERS is reported with its line number, and the base decision still succeeds", () => {
    const state = withHead(scenario("owner-approves-head"), `${BASE_CODEOWNERS}/broken/ not-an-owner\n`);
    const result = explain(state, "");
    expect(result.decision.conclusion).toBe("success");
    expect(result.codeowners.errorCount).toBe(0);
    expect(result.preview).toMatchObject({ kind: "preview", invalid: [{ file: "CODEOWNERS", line: 15, message: "invalid owner 'not-an-owner'" }], invalidOmitted: 0 });
    expect(page(state)).toContain("CODEOWNERS line 15: invalid owner 'not-an-owner'");
  });

  test("the list of changed owners is bounded, with an 'and N more' line", () => {
    const state = withHead(largeState(2_000, 500), "* @zed\n");
    const preview = explain(state, "").preview;
    if (preview?.kind !== "preview") throw new Error("no preview");
    expect(preview.ownershipChanges).toHaveLength(MAX_PREVIEW_CHANGES);
    expect(preview.ownershipChangesOmitted).toBe(500 - MAX_PREVIEW_CHANGES);
    const html = renderToStaticMarkup(<ChangePreviewView preview={preview} onLine={() => {}} />);
    expect(html.match(/<li>/g)).toHaveLength(MAX_PREVIEW_CHANGES);
    expect(text(html)).toContain(`Changed files whose owners would change (500)`);
    expect(text(html)).toContain(`and ${500 - MAX_PREVIEW_CHANGES} more`);
  });

  test("a second CODEOWNERS past the size limit is reported as the decision would, not parsed", () => {
    const state = withHead(scenario("owner-approves-head"), `* @a\n${"#".repeat(MAX_CODEOWNERS_BYTES)}\n`);
    const result = explain(state, "");
    expect(result.decision.conclusion).toBe("success");
    expect(result.preview).toMatchObject({ kind: "preview", ownershipChanges: [] });
    expect(page(state)).toContain(`must be under ${MAX_CODEOWNERS_BYTES} bytes`);
  });
});
