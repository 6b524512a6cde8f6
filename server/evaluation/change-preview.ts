// The change preview (issue 19 item 2): what a pull request's edit of the code-owners file or the repository policy would do
// once merged, shown after the decision and never part of it. Pure and browser-safe: the worker and the playground run it.
// Both sides go through analyze(), the decision's own policy parsing, code-owners selection by location precedence, matching
// (spending one MatchBudget of MAX_PREVIEW_MATCH_STEPS, a quarter of a decision's, for the whole preview) and owner-set
// grouping; App delegations go through eligibility.ts's holdingDelegations and delegationCovers (delegationAllows in two
// steps). There is no second implementation of any of them here.
// It shows no more of the organization policy than the base decision's output does (issue 25 item 7): whether an App is
// enrolled shows only for Apps the base's repository policy delegates to (the base decision says which of those are not
// enrolled); a delegation the head adds to any other App is named in a note, never evaluated against the enrollment.
// Its work must not grow with the size of an owner set times the paths (issue 25 item 1): what depends on a group's owners
// (its comparison key, the delegations that hold for it) is computed once per group, never per path.
import { MAX_PREVIEW_MATCH_STEPS } from "../policy/bounds.ts";
import { MatchBudget, MatchBudgetExceeded } from "../policy/match-budget.ts";
import { utf8ByteLength } from "../policy/utf8.ts";
import { analyze, matchingBudgetReason, type Analysis, type AnalysisResult } from "./analyze.ts";
import { t, type Reason, type ReasonCode, type Text } from "./decision.ts";
import { delegationCovers, holdingDelegations } from "./eligibility.ts";
import {
  codeownersLocations,
  DEFAULT_EVALUATION_SETTINGS,
  type ChangedFile,
  type CodeownersEvidence,
  type CodeownersLocation,
  type EvaluationSettings,
  type Evidence,
  type FileRead,
} from "./evidence.ts";

/** Invalid lines and policy errors listed before the rest are counted. */
export const MAX_PREVIEW_PROBLEMS = 50;
/** Apps named in the note on delegations the preview does not evaluate, before the rest are counted. */
const MAX_UNDISCLOSED_APPS_NAMED = 10;
/** Changed paths whose owner set would change, listed before the rest are counted. */
export const MAX_PREVIEW_CHANGES = 100;

/** Who would have to approve a path: the owner set as the decision groups it, and the Apps a delegation lets approve there. */
export interface OwnerSetLabel {
  /** Owners as first spelled, deduplicated case-insensitively and sorted (the decision's owner-set key); empty: unowned. */
  readonly owners: readonly string[];
  /**
   * Enrolled Apps whose approval may count on this path through a delegation of the repository policy, sorted; only Apps the
   * base's policy delegates to (the others' enrollment is not disclosed before merging).
   */
  readonly apps: readonly string[];
}

export interface OwnershipChange {
  readonly path: string;
  readonly before: OwnerSetLabel;
  readonly after: OwnerSetLabel;
}

/** An invalid code-owners line or a repository policy error of the head's files. */
export interface PreviewProblem {
  readonly file: string;
  /** The line when the parser names one (code-owners lines, TOML syntax errors); null for a policy field error. */
  readonly line: number | null;
  /** The parser's message, prefixed by the field path for policy field errors (`delegations[0].app: ...`). */
  readonly message: string;
}

export interface ChangePreview {
  readonly kind: "preview";
  /** The code-owners file in force before and after the change (null: none). */
  readonly codeownersPath: { readonly before: string | null; readonly after: string | null };
  /** The head's invalid code-owners lines (file order), then its repository policy errors; at most MAX_PREVIEW_PROBLEMS. */
  readonly invalid: readonly PreviewProblem[];
  readonly invalidOmitted: number;
  /** Other reasons the head's files would fail the decision (too large, an App not enrolled...), worded as the decision words them. */
  readonly problems: readonly Reason[];
  /** `required_approvals` before and after, when the change moves it. */
  readonly requiredApprovals: { readonly before: number; readonly after: number } | null;
  /** Changed paths whose owner set or delegated Apps differ, sorted by path; at most MAX_PREVIEW_CHANGES. */
  readonly ownershipChanges: readonly OwnershipChange[];
  readonly ownershipChangesOmitted: number;
  /** Why ownership could not be compared, or that the change turns the check on or off. Empty in the usual case. */
  readonly notes: readonly Text[];
}

/** The head's files could not be read completely: the preview is left out and this says why. */
export interface PreviewUnavailable {
  readonly kind: "unavailable";
  readonly why: Text;
}

export type PreviewResult = ChangePreview | PreviewUnavailable;

/** One side's policy files as read (the worker's evidence; a too-large or unread file is a FileRead like in the decision). */
export interface PreviewSideReads {
  readonly codeowners: CodeownersEvidence;
  readonly repositoryPolicy: FileRead;
}

export interface PreviewReadsInput {
  readonly base: PreviewSideReads;
  readonly head: PreviewSideReads;
  readonly files: readonly ChangedFile[];
  readonly organizationPolicy: FileRead;
  readonly organizationOwned: boolean;
  /** The pull request's labels (a delegation may require one). */
  readonly labels: readonly string[];
  readonly settings: EvaluationSettings;
  /** The matching work the whole preview may spend (both sides); MAX_PREVIEW_MATCH_STEPS unless a test passes its own. */
  readonly budget?: MatchBudget;
}

/** One side's files as text (the playground's editors): a file not given is absent. */
export interface PreviewFiles {
  readonly codeowners?: { readonly path: CodeownersLocation; readonly text: string };
  readonly repositoryPolicy?: string;
}

export interface ChangePreviewInput {
  readonly base: PreviewFiles;
  readonly head: PreviewFiles;
  /** The pull request's changed files: paths (read as modified) or the forge's entries (renames name their previous path). */
  readonly changedFiles: readonly (string | ChangedFile)[];
  /** The organization policy text; absent when there is none. */
  readonly organizationPolicy?: string;
  readonly organizationOwned?: boolean;
  readonly labels?: readonly string[];
  /** `policyPath`, `forgeDirectory` and `allowInsecureChanges` matter; DEFAULT_EVALUATION_SETTINGS when absent. */
  readonly settings?: EvaluationSettings;
  readonly budget?: MatchBudget;
}

/** Every path the decision looks at: each changed file and the previous path of a rename or copy. */
export function changedPaths(files: readonly ChangedFile[]): Set<string> {
  const paths = new Set<string>();
  for (const file of files) {
    if (typeof file.filename === "string" && file.filename !== "") paths.add(file.filename);
    if (typeof file.previousFilename === "string" && file.previousFilename !== "") paths.add(file.previousFilename);
  }
  return paths;
}

/**
 * Which head files the preview needs, or null when the pull request changes none that matters: the code-owners file the base
 * uses or one at a location of higher precedence (with no code-owners file at the base, any location), and the repository
 * policy at `policyPath`. The worker reads them at the head only in that case.
 */
export function headReadsNeeded(files: readonly ChangedFile[], base: CodeownersEvidence, where: Pick<EvaluationSettings, "policyPath" | "forgeDirectory">): { readonly codeowners: boolean; readonly repositoryPolicy: boolean } | null {
  const paths = changedPaths(files);
  let codeowners = false;
  for (const location of codeownersLocations(where.forgeDirectory)) {
    if (paths.has(location)) codeowners = true;
    const read = base[location];
    if (read === undefined || read.kind !== "missing") break; // the base's file (or an unread location): later ones cannot win
  }
  const repositoryPolicy = paths.has(where.policyPath);
  return codeowners || repositoryPolicy ? { codeowners, repositoryPolicy } : null;
}

const found = (path: string, text: string): FileRead => ({ kind: "found", path, text, bytes: utf8ByteLength(text) });

function sideReads(files: PreviewFiles, settings: EvaluationSettings): PreviewSideReads {
  const { policyPath } = settings;
  const codeowners: Record<CodeownersLocation, FileRead> = {};
  for (const location of codeownersLocations(settings.forgeDirectory)) {
    codeowners[location] = files.codeowners?.path === location ? found(location, files.codeowners.text) : { kind: "missing" };
  }
  return { codeowners, repositoryPolicy: files.repositoryPolicy === undefined ? { kind: "missing" } : found(policyPath, files.repositoryPolicy) };
}

/** The preview of a change given as texts (the playground). */
export function previewChange(input: ChangePreviewInput): PreviewResult {
  const settings = input.settings ?? DEFAULT_EVALUATION_SETTINGS;
  return previewFromReads({
    base: sideReads(input.base, settings),
    head: sideReads(input.head, settings),
    files: input.changedFiles.map((file) => (typeof file === "string" ? { filename: file, status: "modified" } : file)),
    organizationPolicy: input.organizationPolicy === undefined ? { kind: "missing" } : found(settings.policyPath, input.organizationPolicy),
    organizationOwned: input.organizationOwned ?? false,
    labels: input.labels ?? [],
    settings,
    ...(input.budget ? { budget: input.budget } : {}),
  });
}

/** The preview of the pull request in `evidence`, or null when its evidence carries no head files (no policy file changed). */
export function previewFromEvidence(evidence: Evidence, settings: EvaluationSettings): PreviewResult | null {
  const head = evidence.headFiles;
  if (head === undefined) return null;
  if (!evidence.files.complete) return { kind: "unavailable", why: t`the changed files could not be listed completely` };
  const base: PreviewSideReads = { codeowners: evidence.codeowners, repositoryPolicy: evidence.repositoryPolicy };
  return previewFromReads({
    base,
    head,
    files: evidence.files.items,
    organizationPolicy: evidence.organizationPolicy,
    organizationOwned: evidence.repository.ownerType === "Organization",
    labels: evidence.pullRequest.labels,
    settings,
  });
}

/** The decision's analysis of one side: the same pull request with that side's policy files and no reviews. */
function analyseSide(side: PreviewSideReads, input: PreviewReadsInput, budget: MatchBudget): AnalysisResult {
  const evidence: Omit<Evidence, "directory"> = {
    evidenceVersion: 1,
    repository: { owner: "", name: "", ownerType: input.organizationOwned ? "Organization" : "User" },
    pullRequest: { number: 0, headSha: "", baseSha: "", baseRef: "", author: { id: 0, login: "" }, state: "open", draft: false, labels: input.labels, changedFiles: input.files.length },
    files: { complete: true, items: input.files },
    reviews: { complete: true, items: [] },
    codeowners: side.codeowners,
    repositoryPolicy: side.repositoryPolicy,
    organizationPolicy: input.organizationPolicy,
    sameHeadPullRequests: { complete: true, items: [] },
  };
  return analyze(evidence, input.settings, budget);
}

/** Reasons about the head's policy files themselves (the rest concern the pull request, which the preview does not change). */
const HEAD_FILE_CODES: ReadonlySet<ReasonCode> = new Set([
  "codeowners_invalid",
  "codeowners_too_large",
  "codeowners_incomplete",
  "repository_policy_invalid",
  "repository_policy_incomplete",
  "delegation_app_not_enrolled",
]);
/** Reasons on either side that leave no owner sets to compare, or owner sets that do not mean what they would after merging. */
const NO_COMPARISON_CODES: ReadonlySet<ReasonCode> = new Set([
  "codeowners_too_large",
  "codeowners_incomplete",
  "too_many_files",
  "files_incomplete",
  "files_inconsistent",
  "matching_budget_exceeded",
]);

function unreadable(read: FileRead | undefined): read is Extract<FileRead, { kind: "incomplete" }> {
  return read?.kind === "incomplete";
}

/** The preview from both sides' reads (the worker's evidence). */
export function previewFromReads(input: PreviewReadsInput): PreviewResult {
  // A head file that could not be read: no preview rather than one computed from a file the pull request does not have.
  const failed = [...codeownersLocations(input.settings.forgeDirectory).map((location) => input.head.codeowners[location]), input.head.repositoryPolicy].find(unreadable);
  if (failed !== undefined) return { kind: "unavailable", why: t`a policy file could not be read at the head commit (${failed.detail})` };
  const budget = input.budget ?? new MatchBudget(MAX_PREVIEW_MATCH_STEPS);
  let before: AnalysisResult;
  let after: AnalysisResult;
  try {
    before = analyseSide(input.base, input, budget);
    after = analyseSide(input.head, input, budget);
  } catch (error) {
    // Matching inside analyze() is caught there; this is work charged outside it (such as parsing) that ran out.
    if (!(error instanceof MatchBudgetExceeded)) throw error;
    return { kind: "unavailable", why: t`the preview needs more than ${budget.limit} path-matching steps` };
  }

  const notes: Text[] = [];
  const invalid: PreviewProblem[] = [];
  let invalidCount = 0;
  const problems: Reason[] = [];
  // Apps whose enrollment the base decision's output already shows; the others' stays undisclosed.
  const disclosed = new Set(before.kind === "analysed" ? before.delegations.map((delegation) => delegation.app) : []);
  const undisclosed = after.kind === "analysed" ? [...new Set(after.delegations.map((delegation) => delegation.app).filter((app) => !disclosed.has(app)))].sort() : [];
  if (after.kind === "analysed") {
    const codeownersFile = after.codeownersPath ?? "CODEOWNERS";
    for (const error of after.codeownersErrors) {
      if (invalid.length >= MAX_PREVIEW_PROBLEMS) break;
      invalid.push({ file: codeownersFile, line: error.line, message: error.message });
    }
    for (const error of after.repositoryPolicyErrors) {
      if (invalid.length >= MAX_PREVIEW_PROBLEMS) break;
      const line = /^line (\d+)/.exec(error.location);
      invalid.push({ file: input.settings.policyPath, line: line ? Number(line[1]) : null, message: line ? error.message : `${error.location}: ${error.message}` });
    }
    invalidCount = after.codeownersErrors.length + after.repositoryPolicyErrors.length;
    for (const reason of after.reasons) {
      if (!HEAD_FILE_CODES.has(reason.code)) continue;
      if (reason.code === "codeowners_invalid") continue; // listed line by line above
      if (reason.code === "repository_policy_invalid" && after.repositoryPolicyErrors.length > 0) continue;
      if (reason.code === "delegation_app_not_enrolled") {
        // Only the Apps the base also delegates to: a detail naming another App (as a code part) is left out.
        const details = (reason.details ?? []).filter((detail) => !detail.some((part) => typeof part !== "string" && undisclosed.includes(part.code)));
        if (details.length > 0) problems.push({ ...reason, details });
        continue;
      }
      problems.push(reason);
    }
    if (undisclosed.length > 0) {
      const shown = undisclosed.slice(0, MAX_UNDISCLOSED_APPS_NAMED);
      const more = undisclosed.length > shown.length ? [`, and ${undisclosed.length - shown.length} more`] : [];
      notes.push([
        ...t`delegations to Apps the base commit's policy does not delegate to are not previewed (the organization's enrollment is shown once the change is merged): `,
        ...shown.flatMap((app, index) => (index === 0 ? t`${app}` : t`, ${app}`)),
        ...more,
      ]);
    }
  } else if (after.kind === "retry") {
    return { kind: "unavailable", why: t`the repository policy could not be read at the head commit` };
  } else notes.push(t`after this change the check would not run: ${after.why}`);
  if (before.kind === "not_enabled" && after.kind === "analysed") notes.push(t`the check is not enabled at the base commit; this change turns it on`);

  let ownershipChanges: OwnershipChange[] = [];
  let changedCount = 0;
  let requiredApprovals: ChangePreview["requiredApprovals"] = null;
  if (before.kind === "analysed" && after.kind === "analysed") {
    if (before.requiredApprovals !== after.requiredApprovals) requiredApprovals = { before: before.requiredApprovals, after: after.requiredApprovals };
    const blocking = [...before.reasons, ...after.reasons].find((reason) => NO_COMPARISON_CODES.has(reason.code));
    if (blocking !== undefined) notes.push(t`owner sets are not compared: ${blocking.message}`);
    else {
      try {
        const paths = [...changedPaths(input.files)].sort();
        const ownerIds = new Map<string, number>();
        const was = labels(before, paths, input.labels, ownerIds, disclosed);
        const will = labels(after, paths, input.labels, ownerIds, disclosed);
        for (const path of paths) {
          const a = was.get(path)!;
          const b = will.get(path)!;
          if (a.key === b.key) continue;
          changedCount++;
          if (ownershipChanges.length < MAX_PREVIEW_CHANGES) ownershipChanges.push({ path, before: a.label, after: b.label });
        }
      } catch (error) {
        if (!(error instanceof MatchBudgetExceeded)) throw error;
        notes.push(t`owner sets are not compared: ${matchingBudgetReason(budget).message}`);
        ownershipChanges = [];
        changedCount = 0;
      }
    }
  }
  return {
    kind: "preview",
    codeownersPath: { before: before.kind === "analysed" ? before.codeownersPath : null, after: after.kind === "analysed" ? after.codeownersPath : null },
    invalid,
    invalidOmitted: invalidCount - invalid.length,
    problems,
    requiredApprovals,
    ownershipChanges,
    ownershipChangesOmitted: changedCount - ownershipChanges.length,
    notes,
  };
}

const UNOWNED: OwnerSetLabel = { owners: [], apps: [] };

/** A label with its comparison key: owners compared case-insensitively as a set (by a number per distinct set), then Apps. */
interface KeyedLabel {
  readonly label: OwnerSetLabel;
  readonly key: string;
}

/**
 * Each path's owner set in `analysis`, with the enrolled Apps a delegation lets approve on that path alone. `ownerIds` numbers
 * each distinct owner set (lower-cased and joined once per group) and is shared by both sides, so keys compare by that number.
 */
function labels(analysis: Analysis, paths: readonly string[], prLabels: readonly string[], ownerIds: Map<string, number>, disclosed: ReadonlySet<string>): Map<string, KeyedLabel> {
  const idOf = (owners: readonly string[]) => {
    const joined = owners.map((owner) => owner.toLowerCase()).join(" ");
    let id = ownerIds.get(joined);
    if (id === undefined) ownerIds.set(joined, (id = ownerIds.size));
    return id;
  };
  const unowned: KeyedLabel = { label: UNOWNED, key: `${idOf([])}|` };
  const result = new Map<string, KeyedLabel>(paths.map((path) => [path, unowned]));
  const delegating = analysis.delegations.length > 0 ? analysis.trustedApps.map((app) => app.slug).filter((slug) => disclosed.has(slug)) : [];
  const context = { delegations: analysis.delegations, labels: prLabels };
  for (const group of analysis.groups) {
    const id = idOf(group.owners);
    const holding = delegating.map((slug) => ({ slug, delegations: holdingDelegations(slug, group.owners, context) })).filter((entry) => entry.delegations.length > 0);
    const byApps = new Map<string, KeyedLabel>();
    for (const path of group.paths) {
      const apps = holding.filter((entry) => delegationCovers(entry.slug, entry.delegations, [path], analysis.nonDelegable).value === "yes").map((entry) => entry.slug).sort();
      const appsKey = apps.join(" ");
      let keyed = byApps.get(appsKey);
      if (keyed === undefined) byApps.set(appsKey, (keyed = { label: { owners: group.owners, apps }, key: `${id}|${appsKey}` }));
      result.set(path, keyed);
    }
  }
  return result;
}
