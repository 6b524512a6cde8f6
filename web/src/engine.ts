// What the page shows, computed from the state by the decision core only (runs in the Web Worker; pure, so also in tests).
// The explanation is the Decision and its rendered check output; the extras are engine answers to questions the Decision
// does not carry: which CODEOWNERS line owns a path (the same matcher evaluate() uses), which non-delegable rule covers a
// path, each file's own parse errors with their locations, and the change preview of the head's files (issue 19 item 3).
import { decideCheck, planLookups, publicationOf, type CheckOutput, type CheckPublication, type Decision, type LookupPlan, type PreviewResult } from "../../server/evaluation/index.ts";
import { parseCodeowners, type CodeownersError, type ParsedCodeowners } from "../../server/policy/codeowners.ts";
import { builtInNonDelegablePatterns } from "../../server/policy/non-delegable.ts";
import { compilePattern, type CompiledPattern } from "../../server/policy/pattern.ts";
import { parseOrganizationPolicy, parseRepositoryPolicy, type PolicyError } from "../../server/policy/policy-files.ts";
import { reviewEffects, type ReviewEffect } from "./review-effects.ts";
import { codeownersFile, type PlaygroundState } from "./state.ts";

/** Paths listed per owner set in the page before "and N more", as in the check output (MAX_RENDERED_PATHS_PER_SET). */
export const MAX_LISTED_PATHS = 20;
/** CODEOWNERS errors shown beside the editor. */
export const MAX_SHOWN_ERRORS = 500;

export interface PathOwnership {
  readonly path: string;
  /** The CODEOWNERS line of the last matching rule, or null when no rule matches. */
  readonly line: number | null;
  readonly pattern: string | null;
  readonly owners: readonly string[];
  /** The non-delegable rule covering the path, or null. */
  readonly nonDelegable: { readonly pattern: string; readonly origin: "built-in" | "organization guardrail" } | null;
}

export interface Explanation {
  readonly decision: Decision;
  /** The decision's rendered output: what a completed check carries. */
  readonly check: CheckOutput;
  /** What the worker writes for this decision (the worker's own publicationOf): the check run as the forge shows it. */
  readonly published: CheckPublication;
  readonly codeowners: { readonly location: string | null; readonly rules: number; readonly errors: readonly CodeownersError[]; readonly errorCount: number };
  readonly repositoryPolicyErrors: readonly PolicyError[];
  readonly organizationPolicyErrors: readonly PolicyError[];
  /** Per owner set (same order as decision.ownerSets), its first MAX_LISTED_PATHS paths with their owning line. */
  readonly setPaths: readonly (readonly PathOwnership[])[];
  /** Per owner set, a hash of everything shown for it: the page re-renders only the sets whose content changed. */
  readonly setFingerprints: readonly string[];
  readonly query: PathOwnership | null;
  /** For every review in the list, what it did (counted, why not, blocked, superseded, ignored). */
  readonly reviews: readonly ReviewEffect[];
  /**
   * The directory facts this evaluation reads (planLookups), so the page can add the ones the evidence lacks. Only computed
   * when some owner set has unresolved facts: planLookups analyses the pull request again, which costs as much as evaluate().
   */
  readonly plan: LookupPlan | null;
  /**
   * What the head's files (evidence.headFiles, the second CODEOWNERS editor) would change once merged: the worker's own
   * change preview (decideCheck), with the decision's bounds (one matching budget, the file-size limits), also appended to
   * the check output. Null without head files or without a conclusive decision. It can neither change the decision nor fail it.
   */
  readonly preview: PreviewResult | null;
  readonly milliseconds: number;
  /** Where the time went: decideCheck() (evaluate, the change preview, renderCheck), and the page's extras (line lookups, policy errors, plan). */
  readonly phases: { readonly evaluate: number; readonly extras: number };
}

// The worker keeps the last parse: typing in another field does not re-parse a 10,000-rule file for the line lookups.
let lastText: string | null = null;
let lastParsed: { codeowners: ParsedCodeowners; patterns: Map<number, string> } | null = null;
function parsed(text: string): { codeowners: ParsedCodeowners; patterns: Map<number, string> } {
  if (text !== lastText || lastParsed === null) {
    const codeowners = parseCodeowners(text);
    lastParsed = { codeowners, patterns: new Map(codeowners.rules.map((rule) => [rule.line, rule.pattern])) };
    lastText = text;
  }
  return lastParsed;
}

function nonDelegableRules(state: PlaygroundState): { pattern: CompiledPattern; origin: "built-in" | "organization guardrail" }[] {
  const org = state.evidence.organizationPolicy;
  const policy = org.kind === "found" ? parseOrganizationPolicy(org.text) : null;
  const organization = policy?.kind === "ok" ? policy.policy : null;
  const rules: { pattern: CompiledPattern; origin: "built-in" | "organization guardrail" }[] = [];
  if (!state.settings.allowInsecureChanges) {
    const slugs = (organization?.trusted_apps ?? []).map((app) => app.slug);
    for (const pattern of builtInNonDelegablePatterns(state.settings.forgeDirectory, state.settings.policyPath, slugs)) rules.push({ pattern, origin: "built-in" });
  }
  for (const source of organization?.guardrails?.non_delegable_paths ?? []) {
    const compiled = compilePattern(source);
    if (compiled.ok) rules.push({ pattern: compiled.pattern, origin: "organization guardrail" });
  }
  return rules;
}

/** FNV-1a, 32 bits, as hex: a change detector for rendering, not a security measure. */
function fingerprint(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16);
}

export function explain(state: PlaygroundState, query: string): Explanation {
  const started = performance.now();
  // The worker's own call: the decision on the base's files, and the change preview of the head's when the evidence has them.
  const { decision, preview, output: check } = decideCheck(state.evidence, state.settings);
  const evaluated = performance.now();
  const file = codeownersFile(state.evidence, state.settings.forgeDirectory);
  const cached = file !== null && file.read.kind === "found" ? parsed(file.read.text) : null;
  const codeowners = cached?.codeowners ?? null;
  const guards = nonDelegableRules(state);
  const ownership = (path: string): PathOwnership => {
    const match = codeowners?.match(path) ?? null;
    const pattern = match === null ? null : (cached?.patterns.get(match.line) ?? null);
    const normalized = path.replace(/^\/+/, "");
    const guard = guards.find((candidate) => candidate.pattern.test(normalized)) ?? null;
    return {
      path,
      line: match?.line ?? null,
      pattern,
      owners: match?.owners ?? [],
      nonDelegable: guard === null ? null : { pattern: guard.pattern.source, origin: guard.origin },
    };
  };
  const repo = state.evidence.repositoryPolicy;
  const org = state.evidence.organizationPolicy;
  const repoParsed = repo.kind === "found" ? parseRepositoryPolicy(repo.text) : null;
  const orgParsed = org.kind === "found" ? parseOrganizationPolicy(org.text) : null;
  const setPaths = decision.ownerSets.map((set) => set.paths.slice(0, MAX_LISTED_PATHS).map(ownership));
  const result: Omit<Explanation, "milliseconds" | "phases"> = {
    decision,
    check,
    published: publicationOf(decision, check, state.evidence.pullRequest.state),
    preview,
    codeowners: {
      location: file?.location ?? null,
      rules: codeowners?.rules.length ?? 0,
      errors: (codeowners?.errors ?? []).slice(0, MAX_SHOWN_ERRORS),
      errorCount: codeowners?.errors.length ?? 0,
    },
    repositoryPolicyErrors: repoParsed?.kind === "invalid" ? repoParsed.errors : [],
    organizationPolicyErrors: orgParsed?.kind === "invalid" ? orgParsed.errors : [],
    setPaths,
    setFingerprints: decision.ownerSets.map((set, index) => fingerprint(JSON.stringify([set, setPaths[index]]))),
    query: query.trim() === "" ? null : ownership(query.trim()),
    reviews: reviewEffects(state.evidence, state.settings, decision),
    plan: decision.ownerSets.some((set) => set.unresolved.length > 0) ? planLookups(state.evidence, state.settings, state.evidence.directory) : null,
  };
  const finished = performance.now();
  return { ...result, milliseconds: finished - started, phases: { evaluate: evaluated - started, extras: finished - evaluated } };
}
