import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { MAX_CHECK_OUTPUT_CHARS, MAX_RENDERED_PATH_CHARS, MAX_RENDERED_PATHS_PER_SET } from "../policy/bounds.ts";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS } from "./evidence.ts";
import { approve, baseEvidence, HEAD, OLD_HEAD, review, USERS, withCodeowners, withFiles, withReviews } from "./evidence-fixture.ts";
import { code, escapeHtml, escapeMarkdown, visible } from "./escape.ts";
import { fitOutput, renderCheck, shortenPath } from "./render-check.ts";
import { MatchBudget } from "../policy/match-budget.ts";

/** The classes issue 16 names: every code point in them must come out escaped. */
const INVISIBLE_CLASSES = /^[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]$/u;
/** Those, lone surrogates, and what Unicode calls ignorable (rendered as nothing), such as the Hangul fillers. */
const INVISIBLE_ANYWHERE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/u;

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
  test("with paths near the output limit, every owner set's header still shows and each path keeps its head and tail", () => {
    const sets = 30;
    const rules = Array.from({ length: sets }, (_, i) => `/d${i}/ @owner-${i}`).join("\n");
    const paths = Array.from({ length: sets }, (_, i) => Array.from({ length: 21 }, (_, j) => `d${i}/${"x".repeat(MAX_CHECK_OUTPUT_CHARS - 100)}/end-${j}.ts`)).flat();
    const output = render(withFiles(withCodeowners(baseEvidence(), rules), paths));
    expect(output.text.length).toBeLessThanOrEqual(MAX_CHECK_OUTPUT_CHARS);
    for (let i = 0; i < sets; i++) {
      expect(output.text).toContain(`### Owner set ${i + 1}\\: needs approval \\(0 of 1 approvals\\)\n\nOwners\\: <code>`);
      expect(output.text).toContain(`Owners\\: <code>\\@owner\\-${i}</code>\n`);
    }
    expect(output.text).not.toContain("more owner sets not shown");
    expect(output.text).toMatch(/<code>d0\/x+…x+\/end\\-0\\\.ts<\/code>/);
  });
  test("a shortened path never splits a character outside the Basic Multilingual Plane", () => {
    const shortened = shortenPath(`${"😀".repeat(MAX_RENDERED_PATH_CHARS)}/tail`);
    expect(Array.from(shortened).length).toBe(MAX_RENDERED_PATH_CHARS);
    expect(shortened).not.toMatch(/\p{Cs}/u);
    expect(shortened.endsWith("😀/tail")).toBe(true);
    expect(shortenPath("src/short.ts")).toBe("src/short.ts");
  });
  test("code-like values are HTML-escaped and control characters are visible", () => {
    const evil = "src/<img src=x onerror=alert(1)>\u202Egnp.exe\u0007";
    const output = render(withFiles(baseEvidence(), [evil]));
    expect(output.text).toContain("<code>src/&lt;img src=x onerror=alert\\(1\\)&gt;\\\\u\\{202E\\}gnp\\.exe\\\\u\\{0007\\}</code>");
    expect(output.text).not.toContain("<img");
    expect(output.text).not.toContain("\u202E");
  });
  test("an evaluation over its matching budget names the bound in the title and the summary", () => {
    const evidence = withCodeowners(withFiles(baseEvidence(), ["src/a/b/c.ts"]), "/**/src/**/*.ts @alice\n");
    const output = renderCheck(evaluate(evidence, DEFAULT_EVALUATION_SETTINGS, new MatchBudget(3)));
    expect(output.title).toBe("Path matching exceeded its work bound");
    expect(output.summary).toContain("needs more than <code>3</code> steps");
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
  test.each([
    ["U+061C arabic letter mark", 0x061c],
    ["U+00AD soft hyphen", 0x00ad],
    ["U+180E mongolian vowel separator", 0x180e],
    ["U+2060 word joiner", 0x2060],
    ["U+2061 function application", 0x2061],
    ["U+2062 invisible times", 0x2062],
    ["U+2063 invisible separator", 0x2063],
    ["U+2064 invisible plus", 0x2064],
    ["U+2028 line separator", 0x2028],
    ["U+2029 paragraph separator", 0x2029],
    ["U+3164 hangul filler", 0x3164],
    ["U+115F hangul choseong filler", 0x115f],
    ["U+1160 hangul jungseong filler", 0x1160],
    ["U+FFA0 halfwidth hangul filler", 0xffa0],
    ["U+FFF9 interlinear annotation anchor", 0xfff9],
    ["U+FFFA interlinear annotation separator", 0xfffa],
    ["U+FFFB interlinear annotation terminator", 0xfffb],
    ["U+E0001 language tag", 0xe0001],
    ["U+E0041 tag latin capital A", 0xe0041],
    ["U+E007F cancel tag", 0xe007f],
  ])("the invisible character %s is rendered as its code point", (_, codePoint) => {
    const shown = `\\u{${codePoint.toString(16).toUpperCase().padStart(4, "0")}}`;
    expect(visible(`a${String.fromCodePoint(codePoint)}b`)).toBe(`a${shown}b`);
  });
  test("every code point of the Cc, Cf, Zl and Zp classes is rendered as its code point", () => {
    let checked = 0;
    for (let codePoint = 0; codePoint <= 0x10ffff; codePoint++) {
      const character = String.fromCodePoint(codePoint);
      if (!INVISIBLE_CLASSES.test(character)) continue;
      expect(visible(character)).toBe(`\\u{${codePoint.toString(16).toUpperCase().padStart(4, "0")}}`);
      checked++;
    }
    expect(checked).toBeGreaterThan(200);
  });
  test("no text keeps a control, format or separator character, and text without one is unchanged", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 40 }), (text) => {
        const shown = visible(text);
        expect(INVISIBLE_ANYWHERE.test(shown)).toBe(false);
        if (!INVISIBLE_ANYWHERE.test(text)) expect(shown).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });
  test("a character outside the Basic Multilingual Plane is one code point, shown or escaped whole", () => {
    expect(visible("x😀y")).toBe("x😀y");
    expect(visible("\u{E0067}\u{E0062}")).toBe("\\u{E0067}\\u{E0062}");
    expect(visible("a\uD800b")).toBe("a\\u{D800}b");
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
