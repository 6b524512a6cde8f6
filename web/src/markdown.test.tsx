import { expect, test } from "bun:test";
import { renderToStaticMarkup } from "react-dom/server";
import { evaluate, renderCheck } from "../../server/evaluation/index.ts";
import { Markdown } from "./markdown.tsx";
import { SCENARIOS } from "./scenarios.ts";

test("check output renders with escapes removed, code as code, and no markup from the evidence", () => {
  const html = renderToStaticMarkup(<Markdown source={"### Owner set 1\n\nOwners: <code>\\@acme/core</code> and <code>&lt;img src=x&gt;</code>\n- <code>docs\\-review\\-bot\\[bot\\]</code>: not \\*bold\\*\n  - nested\n\n**Blocking reasons**"} />);
  expect(html).toContain("<h4>Owner set 1</h4>");
  expect(html).toContain("<code>@acme/core</code>");
  expect(html).toContain("<code>&lt;img src=x&gt;</code>");
  expect(html).toContain("<li><code>docs-review-bot[bot]</code>: not *bold*<ul><li>nested</li></ul></li>");
  expect(html).toContain("<strong>Blocking reasons</strong>");
  expect(html).not.toContain("<img");
});

test("every scenario's check output renders without stray backslashes", () => {
  for (const scenario of SCENARIOS) {
    const state = scenario.build();
    const check = renderCheck(evaluate(state.evidence, state.settings));
    const html = renderToStaticMarkup(<><Markdown source={check.summary} /><Markdown source={check.text} /></>);
    expect(html, scenario.id).not.toMatch(/\\[!-/:-@[-`{-~]/);
  }
});

test("a quoted line (a break-glass reason) renders as a blockquote with its escapes removed and no markup", () => {
  const html = renderToStaticMarkup(<Markdown source={"Reason\\:\n\n> \\@everyone \\<img src=x\\> \\[x\\]\\(y\\)"} />);
  expect(html).toContain("<blockquote>@everyone &lt;img src=x&gt; [x](y)</blockquote>");
  expect(html).not.toContain("<img");
});
