// The part of evaluation that needs no directory facts: policies, changed paths, CODEOWNERS, owner sets, latest reviews.
// Shared by evaluate() and planLookups() so the fetcher looks up exactly what the evaluation will read.
import {
  MAX_CODEOWNERS_BYTES,
  MAX_MATCH_STEPS,
  MAX_OPEN_PULL_REQUESTS,
  MAX_POLICY_FILE_BYTES,
  MAX_PULL_REQUEST_FILES,
  MAX_RESOLVED_OWNERS,
  MAX_REVIEWS,
} from "../policy/bounds.ts";
import { ownerKind, parseCodeowners, type CodeownersError, type ParsedCodeowners } from "../policy/codeowners.ts";
import { MatchBudget, MatchBudgetExceeded } from "../policy/match-budget.ts";
import { nonDelegableSet, type NonDelegableSet } from "../policy/non-delegable.ts";
import { compilePattern, type CompiledPattern } from "../policy/pattern.ts";
import {
  breakGlassSettings,
  parseOrganizationPolicy,
  parseRepositoryPolicy,
  repositoryPolicyOptsOut,
  type BreakGlassSettings,
  type OrganizationPolicy,
  type PolicyError,
  type RepositoryPolicy,
} from "../policy/policy-files.ts";
import { PatternIndex } from "../policy/rule-index.ts";
import { utf8ByteLength } from "../policy/utf8.ts";
import { t, type Reason, type ReasonCode, type Text } from "./decision.ts";
import { codeownersLocations, type EvaluationSettings, type Evidence, type FileRead, type Gap, type Review } from "./evidence.ts";

export interface Delegation {
  readonly app: string;
  /** Whether one of the delegation's `paths` patterns matches the path (work spent from the evaluation's budget). */
  covers(path: string): boolean;
  /** Lower-cased owners this delegation may stand in for; null for any owner. */
  readonly owners: ReadonlySet<string> | null;
  readonly requiredLabel: string | null;
}

export interface OwnerGroup {
  /** Owners as first spelled in CODEOWNERS, sorted case-insensitively. */
  readonly owners: readonly string[];
  readonly paths: readonly string[];
  /** The patterns of the rules that matched the group's paths, sorted, without duplicates. */
  readonly patterns: readonly string[];
}

export interface LatestReview {
  readonly review: Review & { readonly user: NonNullable<Review["user"]> };
  /** APPROVED, CHANGES_REQUESTED or DISMISSED. */
  readonly state: string;
}

export interface Analysis {
  readonly kind: "analysed";
  readonly reasons: Reason[];
  readonly requiredApprovals: number;
  readonly trustedApps: readonly { readonly slug: string; readonly app_id: number }[];
  readonly delegations: readonly Delegation[];
  readonly nonDelegable: NonDelegableSet;
  readonly codeownersPath: string | null;
  /** Invalid lines of the code-owners file in force (the reason lists at most 50; the change preview lists them all). */
  readonly codeownersErrors: readonly CodeownersError[];
  /** Errors of the repository policy, when it was read and is invalid. */
  readonly repositoryPolicyErrors: readonly PolicyError[];
  readonly groups: readonly OwnerGroup[];
  readonly unownedPathCount: number;
  /** Latest non-comment review per reviewer, in forge order of those reviews; null when the review list is unusable. */
  readonly latestReviews: readonly LatestReview[] | null;
  /** Reviews without a user (deleted accounts): listed so the output can say why they do not count. */
  readonly anonymousReviews: number;
  readonly sharedHeadWith: readonly number[];
  readonly organizationOwned: boolean;
  /** Whether the organization enables break-glass overrides here (DESIGN 3.11), and with which settings, or why not. */
  readonly breakGlass: { readonly kind: "enabled"; readonly settings: BreakGlassSettings } | { readonly kind: "not_enabled"; readonly why: Text };
}

export type AnalysisResult = Analysis | { readonly kind: "not_enabled"; readonly why: Text } | { readonly kind: "retry"; readonly reasons: Reason[] };

const KNOWN_STATUSES = new Set(["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]);
const DECISIVE_STATES = new Set(["APPROVED", "CHANGES_REQUESTED", "DISMISSED"]);

function gapReason(code: ReasonCode, what: Text, gap: { cause: Gap["cause"]; detail: string }): Reason {
  return { code, message: [...what, gap.cause === "transient" ? " could not be read: " : " is incomplete: ", gap.detail], transient: gap.cause === "transient" };
}

function policyDetails(errors: readonly PolicyError[]): Text[] {
  return errors.map((error) => t`${error.location}: ${error.message}`);
}

/** Reads a file under a byte bound; `tooLarge` says whether a size breaks it. The larger of reported and actual size counts. */
function readSizedFile(read: FileRead, tooLarge: (bytes: number) => boolean): { kind: "text"; text: string } | { kind: "too_large"; bytes: number } | { kind: "other" } {
  if (read.kind === "too_large") return { kind: "too_large", bytes: read.bytes };
  if (read.kind !== "found") return { kind: "other" };
  const bytes = Math.max(read.bytes, utf8ByteLength(read.text));
  return tooLarge(bytes) ? { kind: "too_large", bytes } : { kind: "text", text: read.text };
}

const codeownersTooLarge = (bytes: number) => bytes >= MAX_CODEOWNERS_BYTES;
const policyTooLarge = (bytes: number) => bytes > MAX_POLICY_FILE_BYTES;

/**
 * Picks the code-owners file by precedence (DESIGN 3.2 rule 1); an unread or failed earlier location blocks later ones. The
 * parse is charged to `budget` (MatchBudgetExceeded past its limit).
 */
function selectCodeowners(evidence: Evidence, forgeDirectory: string, reasons: Reason[], budget: MatchBudget): { path: string; parsed: ParsedCodeowners } | null {
  for (const location of codeownersLocations(forgeDirectory)) {
    const read = evidence.codeowners[location];
    if (read === undefined) {
      reasons.push({ code: "codeowners_incomplete", message: t`the code-owners location ${location} was not read`, transient: false });
      return null;
    }
    if (read.kind === "missing") continue;
    if (read.kind === "incomplete") {
      reasons.push(gapReason("codeowners_incomplete", t`the code-owners file ${location}`, read));
      return null;
    }
    // A too_large read, or a found one at or over the bound, loads nothing (DESIGN 3.6).
    const sized = readSizedFile(read, codeownersTooLarge);
    if (sized.kind === "too_large") {
      reasons.push({
        code: "codeowners_too_large",
        message: t`the code-owners file ${location} is ${sized.bytes} bytes; it must be under ${MAX_CODEOWNERS_BYTES} bytes`,
        transient: false,
      });
      return null;
    }
    if (sized.kind !== "text") return null;
    const parsed = parseCodeowners(sized.text, budget);
    if (parsed.errors.length > 0) {
      reasons.push({
        code: "codeowners_invalid",
        message: [...t`the code-owners file ${location} has ${parsed.errors.length}`, parsed.errors.length === 1 ? " invalid line" : " invalid lines"],
        transient: false,
        details: parsed.errors.slice(0, 50).map((error) => t`line ${error.line}: ${error.message}`),
      });
    }
    return { path: location, parsed };
  }
  return null;
}

/** The reason an evaluation fails closed when its path matching would need more than `budget.limit` steps. */
export function matchingBudgetReason(budget: MatchBudget): Reason {
  return {
    code: "matching_budget_exceeded",
    message: t`matching the changed paths against the code-owners, delegation and guardrail patterns needs more than ${budget.limit} steps; use fewer ${"**"} per pattern or fewer patterns that match at any depth`,
    transient: false,
  };
}

function compileDelegations(policyDelegations: RepositoryPolicy["delegations"], budget: MatchBudget): Delegation[] {
  return (policyDelegations ?? []).map((delegation) => {
    const patterns: CompiledPattern[] = [];
    for (const source of delegation.paths) {
      const compiled = compilePattern(source);
      if (compiled.ok) patterns.push(compiled.pattern);
    }
    const index = new PatternIndex(patterns);
    return {
      app: delegation.app,
      covers: (path: string) => index.matchesAny(path, budget),
      owners: delegation.owners === undefined ? null : new Set(delegation.owners.map((owner) => owner.toLowerCase())),
      requiredLabel: delegation.required_label ?? null,
    };
  });
}

/**
 * Whether the repository policy read at a commit enables the service there (enrollment, DESIGN 3.12), decided as analyze()
 * decides `not_enabled`: no policy file, `enabled = false` (even in an otherwise invalid file), or a valid policy that does not
 * say `enabled = true` is `not_enrolled`; a policy the service would judge (valid and enabled, invalid, over its bound) is
 * `enrolled`; a read that did not complete is `unknown` (read again later).
 */
export function repositoryEnrollment(read: FileRead): "enrolled" | "not_enrolled" | "unknown" {
  if (read.kind === "missing") return "not_enrolled";
  if (read.kind === "incomplete") return "unknown";
  const sized = readSizedFile(read, policyTooLarge);
  if (sized.kind !== "text") return "enrolled";
  if (repositoryPolicyOptsOut(sized.text)) return "not_enrolled";
  const parsed = parseRepositoryPolicy(sized.text);
  return parsed.kind === "ok" && parsed.policy.enabled !== true ? "not_enrolled" : "enrolled";
}

/**
 * `budget` bounds the path matching of the whole evaluation (MAX_MATCH_STEPS unless a test passes its own): the CODEOWNERS
 * match here, and the delegation and non-delegable checks that the owner sets run later on the returned analysis.
 */
export function analyze(evidence: Omit<Evidence, "directory">, settings: EvaluationSettings, budget = new MatchBudget(MAX_MATCH_STEPS)): AnalysisResult {
  const reasons: Reason[] = [];
  const pr = evidence.pullRequest;

  // Repository policy (base commit): decides whether the repository opted in at all.
  const repoRead = evidence.repositoryPolicy;
  let requiredApprovals = 1;
  let delegationsSource: NonNullable<RepositoryPolicy["delegations"]> = [];
  let repositoryPolicyErrors: readonly PolicyError[] = [];
  if (repoRead.kind === "missing") return { kind: "not_enabled", why: t`no repository policy at ${settings.policyPath}` };
  if (repoRead.kind === "incomplete") {
    const reason = gapReason("repository_policy_incomplete", t`the repository policy ${settings.policyPath}`, repoRead);
    if (reason.transient) return { kind: "retry", reasons: [reason] };
    reasons.push(reason);
  } else {
    const sized = readSizedFile(repoRead, policyTooLarge);
    if (sized.kind === "too_large") {
      reasons.push({ code: "repository_policy_invalid", message: t`the repository policy is ${sized.bytes} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`, transient: false });
    } else if (sized.kind === "text") {
      if (repositoryPolicyOptsOut(sized.text)) return { kind: "not_enabled", why: t`the repository policy says ${"enabled = false"}` };
      const parsed = parseRepositoryPolicy(sized.text);
      if (parsed.kind === "invalid") {
        repositoryPolicyErrors = parsed.errors;
        reasons.push({ code: "repository_policy_invalid", message: t`the repository policy ${settings.policyPath} is invalid`, transient: false, details: policyDetails(parsed.errors) });
      } else {
        if (parsed.policy.enabled !== true) return { kind: "not_enabled", why: t`the repository policy does not say ${"enabled = true"}` };
        requiredApprovals = parsed.policy.required_approvals ?? 1;
        delegationsSource = parsed.policy.delegations ?? [];
      }
    }
  }

  // Organization policy: enrollment and guardrails. 404 (missing) means neither (DESIGN 3.6).
  let organization: OrganizationPolicy | null = null;
  const orgRead = evidence.organizationPolicy;
  if (orgRead.kind === "incomplete") reasons.push(gapReason("organization_policy_incomplete", t`the organization policy`, orgRead));
  else if (orgRead.kind !== "missing") {
    const sized = readSizedFile(orgRead, policyTooLarge);
    if (sized.kind === "too_large") {
      reasons.push({ code: "organization_policy_invalid", message: t`the organization policy is ${sized.bytes} bytes; the limit is ${MAX_POLICY_FILE_BYTES}`, transient: false });
    } else if (sized.kind === "text") {
      const parsed = parseOrganizationPolicy(sized.text);
      if (parsed.kind === "invalid") {
        reasons.push({ code: "organization_policy_invalid", message: t`the organization policy is invalid`, transient: false, details: policyDetails(parsed.errors) });
      } else organization = parsed.policy;
    }
  }
  const organizationUsable = orgRead.kind === "missing" || organization !== null;
  const trustedApps = organization?.trusted_apps ?? [];
  if (organizationUsable) {
    const enrolled = new Set(trustedApps.map((app) => app.slug));
    const notEnrolled = delegationsSource.flatMap((delegation, index) => (enrolled.has(delegation.app) ? [] : [t`${`delegations[${index}].app`}: App ${delegation.app} is not enrolled in the organization policy's trusted_apps`]));
    if (notEnrolled.length > 0) {
      reasons.push({ code: "delegation_app_not_enrolled", message: t`the repository policy delegates to an App the organization did not enroll`, transient: false, details: notEnrolled });
    }
  }
  const nonDelegable = nonDelegableSet({
    forgeDirectory: settings.forgeDirectory,
    policyPath: settings.policyPath,
    enrolledAppSlugs: trustedApps.map((app) => app.slug),
    guardrails: organization?.guardrails?.non_delegable_paths ?? [],
    allowInsecureChanges: settings.allowInsecureChanges,
  }, budget);

  // Shared head (DESIGN 3.2 rule 7).
  let sharedHeadWith: number[] = [];
  const sameHead = evidence.sameHeadPullRequests;
  if (!sameHead.complete) reasons.push(gapReason("same_head_incomplete", t`the list of open pull requests on this head`, sameHead));
  else if (sameHead.items.length > MAX_OPEN_PULL_REQUESTS) {
    reasons.push({ code: "same_head_incomplete", message: t`more than ${MAX_OPEN_PULL_REQUESTS} open pull requests are on this head`, transient: false });
  } else {
    sharedHeadWith = [...new Set(sameHead.items.filter((other) => other.number !== pr.number && other.headSha === pr.headSha).map((other) => other.number))].sort((a, b) => a - b);
    if (sharedHeadWith.length > 0) {
      reasons.push({ code: "shared_head", message: t`the head commit is shared by another open pull request: ${sharedHeadWith.map((n) => `#${n}`).join(", ")}`, transient: false });
    }
  }

  // Changed paths, with the previous path of renames (invariant 6).
  const paths = new Set<string>();
  if (!Number.isSafeInteger(pr.changedFiles) || pr.changedFiles < 0) {
    reasons.push({ code: "files_inconsistent", message: t`the pull request reports an invalid changed_files count`, transient: false });
  } else if (pr.changedFiles >= MAX_PULL_REQUEST_FILES) {
    reasons.push({ code: "too_many_files", message: t`the pull request changes ${pr.changedFiles} files; at ${MAX_PULL_REQUEST_FILES} or more completeness cannot be proved, so split it`, transient: false });
  } else if (!evidence.files.complete) {
    reasons.push(gapReason("files_incomplete", t`the list of changed files`, evidence.files));
  } else if (evidence.files.items.length !== pr.changedFiles) {
    reasons.push({ code: "files_inconsistent", message: t`the pull request reports ${pr.changedFiles} changed files but ${evidence.files.items.length} were listed`, transient: false });
  } else {
    const renameProblems: Text[] = [];
    for (const file of evidence.files.items) {
      if (typeof file.filename !== "string" || file.filename === "") {
        renameProblems.push(t`a changed file has no name`);
        continue;
      }
      paths.add(file.filename);
      if (!KNOWN_STATUSES.has(file.status)) renameProblems.push(t`${file.filename} has an unknown status ${String(file.status)}`);
      if (file.status === "renamed" || file.status === "copied") {
        if (typeof file.previousFilename !== "string" || file.previousFilename === "") renameProblems.push(t`${file.filename} is ${file.status} but its previous path is not given`);
        else paths.add(file.previousFilename);
      } else if (typeof file.previousFilename === "string" && file.previousFilename !== "") paths.add(file.previousFilename);
    }
    if (renameProblems.length > 0) {
      reasons.push({ code: "rename_incomplete", message: t`rename evidence is incomplete`, transient: false, details: renameProblems.slice(0, 50) });
    }
  }

  // Code owners and owner sets (DESIGN 3.2 rules 1-2).
  let selected: ReturnType<typeof selectCodeowners> = null;
  let parsedOverBudget = false;
  try {
    selected = selectCodeowners(evidence as Evidence, settings.forgeDirectory, reasons, budget);
  } catch (error) {
    if (!(error instanceof MatchBudgetExceeded)) throw error;
    // Parsing is matching work too (issue 25 item 5): over the budget, the same outcome as a match that runs out.
    reasons.push(matchingBudgetReason(budget));
    parsedOverBudget = true;
  }
  const groupsByKey = new Map<string, { owners: string[]; paths: string[]; patterns: string[] }>();
  let unownedPathCount = 0;
  const sortedPaths = [...paths].sort();
  if (selected !== null) {
    // Owner-set key per rule line: owners deduplicated case-insensitively, sorted, so equal sets group together.
    const groupOfLine = new Map<number, { owners: string[]; paths: string[]; patterns: string[] }>();
    try {
      for (const path of sortedPaths) {
        const match = selected.parsed.match(path, budget);
        if (match === null || match.owners.length === 0) {
          unownedPathCount++;
          continue;
        }
        let group = groupOfLine.get(match.line);
        if (group === undefined) {
          const unique = new Map<string, string>();
          for (const owner of match.owners) if (!unique.has(owner.toLowerCase())) unique.set(owner.toLowerCase(), owner);
          const keys = [...unique.keys()].sort();
          const key = keys.join(" ");
          group = groupsByKey.get(key);
          if (group === undefined) {
            group = { owners: keys.map((k) => unique.get(k)!), paths: [], patterns: [] };
            groupsByKey.set(key, group);
          }
          groupOfLine.set(match.line, group);
          group.patterns.push(patternAt(selected.parsed.rules, match.line));
        }
        group.paths.push(path);
      }
    } catch (error) {
      if (!(error instanceof MatchBudgetExceeded)) throw error;
      // No partial owner sets: the evaluation fails closed on this reason (DESIGN 3.6 "Outcomes": over a bound).
      reasons.push(matchingBudgetReason(budget));
      groupsByKey.clear();
      unownedPathCount = 0;
    }
  } else if (!parsedOverBudget) unownedPathCount = sortedPaths.length;
  const groups = [...groupsByKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, group]) => ({ ...group, patterns: [...new Set(group.patterns)].sort() }));

  const resolvable = new Set<string>();
  for (const group of groups) for (const owner of group.owners) if (ownerKind(owner) !== "email") resolvable.add(owner.toLowerCase());
  if (resolvable.size > MAX_RESOLVED_OWNERS) {
    reasons.push({ code: "too_many_owners", message: t`the changed paths have ${resolvable.size} distinct owners; at most ${MAX_RESOLVED_OWNERS} are resolved per evaluation`, transient: false });
  }

  // Reviews: latest non-comment review per reviewer (DESIGN 3.2 rule 3).
  let latestReviews: LatestReview[] | null = null;
  let anonymousReviews = 0;
  if (!evidence.reviews.complete) reasons.push(gapReason("reviews_incomplete", t`the list of reviews`, evidence.reviews));
  else if (evidence.reviews.items.length > MAX_REVIEWS) {
    reasons.push({ code: "too_many_reviews", message: t`the pull request has more than ${MAX_REVIEWS} reviews`, transient: false });
  } else {
    const latest = new Map<number, LatestReview>();
    for (const review of evidence.reviews.items) {
      const state = String(review.state).toUpperCase();
      if (review.user === null) {
        anonymousReviews++;
        continue;
      }
      if (!DECISIVE_STATES.has(state)) continue;
      latest.delete(review.user.id); // keep map order = order of each reviewer's latest review
      latest.set(review.user.id, { review: review as LatestReview["review"], state });
    }
    latestReviews = [...latest.values()];
  }

  return {
    kind: "analysed",
    reasons,
    requiredApprovals,
    trustedApps,
    delegations: compileDelegations(delegationsSource, budget),
    nonDelegable,
    codeownersPath: selected?.path ?? null,
    codeownersErrors: selected?.parsed.errors ?? [],
    repositoryPolicyErrors,
    groups,
    unownedPathCount,
    latestReviews,
    anonymousReviews,
    sharedHeadWith,
    organizationOwned: evidence.repository.ownerType === "Organization",
    breakGlass: breakGlassState(evidence, orgRead, organization),
  };
}

/** DESIGN 3.11: only a usable organization policy with a `[break_glass]` section enables overrides, in its organization. */
function breakGlassState(evidence: Omit<Evidence, "directory">, read: FileRead, organization: OrganizationPolicy | null): Analysis["breakGlass"] {
  if (evidence.repository.ownerType !== "Organization") return { kind: "not_enabled", why: t`the repository is not owned by an organization, whose policy alone can enable break-glass overrides` };
  if (read.kind === "missing") return { kind: "not_enabled", why: t`there is no organization policy, so break-glass overrides are not enabled` };
  if (organization === null) return { kind: "not_enabled", why: t`the organization policy could not be used, so break-glass overrides are not enabled` };
  const settings = breakGlassSettings(organization);
  if (settings === null) return { kind: "not_enabled", why: t`the organization policy has no ${"[break_glass]"} section, so break-glass overrides are not enabled` };
  return { kind: "enabled", settings };
}

/**
 * The pattern of the rule on `line`, by binary search over the rules in file order (ascending lines): a group asks once per
 * rule that opens it, so an evaluation never indexes all of a 10,000-rule file for the few rules that matched.
 */
function patternAt(rules: readonly { readonly line: number; readonly pattern: string }[], line: number): string {
  let low = 0;
  let high = rules.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const rule = rules[middle]!;
    if (rule.line === line) return rule.pattern;
    if (rule.line < line) low = middle + 1;
    else high = middle - 1;
  }
  return "";
}
