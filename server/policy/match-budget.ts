// The matching work one evaluation may spend (DESIGN 3.6 "Bounds"; issue 16 item 2), counted in steps, never in time, so the
// pure core stays free of clocks and the same input always gets the same answer. A step is one unit of work that costs about
// the same everywhere (about 10 ns on the benchmark machine): one (pattern position, path segment) state of the segment
// matcher, one iteration of the in-segment wildcard matcher, one pattern the rule index offers as a candidate. Work whose
// cost grows with a length is charged by that length as it is spent (issue 25 item 5), with the prices below: a literal
// pattern's string scan, the index's walk of a path, the ordering of a path's candidates, and parsing the CODEOWNERS file.
// Over the limit, spend() throws MatchBudgetExceeded; evaluate() turns that into a permanent fail-closed reason.

/** Characters a string scan or comparison covers per step (JavaScriptCore scans a character in about a nanosecond or less). */
export const CHARS_PER_STEP = 8;

/** Steps per segment of a path the rule index walks (split, hashed, looked up in up to two maps: about 60-140 ns). */
export const PATH_SEGMENT_STEPS = 8;

/** Comparisons of the native sort that orders a path's candidates per step (n·log2 n comparisons in all, about 1 ns each). */
export const SORT_COMPARISONS_PER_STEP = 8;

/**
 * Steps per CODEOWNERS rule on top of one step per character of its line: tokenizing, compiling the pattern, checking the
 * owners and filing it in the index cost about 0.6-1.5 µs a rule. Every line, comment or blank, is also charged one step per
 * PARSE_CHARS_PER_STEP characters for splitting and skipping it.
 */
export const RULE_PARSE_STEPS = 64;
export const PARSE_CHARS_PER_STEP = 4;

export class MatchBudgetExceeded extends Error {
  override readonly name = "MatchBudgetExceeded";
  constructor(readonly limit: number) {
    super(`path matching needed more than ${limit} steps`);
  }
}

export class MatchBudget {
  /** Steps spent so far; read and advanced directly by the matchers' inner loops (see pattern.ts). */
  used = 0;

  constructor(readonly limit: number) {}

  /** Adds `steps`; throws MatchBudgetExceeded once more than `limit` steps are spent in all. */
  spend(steps: number): void {
    this.used += steps;
    if (this.used > this.limit) throw new MatchBudgetExceeded(this.limit);
  }

  /** Throws when the steps spent so far are over the limit (after an inner loop advanced `used` itself). */
  check(): void {
    if (this.used > this.limit) throw new MatchBudgetExceeded(this.limit);
  }
}

/** Steps of a scan or comparison over `chars` characters: one, plus one per CHARS_PER_STEP. */
export function scanSteps(chars: number): number {
  return 1 + Math.ceil(chars / CHARS_PER_STEP);
}
