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
    // The walk of the path itself, priced by a rule the path never offers.
    const walk = new MatchBudget(Number.POSITIVE_INFINITY);
    parseCodeowners("/elsewhere/ @a\n").match(path, walk);
    // One candidate, tested once: within the cost of one match (not one per repeated segment).
    expect(budget.used).toBeLessThanOrEqual(walk.used + 2 * states("**/src/**/test/**/*.snap", path) + 1);
  });

  test("a literal pattern that matches at any depth is charged for the length of the path it scans", () => {
    // `a/` looks for `/a/` anywhere in the path: a string scan over the whole path, not one step.
    const short = measure("a/", `${"x".repeat(1_000)}/a`);
    const long = measure("a/", `${"x".repeat(10_000)}/a`);
    expect([short.matched, long.matched]).toEqual([false, false]);
    expect(short.steps).toBeGreaterThan(0);
    expect(long.steps).toBeGreaterThan(5 * short.steps);
  });

  test("an anchored literal pattern is charged for what it compares, not for the rest of a long path", () => {
    const short = measure("/docs/", "docs/a.md");
    const long = measure("/docs/", `docs/${"x".repeat(10_000)}`);
    expect([short.matched, long.matched]).toEqual([true, true]);
    expect(long.steps).toBe(short.steps);
  });
});

describe("the rule index's work", () => {
  const spent = (text: string, path: string) => {
    const parsed = parseCodeowners(text);
    const budget = new MatchBudget(Number.POSITIVE_INFINITY);
    const match = parsed.match(path, budget);
    return { match, steps: budget.used };
  };
  const longPath = `${"x/".repeat(2_000)}a`;

  test("a flood of rules with the same pattern costs what the last of them costs, and the last still wins", () => {
    const flood = spent(`${"a/ @early\n".repeat(1_000)}a/ @late\n`, `x/a/${longPath}`);
    const single = spent("a/ @late\n", `x/a/${longPath}`);
    expect(flood.match).toEqual({ owners: ["@late"], line: 1_001 });
    expect(flood.steps).toBe(single.steps);
  });

  test("the same literal spelled with escapes is the same rule to the index", () => {
    const flood = spent(`${"d\\ocs/ @early\ndoc\\s/ @early\n".repeat(500)}\\docs/ @late\n`, `src/docs/${longPath}`);
    const single = spent("docs/ @late\n", `src/docs/${longPath}`);
    expect(flood.match).toEqual({ owners: ["@late"], line: 1_001 });
    expect(flood.steps).toBe(single.steps);
  });

  test("walking a long path through the index is charged even when no rule is a candidate", () => {
    const { match, steps } = spent("/zz/ @a\n", longPath);
    expect(match).toBeNull();
    expect(steps).toBeGreaterThanOrEqual(longPath.split("/").length);
  });

  test("candidates gathered out of order cost more than the same candidates already newest first", () => {
    // One rule per path segment, each filed under its own segment: the path offers all of them, one bucket at a time.
    const names = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const path = `${names.join("/")}/z`;
    const rules = (order: readonly string[]) => order.map((name) => `${name}/ @a`).join("\n");
    const ascending = spent(rules(names), path); // buckets visited oldest rule first: the candidates need ordering
    const descending = spent(rules([...names].reverse()), path); // visited newest first: already in order
    expect(ascending.match).toEqual({ owners: ["@a"], line: 200 });
    expect(descending.match).toEqual({ owners: ["@a"], line: 200 });
    expect(ascending.steps).toBeGreaterThan(descending.steps);
  });
});
