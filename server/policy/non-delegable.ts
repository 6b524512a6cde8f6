// The non-delegable set (DESIGN 3.2 rule 6, spec item 7): paths on which an App approval can never replace an eligible human.
// Built-in part: the three code-owners locations, the effective policy path, `/<slug>.toml` of every enrolled App (DESIGN 3.6:
// every enrolled App, not only those that reviewed), `<forge directory>/workflows/**`, `<forge directory>/actions/**`.
// Organization part: `guardrails.non_delegable_paths`. SERVICE_ALLOW_INSECURE_CHANGES removes only the built-in part.
import { codeownersLocations, forgeDirectoryNonDelegablePatterns } from "./forge-directory.ts";
import type { MatchBudget } from "./match-budget.ts";
import { compilePattern, literalPathPattern, type CompiledPattern } from "./pattern.ts";
import { PatternIndex } from "./rule-index.ts";

export interface NonDelegableInput {
  /** The forge's configuration directory (forge-directory.ts): its code-owners file, workflows and actions are built in. */
  readonly forgeDirectory: string;
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

export function builtInNonDelegablePatterns(forgeDirectory: string, policyPath: string, enrolledAppSlugs: readonly string[]): CompiledPattern[] {
  const patterns: CompiledPattern[] = codeownersLocations(forgeDirectory).map((path) => literalPathPattern(path));
  patterns.push(literalPathPattern(policyPath));
  for (const slug of enrolledAppSlugs) patterns.push(literalPathPattern(`${slug}.toml`));
  for (const source of forgeDirectoryNonDelegablePatterns(forgeDirectory)) {
    const compiled = compilePattern(source);
    // A directory that is not a valid segment (config and the callers refuse one) still protects something: everything.
    patterns.push(compiled.ok ? compiled.pattern : literalPathPattern(""));
  }
  return patterns;
}

/** The set in force; its matching work is spent from `budget` when one is given (the evaluation's, see analyze.ts). */
export function nonDelegableSet(input: NonDelegableInput, budget?: MatchBudget): NonDelegableSet {
  const patterns: CompiledPattern[] = input.allowInsecureChanges ? [] : builtInNonDelegablePatterns(input.forgeDirectory, input.policyPath, input.enrolledAppSlugs);
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
