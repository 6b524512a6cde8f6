// renderCheck(decision) → the check run's title, summary and text (issue 3 item 4). Rendered from the Decision only, plus,
// when the pull request changes a policy file, the change preview appended after the decision's summary (issue 19 item 2):
// the decision's own output is the same with or without it.
// Every field stays within the forge's check-output limit (MAX_CHECK_OUTPUT_CHARS); long lists are cut with "and N more".
import { MAX_CHECK_OUTPUT_CHARS, MAX_RENDERED_PATH_CHARS, MAX_RENDERED_PATHS_PER_SET } from "../policy/bounds.ts";
import type { OwnerSetLabel, PreviewResult } from "./change-preview.ts";
import type { Decision, OwnerSetResult, Reason, ReasonCode } from "./decision.ts";
import { code, escapeMarkdown, renderPlain, renderText } from "./escape.ts";

export interface CheckOutput {
  readonly title: string;
  readonly summary: string;
  readonly text: string;
}

/** Title phrases: fixed wording per reason, so no evidence-controlled text reaches the title except PR numbers. */
const REASON_TITLES: Record<ReasonCode, string> = {
  not_enabled: "Not enabled for this repository",
  repository_policy_invalid: "Repository policy is invalid",
  repository_policy_incomplete: "Repository policy could not be read",
  organization_policy_invalid: "Organization policy is invalid",
  organization_policy_incomplete: "Organization policy could not be read",
  delegation_app_not_enrolled: "Repository policy delegates to an App that is not enrolled",
  codeowners_invalid: "CODEOWNERS has invalid lines",
  codeowners_too_large: "CODEOWNERS is too large",
  codeowners_incomplete: "CODEOWNERS could not be read",
  too_many_files: "Too many changed files: split the pull request",
  files_incomplete: "Changed files could not be listed completely",
  files_inconsistent: "Changed-file evidence is contradictory",
  rename_incomplete: "Rename evidence is incomplete",
  reviews_incomplete: "Reviews could not be listed completely",
  too_many_reviews: "Too many reviews",
  shared_head: "Head commit is shared with another open pull request",
  same_head_incomplete: "Open pull requests on this head could not be listed",
  too_many_owners: "Too many distinct owners",
  matching_budget_exceeded: "Path matching exceeded its work bound",
  directory_incomplete: "Owner eligibility could not be established",
};

const STATUS_WORDS: Record<OwnerSetResult["status"], string> = {
  satisfied: "approved",
  missing: "needs approval",
  blocked: "changes requested",
  unknown: "could not be decided",
};

const TRUNCATION_NOTE = "\n\n_Output truncated to stay within the forge's check-output limit\\._\n";

/** Cuts `text` at a line boundary so that it fits `limit` characters, with a note saying so. */
export function fitOutput(text: string, limit: number = MAX_CHECK_OUTPUT_CHARS): string {
  if (text.length <= limit) return text;
  const room = limit - TRUNCATION_NOTE.length;
  let cut = text.lastIndexOf("\n", room);
  if (cut <= 0) cut = room;
  // Never split a surrogate pair.
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return text.slice(0, cut) + TRUNCATION_NOTE;
}

function title(decision: Decision): string {
  if (decision.kind === "not_enabled") return REASON_TITLES.not_enabled;
  if (decision.kind === "retry") return "Waiting for complete evidence";
  if (decision.sharedHeadWith.length > 0) return `Head commit is shared with ${decision.sharedHeadWith.map((n) => `#${n}`).join(", ")}`.slice(0, 200);
  const blocking = decision.reasons.find((reason) => !reason.transient);
  if (blocking !== undefined) return REASON_TITLES[blocking.code];
  const sets = decision.ownerSets;
  if (decision.conclusion === "success") {
    return sets.length === 0 ? "No owned paths changed" : `All ${sets.length} owner set${sets.length === 1 ? "" : "s"} approved`;
  }
  const open = sets.filter((set) => set.status !== "satisfied").length;
  return `${open} of ${sets.length} owner set${sets.length === 1 ? "" : "s"} not yet approved`;
}

function reasonLines(reason: Reason): string[] {
  const lines = [`- ${renderText(reason.message)}`];
  const details = reason.details ?? [];
  for (const detail of details.slice(0, 20)) lines.push(`  - ${renderText(detail)}`);
  if (details.length > 20) lines.push(`  - and ${details.length - 20} more`);
  return lines;
}

function summary(decision: Decision): string {
  const lines: string[] = [];
  if (decision.kind === "not_enabled") {
    lines.push(escapeMarkdown("This repository has not opted in to the code-owner approval check."));
    for (const reason of decision.reasons) lines.push(...reasonLines(reason));
    return lines.join("\n");
  }
  if (decision.kind === "retry") lines.push(escapeMarkdown("Some evidence could not be read; the evaluation will be retried and nothing was decided."));
  else if (decision.conclusion === "success") lines.push(escapeMarkdown("Every owner set of the changed paths is approved on the current head."));
  else lines.push(escapeMarkdown("This pull request cannot merge yet with respect to code-owner approval."));
  lines.push("", `${escapeMarkdown("Head:")} ${code(decision.headSha)}`);
  if (decision.reasons.length > 0) {
    lines.push("", `**${escapeMarkdown("Blocking reasons")}**`, "");
    for (const reason of decision.reasons) lines.push(...reasonLines(reason));
  }
  const sets = decision.ownerSets;
  if (decision.kind === "conclusive") {
    lines.push(
      "",
      escapeMarkdown(
        `Owner sets: ${sets.length} (${sets.filter((set) => set.status === "satisfied").length} approved). Unowned changed paths: ${decision.unownedPathCount}.`,
      ),
    );
    lines.push(decision.codeownersPath === null ? escapeMarkdown("No code-owners file was found at the base commit.") : `${escapeMarkdown("Code owners read from")} ${code(decision.codeownersPath)}${escapeMarkdown(".")}`);
  }
  if (decision.suggestedReviewers.length > 0) {
    lines.push("", `${escapeMarkdown("Suggested reviewers:")} ${decision.suggestedReviewers.slice(0, 50).map(code).join(", ")}`);
  }
  if (decision.insecureChangesAllowed) {
    lines.push("", escapeMarkdown("Warning: insecure changes are allowed on this service (the built-in non-delegable paths are disabled)."));
  }
  return lines.join("\n");
}

/** `path` cut to MAX_RENDERED_PATH_CHARS code points, keeping its head and its tail (the file name) around "…". */
export function shortenPath(path: string): string {
  if (path.length <= MAX_RENDERED_PATH_CHARS) return path;
  const points = Array.from(path);
  if (points.length <= MAX_RENDERED_PATH_CHARS) return path;
  const head = Math.ceil((MAX_RENDERED_PATH_CHARS - 1) / 2);
  return `${points.slice(0, head).join("")}…${points.slice(points.length - (MAX_RENDERED_PATH_CHARS - 1 - head)).join("")}`;
}

/** A set's status, approvals and owners: shown for every set, before any set's details (issue 16 item 6). */
function setHeader(set: OwnerSetResult, index: number): string {
  return [
    `### ${escapeMarkdown(`Owner set ${index + 1}: ${STATUS_WORDS[set.status]} (${set.approvals} of ${set.required} approvals)`)}`,
    "",
    `${escapeMarkdown("Owners:")} ${set.owners.map(code).join(" ")}`,
  ].join("\n");
}

const DETAILS_NOT_SHOWN = escapeMarkdown("Paths and reviews of this set not shown, to stay within the forge's check-output limit.");

function setDetails(set: OwnerSetResult): string {
  const lines = [escapeMarkdown(`Paths (${set.paths.length}):`)];
  for (const path of set.paths.slice(0, MAX_RENDERED_PATHS_PER_SET)) lines.push(`- ${code(shortenPath(path))}`);
  if (set.paths.length > MAX_RENDERED_PATHS_PER_SET) lines.push(`- ${escapeMarkdown(`and ${set.paths.length - MAX_RENDERED_PATHS_PER_SET} more`)}`);
  if (set.counted.length > 0) {
    lines.push("", escapeMarkdown("Approvals counted:"));
    for (const approval of set.counted) {
      const via = approval.via.kind === "app" ? `${escapeMarkdown("App delegation")} ${code(approval.via.app)}` : `${escapeMarkdown("as")} ${code(approval.via.owner)}`;
      lines.push(`- ${code(approval.reviewer)} ${via}`);
    }
    if (set.approvals > set.counted.length) lines.push(`- ${escapeMarkdown(`and ${set.approvals - set.counted.length} more`)}`);
  }
  if (set.notCounted.length > 0) {
    lines.push("", escapeMarkdown("Reviews that did not count:"));
    for (const entry of set.notCounted) lines.push(`- ${code(entry.reviewer)}: ${renderText(entry.why)}`);
    if (set.notCountedOmitted > 0) lines.push(`- ${escapeMarkdown(`and ${set.notCountedOmitted} more`)}`);
  }
  if (set.blockedBy.length > 0) lines.push("", `${escapeMarkdown("Changes requested by:")} ${set.blockedBy.map(code).join(", ")}`);
  if (set.unresolved.length > 0) {
    lines.push("", escapeMarkdown("Could not be established:"));
    for (const entry of set.unresolved.slice(0, 20)) lines.push(`- ${renderText(entry)}`);
  }
  if (set.nonDelegablePaths.length > 0) {
    lines.push("", escapeMarkdown(`Non-delegable paths in this set: ${set.nonDelegablePaths.length} (no App approval can count for it).`));
  }
  return lines.join("\n");
}

/**
 * The owner sets in order, each with its details while the headers of all later sets still fit after it; a set whose details
 * do not fit is shown by its header alone. Only when the headers alone exceed the limit are later sets left out.
 */
function text(decision: Decision): string {
  if (decision.kind === "not_enabled") return "";
  const budget = MAX_CHECK_OUTPUT_CHARS - TRUNCATION_NOTE.length - 200;
  const headers = decision.ownerSets.map((set, index) => `${setHeader(set, index)}\n\n`);
  let later = headers.reduce((sum, header) => sum + header.length + DETAILS_NOT_SHOWN.length + 2, 0);
  const headersFit = later <= budget;
  const sections: string[] = [];
  let length = 0;
  let shown = 0;
  for (const [index, set] of decision.ownerSets.entries()) {
    later -= headers[index]!.length + DETAILS_NOT_SHOWN.length + 2;
    const room = budget - length - 2 - (headersFit ? later : 0);
    const full = headers[index]! + setDetails(set);
    const section = full.length <= room ? full : headers[index]! + DETAILS_NOT_SHOWN;
    if (section.length > room) break;
    sections.push(section);
    length += section.length + 2;
    shown++;
  }
  const hidden = decision.ownerSets.length - shown;
  if (hidden > 0) sections.push(escapeMarkdown(`And ${hidden} more owner sets not shown.`));
  return fitOutput(sections.join("\n\n"));
}

/** Owners shown per owner set of the preview before "and N more". */
const MAX_PREVIEW_OWNERS = 10;
/** Below this much room after the decision's summary the preview is left out rather than cut to a stub. */
const MIN_PREVIEW_ROOM = 400;

export const PREVIEW_HEADING = `### ${escapeMarkdown("Preview: this pull request's policy change")}`;

function ownerSetLabel(label: OwnerSetLabel): string {
  if (label.owners.length === 0 && label.apps.length === 0) return escapeMarkdown("(no owners)");
  const owners = label.owners.slice(0, MAX_PREVIEW_OWNERS).map(code);
  if (label.owners.length > MAX_PREVIEW_OWNERS) owners.push(escapeMarkdown(`and ${label.owners.length - MAX_PREVIEW_OWNERS} more`));
  const shown = label.owners.length === 0 ? escapeMarkdown("(no owners)") : owners.join(" ");
  if (label.apps.length === 0) return shown;
  const apps = label.apps.slice(0, MAX_PREVIEW_OWNERS).map(code);
  if (label.apps.length > MAX_PREVIEW_OWNERS) apps.push(escapeMarkdown(`and ${label.apps.length - MAX_PREVIEW_OWNERS} more`));
  return `${shown} ${escapeMarkdown("(or App")} ${apps.join(", ")}${escapeMarkdown(")")}`;
}

/** The change preview as a Markdown section (bounded by the preview's own list bounds and shortened paths and messages). */
export function previewSection(preview: PreviewResult): string {
  const lines = [PREVIEW_HEADING, "", escapeMarkdown("What this pull request's change of the code-owners file or the repository policy would do once merged. Not part of the decision above, which uses the base commit.")];
  if (preview.kind === "unavailable") {
    lines.push("", `${escapeMarkdown("The preview is left out:")} ${renderText(preview.why)}${escapeMarkdown(".")}`);
    return lines.join("\n");
  }
  const { before, after } = preview.codeownersPath;
  if (before !== after) {
    const where = (path: string | null) => (path === null ? escapeMarkdown("none") : code(path));
    lines.push("", `${escapeMarkdown("Code-owners file:")} ${where(before)} → ${where(after)}`);
  }
  const invalidCount = preview.invalid.length + preview.invalidOmitted;
  if (invalidCount > 0) {
    lines.push("", escapeMarkdown(`Invalid after this change (${invalidCount}):`));
    for (const problem of preview.invalid) {
      const at = problem.line === null ? code(problem.file) : `${code(problem.file)} ${escapeMarkdown("line")} ${code(String(problem.line))}`;
      lines.push(`- ${at}: ${escapeMarkdown(shortenPath(problem.message))}`);
    }
    if (preview.invalidOmitted > 0) lines.push(`- ${escapeMarkdown(`and ${preview.invalidOmitted} more`)}`);
  }
  if (preview.problems.length > 0) {
    lines.push("", escapeMarkdown("Would fail after this change:"));
    for (const reason of preview.problems) lines.push(...reasonLines(reason));
  }
  if (preview.requiredApprovals !== null) {
    lines.push("", escapeMarkdown(`Required approvals: ${preview.requiredApprovals.before} → ${preview.requiredApprovals.after}`));
  }
  const changeCount = preview.ownershipChanges.length + preview.ownershipChangesOmitted;
  if (changeCount > 0) {
    lines.push("", escapeMarkdown(`Changed files whose owners would change (${changeCount}):`));
    for (const change of preview.ownershipChanges) {
      lines.push(`- ${code(shortenPath(change.path))}: ${ownerSetLabel(change.before)} → ${ownerSetLabel(change.after)}`);
    }
    if (preview.ownershipChangesOmitted > 0) lines.push(`- ${escapeMarkdown(`and ${preview.ownershipChangesOmitted} more`)}`);
  }
  for (const note of preview.notes) lines.push("", renderText(note));
  if (invalidCount === 0 && preview.problems.length === 0 && changeCount === 0 && preview.notes.length === 0 && preview.requiredApprovals === null) {
    lines.push("", escapeMarkdown("The new files are valid and no changed file's owners would change."));
  }
  return lines.join("\n");
}

/**
 * The check output of `decision`; with `preview`, a conclusive decision's summary gains the preview section after the
 * decision's own summary, which stays exactly as without it (the section gets only the room that is left).
 */
export function renderCheck(decision: Decision, preview: PreviewResult | null = null): CheckOutput {
  const decided = fitOutput(summary(decision));
  const room = MAX_CHECK_OUTPUT_CHARS - decided.length - 2;
  const withPreview = preview !== null && decision.kind === "conclusive" && room >= MIN_PREVIEW_ROOM ? `${decided}\n\n${fitOutput(previewSection(preview), room)}` : decided;
  return {
    title: renderPlain([title(decision)]).slice(0, 1_000),
    summary: withPreview,
    text: text(decision),
  };
}
