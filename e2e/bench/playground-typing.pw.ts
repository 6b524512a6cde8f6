import { expect, test } from "@playwright/test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { encodeState } from "../../web/src/codec.ts";
import { largeState } from "../../web/src/large-state.ts";
import { summarize, typeAndTime } from "../support/keystroke-timing.ts";

/**
 * Run by e2e/bench/playground-typing-bench.ts (not a test: it asserts nothing about time). Each case opens the playground with
 * a generated CODEOWNERS and pull request, types a rule, and writes the keystroke timings to TYPING_BENCH_OUT/<case>.json.
 */
const out = process.env.TYPING_BENCH_OUT!;
const ROUNDS = 3;
const CASES = [
  { name: "baseline_10_rules_10_files", rules: 10, files: 10 },
  { name: "rules_10000_files_2999", rules: 10_000, files: 2_999 },
  { name: "rules_10000_files_3000", rules: 10_000, files: 3_000 },
];

for (const c of CASES) test(c.name, async ({ page }) => {
  test.setTimeout(180_000);
  const samples: number[] = [];
  const longTasks: number[] = [];
  // Every round in a fresh page; the first keystrokes of each round are the page's warm-up and count like the others.
  for (let round = 0; round < ROUNDS; round++) {
    await page.goto("about:blank"); // the same address again would only be a same-document hash navigation
    await page.goto(`/playground/#${await encodeState(largeState(c.rules, c.files))}`);
    await expect(page.getByTestId("rule-count")).toContainText(`${c.rules} rules`);
    const timed = await typeAndTime(page, "/typed/ @bob");
    samples.push(...timed.samples);
    longTasks.push(...timed.longTasks);
  }
  writeFileSync(join(out, `${c.name}.json`), JSON.stringify({ rules: c.rules, files: c.files, rounds: ROUNDS, ...summarize(samples, longTasks) }));
});
