// The matching work one evaluation may spend (DESIGN 3.6 "Bounds"; issue 16 item 2), counted in steps, never in time, so the
// pure core stays free of clocks and the same input always gets the same answer. A step is one unit of matching work that
// costs about the same everywhere: one (pattern position, path segment) state of the segment matcher, one iteration of the
// in-segment wildcard matcher, one pattern the rule index offers as a candidate, one test of a pattern made only of literals.
// Over the limit, spend() throws MatchBudgetExceeded; evaluate() turns that into a permanent fail-closed reason.

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
