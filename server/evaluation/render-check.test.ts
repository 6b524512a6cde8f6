import { describe, expect, test } from "bun:test";
import { MAX_CHECK_OUTPUT_CHARS, MAX_RENDERED_PATHS_PER_SET } from "../policy/bounds.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS } from "./evidence.ts";
import { approve, baseEvidence, HEAD, OLD_HEAD, review, USERS, withCodeowners, withFiles, withReviews } from "./evidence-fixture.ts";
import { code, escapeHtml, escapeMarkdown, visible } from "./escape.ts";
import { fitOutput, renderCheck } from "./render-check.ts";

const render = (evidence = baseEvidence()) => renderCheck(evaluate(evidence, DEFAULT_EVALUATION_SETTINGS));

describe("check output", () => {
  test("a failing check names every owner set with its owners, paths and suggested reviewers", () => {
    const output = render(withFiles(baseEvidence(), ["src/app.ts", "docs/a.md"]));
    expect(output.title).toBe("2 of 2 owner sets not yet approved");
    expect(output.text).toContain("<code>\\@alice</code>");
    expect(output.text).toContain("<code>\\@acme/docs</code>");
    expect(output.text).toContain("<code>src/app\\.ts</code>");
    expect(output.summary).toContain("Suggested reviewers");
  });
  test("a success says every set is approved and who counted", () => {
    const output = render(withReviews(baseEvidence(), approve(USERS.alice)));
    expect(output.title).toBe("All 1 owner set approved");
    expect(output.text).toContain("<code>alice</code> as <code>\\@alice</code>");
  });
  test("the output says why other reviews did not count", () => {
    const output = render(withReviews(baseEvidence(), approve(USERS.alice, OLD_HEAD)));
    expect(output.text).toContain("Reviews that did not count");
    expect(output.text).toContain(`<code>${OLD_HEAD.slice(0, 7)}</code>`);
    expect(output.text).toContain(`<code>${HEAD.slice(0, 7)}</code>`);
  });
  test("a dismissed review is listed as not counting", () => {
    const output = render(withReviews(baseEvidence(), approve(USERS.alice), review(USERS.alice, "DISMISSED")));
    expect(output.text).toContain("<code>alice</code>: the latest review was dismissed");
  });
  test("invalid CODEOWNERS lines are named in the summary", () => {
    const output = render(withCodeowners(baseEvidence(), "* @alice\n!x @bob\n"));
    expect(output.title).toBe("CODEOWNERS has invalid lines");
    expect(output.summary).toContain("line <code>2</code>");
    expect(output.summary).toContain("has <code>1</code> invalid line");
  });
  test("a shared head is named in the title", () => {
    const evidence = { ...baseEvidence(), sameHeadPullRequests: { complete: true as const, items: [{ number: 9, headSha: HEAD }] } };
    expect(render(evidence).title).toBe("Head commit is shared with #9");
  });
  test("paths listed per owner set are bounded", () => {
    const paths = Array.from({ length: 50 }, (_, i) => `src/f${i}.ts`);
    const output = render(withFiles(baseEvidence(), paths));
    expect(output.text.match(/<code>src\/f\d+\\\.ts<\/code>/g)!.length).toBe(MAX_RENDERED_PATHS_PER_SET);
    expect(output.text).toContain("and 30 more");
  });
  test("every field stays within the forge's check-output limit", () => {
    const rules = Array.from({ length: 2999 }, (_, i) => `/d${i}/ @owner-with-a-rather-long-name-${i}`).join("\n");
    const paths = Array.from({ length: 2999 }, (_, i) => `d${i}/${"x".repeat(200)}.ts`);
    const output = render(withFiles(withCodeowners(baseEvidence(), rules), paths));
    for (const field of [output.title, output.summary, output.text]) expect(field.length).toBeLessThanOrEqual(MAX_CHECK_OUTPUT_CHARS);
    expect(output.text).toContain("more owner sets not shown");
  });
  test("code-like values are HTML-escaped and control characters are visible", () => {
    const evil = "src/<img src=x onerror=alert(1)>\u202Egnp.exe\u0007";
    const output = render(withFiles(baseEvidence(), [evil]));
    expect(output.text).toContain("<code>src/&lt;img src=x onerror=alert\\(1\\)&gt;\\\\u\\{202E\\}gnp\\.exe\\\\u\\{0007\\}</code>");
    expect(output.text).not.toContain("<img");
    expect(output.text).not.toContain("\u202E");
  });
  test("a not-enabled decision renders without owner sets", () => {
    const output = render({ ...baseEvidence(), repositoryPolicy: { kind: "missing" } });
    expect(output.title).toBe("Not enabled for this repository");
    expect(output.text).toBe("");
  });
});

describe("escaping", () => {
  test("code-like values cannot become links, mentions or emphasis", () => {
    expect(code("app/[x](https://evil)/@me_*b*")).toBe(String.raw`<code>app/\[x\]\(https\://evil\)/\@me\_\*b\*</code>`);
  });
  test("Markdown prose is escaped", () => {
    expect(escapeMarkdown("*bold* [link](x) @mention #1 <b>")).toBe("\\*bold\\* \\[link\\]\\(x\\) \\@mention \\#1 \\<b\\>");
  });
  test("HTML-escaping covers the five special characters", () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  });
  test.each([
    ["\u0000", "\\u{0000}"],
    ["\u001F", "\\u{001F}"],
    ["\u007F", "\\u{007F}"],
    ["\u0085", "\\u{0085}"],
    ["\u009F", "\\u{009F}"],
    ["\u200B", "\\u{200B}"],
    ["\u200F", "\\u{200F}"],
    ["\u202A", "\\u{202A}"],
    ["\u202E", "\\u{202E}"],
    ["\u2066", "\\u{2066}"],
    ["\u2069", "\\u{2069}"],
    ["\uFEFF", "\\u{FEFF}"],
  ])("the invisible character %j is rendered as %s", (input, shown) => {
    expect(visible(`a${input}b`)).toBe(`a${shown}b`);
  });
  test("ordinary non-ASCII text stays as it is", () => {
    expect(visible("naïve 日本語 \u2010 \u2070")).toBe("naïve 日本語 \u2010 \u2070");
  });
  test("fitting cuts at a line boundary and says so", () => {
    const long = Array.from({ length: 10_000 }, (_, i) => `line ${i}`).join("\n");
    const fitted = fitOutput(long, 1_000);
    expect(fitted.length).toBeLessThanOrEqual(1_000);
    expect(fitted).toContain("truncated");
  });
});
