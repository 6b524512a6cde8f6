// Matching work is bounded (issue 16 item 2): adversarial patterns against deep paths cost steps in proportion to
// pattern × path, counted by a MatchBudget, never timed. The answers themselves are checked against known results here and
// against the RegExp reference in server/evaluation/properties.test.ts.
import { describe, expect, test } from "bun:test";
import { MatchBudget, MatchBudgetExceeded } from "./match-budget.ts";
import { compilePattern } from "./pattern.ts";
import { parseCodeowners } from "./codeowners.ts";

function measure(source: string, path: string): { matched: boolean; steps: number } {
  const compiled = compilePattern(source);
  if (!compiled.ok) throw new Error(compiled.message);
  const budget = new MatchBudget(Number.POSITIVE_INFINITY);
  const matched = compiled.pattern.test(path, undefined, budget);
  return { matched, steps: budget.used };
}

/** Segments of the pattern (plus the implicit leading `**` of a pattern that matches at any depth) and of the path. */
const segmentsOf = (text: string) => text.split("/").filter((part) => part !== "").length;
const states = (source: string, path: string) => (segmentsOf(source) + 2) * (segmentsOf(path) + 1);

/** A path of `repeat` copies of `unit` under which `file` sits: deep, and full of places where a `**` could resume. */
const deepPath = (unit: string, repeat: number, file: string) => unit.repeat(repeat) + file;

describe("matching work", () => {
  test("/**/src/**/test/**/*.snap against a 3.6 KB path costs steps in proportion to segments × segments", () => {
    const source = "/**/src/**/test/**/*.snap";
    const miss = deepPath("src/test/", 400, "x.txt");
    expect(miss.length).toBeGreaterThanOrEqual(3_600);
    const missed = measure(source, miss);
    expect(missed.matched).toBe(false);
    expect(missed.steps).toBeGreaterThan(0);
    expect(missed.steps).toBeLessThanOrEqual(2 * states(source, miss));
    const hit = measure(source, deepPath("src/test/", 400, "y.snap"));
    expect(hit.matched).toBe(true);
    expect(hit.steps).toBeLessThanOrEqual(2 * states(source, miss));
  });

  test("four and five ** in one rule against a deep path stay within segments × segments", () => {
    for (const source of ["**/a/**/b/**/c/**/*.snap", "/**/a/**/b/**/c/**/d/**/*.snap"]) {
      const miss = deepPath("a/b/c/d/", 450, "x.txt");
      const missed = measure(source, miss);
      expect({ source, matched: missed.matched }).toEqual({ source, matched: false });
      expect(missed.steps).toBeLessThanOrEqual(2 * states(source, miss));
      const hit = measure(source, deepPath("a/b/c/d/", 450, "y.snap"));
      expect({ source, matched: hit.matched }).toEqual({ source, matched: true });
    }
  });

  test("a trailing /** after several ** needs something below the last literal", () => {
    const source = "/**/a/**/b/**/c/**";
    const path = deepPath("a/b/", 300, "c");
    expect(measure(source, path).matched).toBe(false);
    expect(measure(source, `${path}/d`).matched).toBe(true);
    expect(measure(source, path).steps).toBeLessThanOrEqual(2 * states(source, path));
  });

  test("a star-heavy segment against long path segments costs at most pattern characters × path characters", () => {
    const near = "a".repeat(89) + "x"; // passes the quick check on the segment's literal tail, then fails: no `b`
    const full = "a".repeat(88) + "bx";
    for (const source of ["**/*a*a*a*a*b*x", "/**/*a*a*a*a*b*x/**/*a?a*a*a*b*x"]) {
      const path = Array.from({ length: 40 }, () => near).join("/");
      const result = measure(source, path);
      expect({ source, matched: result.matched }).toEqual({ source, matched: false });
      expect(result.steps).toBeGreaterThan(states(source, path));
      expect(result.steps).toBeLessThanOrEqual(states(source, path) + source.length * path.length);
      expect({ source, matched: measure(source, `${path}/${full}/${full}`).matched }).toEqual({ source, matched: true });
    }
  });

  test("a budget smaller than the work stops the match with MatchBudgetExceeded", () => {
    const compiled = compilePattern("/**/src/**/test/**/*.snap");
    if (!compiled.ok) throw new Error(compiled.message);
    const path = deepPath("src/test/", 400, "x.txt");
    const needed = measure("/**/src/**/test/**/*.snap", path).steps;
    expect(compiled.pattern.test(path, undefined, new MatchBudget(needed))).toBe(false);
    expect(() => compiled.pattern.test(path, undefined, new MatchBudget(needed - 1))).toThrow(MatchBudgetExceeded);
  });

  test("a path repeating one segment offers each indexed rule once", () => {
    const parsed = parseCodeowners("**/src/**/test/**/*.snap @a\n"); // filed under its longest literal, `test`
    const path = deepPath("test/", 900, "x.txt");
    const budget = new MatchBudget(Number.POSITIVE_INFINITY);
    expect(parsed.match(path, budget)).toBeNull();
    expect(budget.used).toBeGreaterThan(0);
    // One candidate, tested once: within the cost of one match (not one per repeated segment).
    expect(budget.used).toBeLessThanOrEqual(2 * states("**/src/**/test/**/*.snap", path) + 1);
  });
});
