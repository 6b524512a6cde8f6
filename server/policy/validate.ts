// `service validate` (issue 19 item 1): what the service would say about a repository's CODEOWNERS and policy files, found
// before they merge. Pure, like the rest of the decision core: the command (server/commands/validate.ts) reads the files and
// the tree and prints the findings. Every invalid line and policy error is the parsers' own (parseCodeowners,
// parseRepositoryPolicy, parseOrganizationPolicy) with the message the check output shows; the tree checks run the service's
// matcher and rule index under a MatchBudget, so a hostile pattern ends in a finding, never a hung CI job.
import { MAX_CODEOWNERS_BYTES, MAX_MATCH_STEPS, MAX_PULL_REQUEST_FILES, MAX_VALIDATION_MATCH_STEPS } from "./bounds.ts";
import { ownerKind, parseCodeowners, quoteToken, TOO_MANY_RULES_MESSAGE, type CodeownersRule, type ParsedCodeowners } from "./codeowners.ts";
import { MatchBudget, MatchBudgetExceeded } from "./match-budget.ts";
import { nonDelegableSet } from "./non-delegable.ts";
import { compilePattern, type CompiledPattern } from "./pattern.ts";
import {
  breakGlassSettings,
  parseOrganizationPolicy,
  parseRepositoryPolicy,
  policyFileSizeError,
  repositoryPolicyOptsOut,
  type OrganizationPolicy,
  type PolicyError,
  type RepositoryPolicy,
} from "./policy-files.ts";
import { PatternIndex } from "./rule-index.ts";
import { utf8ByteLength } from "./utf8.ts";

/**
 * error: the service fails closed on it (or, for match_budget_exceeded, the validator could not finish); warning: the files
 * work but probably not as meant; notice: how the service will treat the repository, nothing to fix.
 */
export type Severity = "error" | "warning" | "notice";

export type FindingKind =
  /** A CODEOWNERS line the parser rejects: the service skips it and every evaluation fails closed naming it. */
  | "invalid_codeowners_line"
  /** A repository or organization policy error, `location: message` exactly as the check output lists it. */
  | "policy_error"
  /** A repository policy with `trusted_apps`: only the organization policy can enroll Apps. */
  | "repository_enrolls_apps"
  /** A repository policy naming `break_glass`: only the organization policy can enable overrides (DESIGN 3.11). */
  | "repository_enables_break_glass"
  /** The organization policy enables break-glass overrides: who may override, and the reason's minimum length. */
  | "break_glass_enabled"
  /** A delegation to an App the organization policy does not enroll (needs the organization policy). */
  | "delegation_app_not_enrolled"
  /** Delegations whose Apps' enrollment was not checked because no organization policy was given (a notice naming the flag). */
  | "delegation_apps_unchecked"
  /** A CODEOWNERS rule naming e-mail owners: they cannot be resolved to accounts, so they never approve. */
  | "email_owner_never_approves"
  /**
   * A file the command would not or could not read as text: a symbolic link or other non-regular file inside the checkout,
   * or bytes that are not UTF-8 (which the service fails closed on: the evaluation's *_incomplete reasons).
   */
  | "unreadable_file"
  /** A bound of DESIGN 3.6 exceeded: file size, rule count, or the matching steps a pull request over this tree could need. */
  | "bound_exceeded"
  /** Matching stopped at MAX_VALIDATION_MATCH_STEPS; the findings of the check it stopped are left out, not given partially. */
  | "match_budget_exceeded"
  /** A rule that matches no path of the tree. */
  | "rule_owns_nothing"
  /** A rule that matches paths but owns none: a later rule matches each of them (last match wins). */
  | "dead_rule"
  /** Paths of the tree with no code owner (no rule, or a rule without owners). */
  | "unowned_paths"
  /** A delegation pattern that covers non-delegable paths, where an App approval never counts. */
  | "delegation_non_delegable"
  /** A code-owners file at a lower-precedence location, which the service never reads. */
  | "shadowed_codeowners"
  /** No code-owners file at any location. */
  | "codeowners_missing"
  /** No repository policy, or one that does not enable the service. */
  | "policy_not_enabled";

export interface Finding {
  readonly kind: FindingKind;
  readonly severity: Severity;
  /** Repository path of the file the finding is about; null when it is about no single file. */
  readonly file: string | null;
  /** 1-based line in `file`; null when the finding is about the whole file. */
  readonly line: number | null;
  readonly message: string;
}

/**
 * A file as the command found it: its text; or only its size when it is over its bound and was deliberately not read; or why
 * it has no text (`unreadable`: the finding's whole message, e.g. "CODEOWNERS is not valid UTF-8").
 */
export type ValidatedFile =
  | { readonly path: string; readonly text: string }
  | { readonly path: string; readonly bytes: number }
  | { readonly path: string; readonly unreadable: string };

export interface ValidationInput {
  /** The code-owners files that exist, in the service's precedence order (codeownersLocations): the service reads the first. */
  readonly codeowners: readonly ValidatedFile[];
  /** Every location looked at, for the notice when there is no file. */
  readonly codeownersLocations: readonly string[];
  readonly repositoryPolicy: ValidatedFile | null;
  readonly organizationPolicy: ValidatedFile | null;
  /** SERVICE_FORGE_DIRECTORY: its code-owners file, workflows and actions are part of the non-delegable set. */
  readonly forgeDirectory: string;
  /** The repository policy's path in the repository (SERVICE_POLICY_PATH), part of the non-delegable set. */
  readonly policyPath: string;
  /** The tree's paths (`git ls-files`), enabling the tree checks; null when not given. */
  readonly tree: readonly string[] | null;
  /** Matching steps the validator may spend (MAX_VALIDATION_MATCH_STEPS unless a test passes its own). */
  readonly matchSteps?: number;
}

export interface ValidationSummary {
  readonly errors: number;
  readonly warnings: number;
  readonly notices: number;
  /** The code-owners file the service reads, or null. */
  readonly codeowners: string | null;
  /** Valid rules of that file; null when none was loaded. */
  readonly rules: number | null;
  /** Distinct tree paths checked; null without a tree. */
  readonly paths: number | null;
  /** Tree paths without a code owner; null without a tree or when the tree checks stopped. */
  readonly unownedPaths: number | null;
  /** Matching steps spent. */
  readonly matchSteps: number;
}

export interface ValidationReport {
  /** Ordered by file, then line (whole-file findings first), then as found. */
  readonly findings: readonly Finding[];
  readonly summary: ValidationSummary;
}

/** Paths named in one finding before "and N more". */
export const LISTED_PATHS = 5;

function listPaths(paths: readonly string[], total = paths.length): string {
  const shown = paths.slice(0, LISTED_PATHS).join(", ");
  return total > LISTED_PATHS ? `${shown} and ${total - LISTED_PATHS} more` : shown;
}

export function validate(input: ValidationInput): ValidationReport {
  const findings: Finding[] = [];
  const add = (kind: FindingKind, severity: Severity, file: string | null, line: number | null, message: string) => findings.push({ kind, severity, file, line, message });
  const budget = new MatchBudget(input.matchSteps ?? MAX_VALIDATION_MATCH_STEPS);

  const codeowners = checkCodeowners(input, add);
  const repository = checkPolicy(input.repositoryPolicy, parseRepositoryPolicy, add, (location) =>
    location === "trusted_apps" || location.startsWith("trusted_apps[") || location.startsWith("trusted_apps.")
      ? "repository_enrolls_apps"
      : location === "break_glass"
        ? "repository_enables_break_glass"
        : "policy_error",
  );
  if (input.repositoryPolicy === null) {
    add("policy_not_enabled", "notice", null, null, `no repository policy at ${input.policyPath}: the service does not check this repository`);
  } else if ("text" in input.repositoryPolicy) {
    if (repositoryPolicyOptsOut(input.repositoryPolicy.text)) {
      add("policy_not_enabled", "notice", input.repositoryPolicy.path, null, "the repository policy says enabled = false: the service does not check this repository");
    } else if (repository !== null && repository.policy.enabled !== true) {
      add("policy_not_enabled", "notice", input.repositoryPolicy.path, null, "the repository policy does not say enabled = true: the service does not check this repository");
    }
  }
  const organization = checkPolicy(input.organizationPolicy, parseOrganizationPolicy, add, () => "policy_error");
  const breakGlass = breakGlassSettings(organization?.policy ?? null);
  if (organization !== null && breakGlass !== null) {
    const teams = breakGlass.teams.join(", ");
    add("break_glass_enabled", "notice", organization.path, lineOf("break_glass", tomlFieldLines(organization.text)), `break-glass overrides are enabled: an approving review on the head whose first line is 'break-glass: <reason of at least ${breakGlass.minReasonLength} visible characters>', by an active member of ${teams} who is not the author, meets the approval requirements`);
  }

  // Each matching step below is bounded: past the budget, what the step added so far is dropped (a rule reported as owning
  // nothing after half a tree would be wrong) and one finding says the validator stopped.
  const tree = input.tree === null ? null : [...new Set(input.tree.filter((path) => path !== ""))];
  const bounded = (step: () => void): void => {
    const before = findings.length;
    try {
      step();
    } catch (error) {
      if (!(error instanceof MatchBudgetExceeded)) throw error;
      findings.length = before;
      if (!findings.some((finding) => finding.kind === "match_budget_exceeded")) {
        add("match_budget_exceeded", "error", null, null, `the checks stopped: matching needed more than ${budget.limit} steps (the validator's bound); patterns with many '**', or that match at any depth, cost the most`);
      }
    }
  };
  if (repository !== null && input.organizationPolicy === null) noticeUncheckedDelegations(repository, add);
  if (repository !== null) bounded(() => checkDelegations(input, tree, repository, organization, budget, add));
  let unownedPaths: number | null = null;
  if (tree !== null) bounded(() => (unownedPaths = checkTree(tree, codeowners, budget, add)));
  else if (codeowners !== null) checkDuplicatePatterns(codeowners, add);

  const fileOrder = (file: string | null) => file ?? "";
  const sorted = findings
    .map((finding, index) => ({ finding, index }))
    .sort((a, b) => {
      const fa = fileOrder(a.finding.file);
      const fb = fileOrder(b.finding.file);
      if (fa !== fb) return fa < fb ? -1 : 1;
      const la = a.finding.line ?? 0;
      const lb = b.finding.line ?? 0;
      return la !== lb ? la - lb : a.index - b.index;
    })
    .map(({ finding }) => finding);
  const count = (severity: Severity) => findings.filter((finding) => finding.severity === severity).length;
  return {
    findings: sorted,
    summary: {
      errors: count("error"),
      warnings: count("warning"),
      notices: count("notice"),
      codeowners: codeowners?.path ?? null,
      rules: codeowners?.parsed.rules.length ?? null,
      paths: tree?.length ?? null,
      unownedPaths,
      matchSteps: budget.used,
    },
  };
}

type Add = (kind: FindingKind, severity: Severity, file: string | null, line: number | null, message: string) => void;

interface LoadedCodeowners {
  readonly path: string;
  readonly parsed: ParsedCodeowners;
  /** The steps the service's evaluation spends parsing this file, before any matching. */
  readonly parseSteps: number;
}

/** The file the service reads (the first that exists), its size bound and its invalid lines; later locations are ignored. */
function checkCodeowners(input: ValidationInput, add: Add): LoadedCodeowners | null {
  const [selected, ...shadowed] = input.codeowners;
  if (selected === undefined) {
    add("codeowners_missing", "notice", null, null, `no code-owners file at ${input.codeownersLocations.join(", ")}: no path has a code owner`);
    return null;
  }
  for (const file of shadowed) {
    add("shadowed_codeowners", "warning", file.path, null, `the service reads ${selected.path}, which takes precedence; this file is ignored`);
  }
  if ("unreadable" in selected) {
    // As the service: a location it cannot read blocks the later ones (analyze.ts selectCodeowners).
    add("unreadable_file", "error", selected.path, null, selected.unreadable);
    return null;
  }
  const bytes = "text" in selected ? utf8ByteLength(selected.text) : selected.bytes;
  if (!("text" in selected) || bytes >= MAX_CODEOWNERS_BYTES) {
    // The wording of analyze.ts's codeowners_too_large reason.
    add("bound_exceeded", "error", selected.path, null, `the code-owners file ${selected.path} is ${bytes} bytes; it must be under ${MAX_CODEOWNERS_BYTES} bytes (the service loads none of it)`);
    return null;
  }
  const parsing = new MatchBudget(Number.POSITIVE_INFINITY);
  const parsed = parseCodeowners(selected.text, parsing);
  for (const error of parsed.errors) {
    add(error.message === TOO_MANY_RULES_MESSAGE ? "bound_exceeded" : "invalid_codeowners_line", "error", selected.path, error.line, error.message);
  }
  for (const rule of parsed.rules) {
    const emails = rule.owners.filter((owner) => ownerKind(owner) === "email");
    if (emails.length === 0) continue;
    // As the evaluation: an e-mail owner is never resolved to an account (owner-sets.ts), so no review of theirs counts.
    const named = listPaths(emails.map(quoteToken));
    const none = emails.length === rule.owners.length;
    add("email_owner_never_approves", "warning", selected.path, rule.line, emails.length === 1
      ? `owner ${named} is an e-mail address: the service cannot resolve it to an account, so it never approves${none ? " (no owner of this rule can approve)" : ""}; name the account (@login) instead`
      : `owners ${named} are e-mail addresses: the service cannot resolve them to accounts, so they never approve${none ? " (no owner of this rule can approve)" : ""}; name the accounts (@login) instead`);
  }
  return { path: selected.path, parsed, parseSteps: parsing.used };
}

interface LoadedPolicy<T> {
  readonly path: string;
  readonly text: string;
  readonly policy: T;
}

/** Parses a policy file with the service's parser; each error becomes a finding at the line it names or that holds its field. */
function checkPolicy<T>(
  file: ValidatedFile | null,
  parse: (text: string) => { kind: "ok"; policy: T } | { kind: "invalid"; errors: readonly PolicyError[] },
  add: Add,
  kindOf: (location: string) => FindingKind,
): LoadedPolicy<T> | null {
  if (file === null) return null;
  if ("unreadable" in file) {
    add("unreadable_file", "error", file.path, null, file.unreadable);
    return null;
  }
  if (!("text" in file)) {
    const error = policyFileSizeError(file.bytes);
    add("bound_exceeded", "error", file.path, null, error === null ? `the file could not be read whole (${file.bytes} bytes)` : `${error.location}: ${error.message}`);
    return null;
  }
  const parsed = parse(file.text);
  if (parsed.kind === "ok") return { path: file.path, text: file.text, policy: parsed.policy };
  const oversized = policyFileSizeError(utf8ByteLength(file.text)) !== null;
  const lines = tomlFieldLines(file.text);
  for (const error of parsed.errors) {
    const kind = oversized ? "bound_exceeded" : kindOf(error.location);
    const hint = kind === "repository_enrolls_apps" ? " (a repository policy cannot enroll Apps: only the organization policy's trusted_apps does)" : "";
    // The check output lists these as `location: message` (analyze.ts policyDetails); the same text here.
    add(kind, "error", file.path, lineOf(error.location, lines), `${error.location}: ${error.message}${hint}`);
  }
  return null;
}

/**
 * Without the organization policy (it lives in another repository) the delegations' Apps cannot be checked against its
 * enrollment: not an error, but an App it does not enroll fails the check on every pull request, so say so and how to check.
 */
function noticeUncheckedDelegations(repository: LoadedPolicy<RepositoryPolicy>, add: Add): void {
  const apps = [...new Set((repository.policy.delegations ?? []).map((delegation) => delegation.app))];
  if (apps.length === 0) return;
  const line = lineOf("delegations[0].app", tomlFieldLines(repository.text));
  add("delegation_apps_unchecked", "notice", repository.path, line, `delegations name ${apps.length === 1 ? "the App" : "the Apps"} ${listPaths(apps)}, whose enrollment was not checked: give the organization policy with --organization-policy FILE (an App it does not enroll fails the check on every pull request)`);
}

/**
 * Delegations against the organization's enrollment (as analyze.ts judges it) and against the non-delegable set: a delegation
 * pattern that covers a non-delegable path (a code-owners location, the policy path, an enrolled App's `<slug>.toml`, the
 * forge's workflows and actions, the organization's guardrails) can never let an App approval count there.
 */
function checkDelegations(
  input: ValidationInput,
  tree: readonly string[] | null,
  repository: LoadedPolicy<RepositoryPolicy>,
  organization: LoadedPolicy<OrganizationPolicy> | null,
  budget: MatchBudget,
  add: Add,
): void {
  const delegations = repository.policy.delegations ?? [];
  if (delegations.length === 0) return;
  const lines = tomlFieldLines(repository.text);
  const trustedApps = organization?.policy.trusted_apps ?? [];
  if (organization !== null) {
    const enrolled = new Set(trustedApps.map((app) => app.slug));
    delegations.forEach((delegation, index) => {
      if (enrolled.has(delegation.app)) return;
      const location = `delegations[${index}].app`;
      add("delegation_app_not_enrolled", "error", repository.path, lineOf(location, lines), `${location}: App ${delegation.app} is not enrolled in the organization policy's trusted_apps`);
    });
  }
  const slugs = trustedApps.map((app) => app.slug);
  const nonDelegable = nonDelegableSet({ forgeDirectory: input.forgeDirectory, policyPath: input.policyPath, enrolledAppSlugs: slugs, guardrails: organization?.policy.guardrails?.non_delegable_paths ?? [], allowInsecureChanges: false }, budget);
  // Paths that exist: the tree, or without one the code-owners files and the policy found (a delegation of `**` covers them).
  const candidates = new Set(tree ?? [...input.codeowners.map((file) => file.path), input.policyPath]);
  const protectedPaths = [...candidates].filter((path) => nonDelegable.isNonDelegable(path));
  delegations.forEach((delegation, index) => {
    delegation.paths.forEach((source, patternIndex) => {
      const compiled = compilePattern(source);
      if (!compiled.ok) return;
      const covered = protectedPaths.filter((path) => compiled.pattern.test(path, undefined, budget));
      if (covered.length === 0) return;
      const location = `delegations[${index}].paths[${patternIndex}]`;
      add("delegation_non_delegable", "warning", repository.path, lineOf(location, lines), `${location} '${source}' covers non-delegable paths, where an approval by ${delegation.app} never counts: ${listPaths(covered)}`);
    });
  });
}

/**
 * Every tree path against every rule, with the service's index: the first rule that matches, newest first, owns the path
 * (exactly the service's lastMatch and its steps); the other candidates are tested only until each is seen to match once,
 * which is all "dead" needs. Returns the number of unowned paths.
 */
function checkTree(tree: readonly string[], codeowners: LoadedCodeowners | null, budget: MatchBudget, add: Add): number {
  const file = codeowners?.path ?? null;
  const rules: readonly CodeownersRule[] = codeowners?.parsed.rules ?? [];
  // Recompiled from the rules' sources (they compiled once already, so they compile again): the parse keeps its index private.
  const patterns = rules.map((rule) => (compilePattern(rule.pattern) as { ok: true; pattern: CompiledPattern }).pattern);
  const index = new PatternIndex(patterns);
  const matched = new Uint8Array(rules.length);
  const owned = new Uint8Array(rules.length);
  /** For a rule seen matching a path: the first such path and the rule that owns it (the rule itself or a later one). */
  const firstMatch = new Map<number, { by: number; path: string }>();
  const unowned: string[] = [];
  let unownedCount = 0;
  const costs = new Float64Array(tree.length);
  tree.forEach((path, pathIndex) => {
    const before = budget.used;
    const { positions, segments } = index.candidatesOf(path, budget);
    let i = 0;
    let winner = -1;
    for (; i < positions.length; i++) {
      if (patterns[positions[i]!]!.test(path, segments, budget)) {
        winner = positions[i]!;
        break;
      }
    }
    costs[pathIndex] = budget.used - before;
    if (winner < 0 || rules[winner]!.owners.length === 0) {
      unownedCount++;
      if (unowned.length < LISTED_PATHS) unowned.push(path);
    }
    if (winner < 0) return;
    if (matched[winner] === 0) firstMatch.set(winner, { by: winner, path });
    matched[winner] = 1;
    owned[winner] = 1;
    for (i++; i < positions.length; i++) {
      const position = positions[i]!;
      if (matched[position] === 1 || !patterns[position]!.test(path, segments, budget)) continue;
      matched[position] = 1;
      firstMatch.set(position, { by: winner, path });
    }
  });
  rules.forEach((rule, position) => {
    if (owned[position] === 1) return;
    const pattern = `'${rule.pattern}'`;
    // A rule equal to a later one is not in the index: it matches what the later one matches, and never wins.
    const filed = index.filedFor(position);
    if (matched[filed] === 0) add("rule_owns_nothing", "warning", file, rule.line, `${pattern} matches no path of the tree`);
    else {
      const { by, path } = firstMatch.get(filed)!;
      add("dead_rule", "warning", file, rule.line, `${pattern} owns no path: a later rule owns every path it matches (last match wins), e.g. line ${rules[by]!.line} '${rules[by]!.pattern}' owns ${path}`);
    }
  });
  if (unownedCount > 0) {
    add("unowned_paths", "warning", file, null, `${unownedCount} of ${tree.length} paths have no code owner, so changing them needs no owner's approval: ${listPaths(unowned, unownedCount)}`);
  }
  // The costliest pull request over this tree: its MAX_PULL_REQUEST_FILES - 1 costliest paths (CODEOWNERS matching alone),
  // after parsing the file, which the service's evaluation charges to the same budget.
  const worst = costs.sort().reverse().subarray(0, MAX_PULL_REQUEST_FILES - 1).reduce((sum, cost) => sum + cost, codeowners?.parseSteps ?? 0);
  if (worst > MAX_MATCH_STEPS) {
    add("bound_exceeded", "warning", file, null, `a pull request changing the ${Math.min(tree.length, MAX_PULL_REQUEST_FILES - 1)} paths of this tree that cost the most to match needs ${worst} matching steps for this file alone (parsing it included); past ${MAX_MATCH_STEPS} the service fails closed (matching_budget_exceeded)`);
  }
  return unownedCount;
}

/** Without a tree only one kind of dead rule is certain: a later rule with the very same pattern. */
function checkDuplicatePatterns(codeowners: LoadedCodeowners, add: Add): void {
  const lastLine = new Map<string, number>();
  for (const rule of codeowners.parsed.rules) lastLine.set(rule.pattern, rule.line);
  for (const rule of codeowners.parsed.rules) {
    const last = lastLine.get(rule.pattern)!;
    if (last !== rule.line) add("dead_rule", "warning", codeowners.path, rule.line, `'${rule.pattern}' owns no path: line ${last} has the same pattern and wins (last match wins)`);
  }
}

// Lines of TOML fields, for pointing at a policy error. Only for display: which file is valid and what each error says are
// the parser's (smol-toml has no positions for values). It follows table headers (`[a]`, `[[a]]` counted per array), keys
// (`k =`, dotted `a.b =`) and skips multi-line strings; an error whose field it cannot place gets its nearest placed parent.

const KEY = String.raw`(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')`;
const DOTTED = String.raw`${KEY}(?:\s*\.\s*${KEY})*`;
const HEADER_LINE = new RegExp(String.raw`^\s*(\[\[?)\s*(${DOTTED})\s*\]`);
const KEY_LINE = new RegExp(String.raw`^\s*(${DOTTED})\s*=`);
const KEY_PART = new RegExp(KEY, "g");

function keyParts(dotted: string): string[] {
  return [...dotted.matchAll(KEY_PART)].map(([part]) => {
    if (part.startsWith("'")) return part.slice(1, -1);
    if (!part.startsWith('"')) return part;
    try {
      return JSON.parse(part) as string;
    } catch {
      return part.slice(1, -1);
    }
  });
}

/** Field path (`delegations[0].paths`, as PolicyError.location spells it) → the 1-based line where it is defined. */
function tomlFieldLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  const arrays = new Map<string, number>();
  let table = "";
  let inMultiline: string | null = null;
  text.split("\n").forEach((line, index) => {
    if (inMultiline !== null) {
      if (line.includes(inMultiline)) inMultiline = null;
      return;
    }
    const header = HEADER_LINE.exec(line);
    if (header !== null) {
      const parts = keyParts(header[2]!);
      let path = "";
      parts.forEach((part, i) => {
        path = path === "" ? part : `${path}.${part}`;
        const isArrayHeader = header[1] === "[[" && i === parts.length - 1;
        if (isArrayHeader) {
          if (!lines.has(path)) lines.set(path, index + 1);
          const next = (arrays.get(path) ?? -1) + 1;
          arrays.set(path, next);
          path = `${path}[${next}]`;
        } else if (arrays.has(path)) path = `${path}[${arrays.get(path)}]`;
      });
      table = path;
      if (!lines.has(path)) lines.set(path, index + 1);
      return;
    }
    const key = KEY_LINE.exec(line);
    if (key !== null) {
      const field = keyParts(key[1]!).join(".");
      const path = table === "" ? field : `${table}.${field}`;
      if (!lines.has(path)) lines.set(path, index + 1);
      const rest = line.slice(key[0].length);
      for (const quotes of ['"""', "'''"]) {
        if (rest.split(quotes).length === 2) inMultiline = quotes;
      }
    }
  });
  return lines;
}

const TOML_POSITION = /^line (\d+), column \d+$/;
const LAST_STEP = /(?:\[\d+\]|\.[^.[\]]+)$/;

function lineOf(location: string, lines: ReadonlyMap<string, number>): number | null {
  const position = TOML_POSITION.exec(location);
  if (position !== null) return Number(position[1]);
  for (let path = location; path !== ""; ) {
    const line = lines.get(path);
    if (line !== undefined) return line;
    const shorter = path.replace(LAST_STEP, "");
    if (shorter === path) break;
    path = shorter;
  }
  return null;
}
