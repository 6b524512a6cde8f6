// The non-delegable set (DESIGN 3.2 rule 6, spec item 7): paths on which an App approval can never replace an eligible human.
// Built-in part: the three code-owners locations, the effective policy path, `/<slug>.toml` of every enrolled App (DESIGN 3.6:
// every enrolled App, not only those that reviewed), `.forge/workflows/**`, `.forge/actions/**`.
// Organization part: `guardrails.non_delegable_paths`. SERVICE_ALLOW_INSECURE_CHANGES removes only the built-in part.
import type { MatchBudget } from "./match-budget.ts";
import { compilePattern, literalPathPattern, type CompiledPattern } from "./pattern.ts";
import { PatternIndex } from "./rule-index.ts";

/** The three standard code-owners locations, in precedence order (DESIGN 3.2 rule 1): the one list the service reads by. */
export const CODEOWNERS_PATHS = [".forge/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"] as const;
export const BUILT_IN_NON_DELEGABLE_PATTERNS = ["/.forge/workflows/**", "/.forge/actions/**"] as const;

export interface NonDelegableInput {
  readonly policyPath: string;
  readonly enrolledAppSlugs: readonly string[];
  /** Organization guardrail patterns, already validated (invalid ones make the organization policy invalid). */
  readonly guardrails: readonly string[];
  readonly allowInsecureChanges: boolean;
}

export interface NonDelegableSet {
  /** The patterns in force, for display: built-in first (unless removed), then the organization's. */
  readonly sources: readonly string[];
  isNonDelegable(path: string): boolean;
}

export function builtInNonDelegablePatterns(policyPath: string, enrolledAppSlugs: readonly string[]): CompiledPattern[] {
  const patterns: CompiledPattern[] = CODEOWNERS_PATHS.map((path) => literalPathPattern(path));
  patterns.push(literalPathPattern(policyPath));
  for (const slug of enrolledAppSlugs) patterns.push(literalPathPattern(`${slug}.toml`));
  for (const source of BUILT_IN_NON_DELEGABLE_PATTERNS) {
    const compiled = compilePattern(source);
    if (compiled.ok) patterns.push(compiled.pattern);
  }
  return patterns;
}

/** The set in force; its matching work is spent from `budget` when one is given (the evaluation's, see analyze.ts). */
export function nonDelegableSet(input: NonDelegableInput, budget?: MatchBudget): NonDelegableSet {
  const patterns: CompiledPattern[] = input.allowInsecureChanges ? [] : builtInNonDelegablePatterns(input.policyPath, input.enrolledAppSlugs);
  for (const source of input.guardrails) {
    const compiled = compilePattern(source);
    // An invalid guardrail cannot be honoured precisely: treat everything as non-delegable rather than nothing (fail closed).
    patterns.push(compiled.ok ? compiled.pattern : literalPathPattern(""));
  }
  const index = new PatternIndex(patterns);
  const everything = patterns.some((pattern) => pattern.source === "/");
  return {
    sources: patterns.map((pattern) => pattern.source),
    isNonDelegable: (path) => everything || index.matchesAny(path, budget),
  };
}
