// renderCheck(decision) → the check run's title, summary and text (issue 3 item 4). Rendered from the Decision only, plus,
// when the pull request changes a policy file, the change preview appended after the decision's summary (issue 19 item 2):
// the decision's own output is the same with or without it.
// Every field stays within the forge's check-output limit (MAX_CHECK_OUTPUT_CHARS); long lists are cut with "and N more".
// Output is built against a running character budget (BoundedLines): a list is never joined whole and cut afterwards, and
// every value from the evidence is shortened before it is escaped (paths, owners, quoted tokens), so what rendering costs
// does not grow with what a pull request puts in its files (issue 25 item 1).
import {
  MAX_CHECK_OUTPUT_CHARS,
  MAX_LISTED_REVIEWS_PER_SET,
  MAX_RENDERED_BREAK_GLASS_REASON_CHARS,
  MAX_RENDERED_OWNER_CHARS,
  MAX_RENDERED_OWNERS_PER_SET,
  MAX_RENDERED_PATH_CHARS,
  MAX_RENDERED_PATHS_PER_SET,
} from "../policy/bounds.ts";
import type { OwnerSetLabel, PreviewResult } from "./change-preview.ts";
import type { Decision, OwnerSetResult, Reason, ReasonCode, Text } from "./decision.ts";
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

/**
 * Lines joined by "\n" within `limit` characters, the truncation note included: a line that would not fit ends the output
 * (with the note) instead of being joined and cut afterwards. Each line must itself be bounded by its caller.
 */
class BoundedLines {
  private readonly lines: string[] = [];
  private length = 0;
  truncated = false;

  constructor(private readonly limit: number) {}

  /** Adds `line` if it fits with room left for the note; false once the output is full. */
  add(...lines: string[]): boolean {
    for (const line of lines) {
      if (this.truncated) return false;
      const added = (this.lines.length === 0 ? 0 : 1) + line.length;
      if (this.length + added > this.limit - TRUNCATION_NOTE.length) {
        this.truncated = true;
        return false;
      }
      this.lines.push(line);
      this.length += added;
    }
    return true;
  }

  toString(): string {
    return this.lines.join("\n") + (this.truncated ? TRUNCATION_NOTE : "");
  }
}

function title(decision: Decision): string {
  if (decision.kind === "not_enabled") return REASON_TITLES.not_enabled;
  if (decision.kind === "retry") return "Waiting for complete evidence";
  if (decision.conclusion === "success" && decision.breakGlass !== null) return BREAK_GLASS_TITLE;
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

/** `text` rendered with each code-like part shortened like a path: a quoted value never makes a line long. */
function renderShortText(text: Text): string {
  return renderText(text.map((part) => (typeof part === "string" ? part : { code: shortenValue(part.code, MAX_RENDERED_PATH_CHARS) })));
}

function reasonLines(reason: Reason): string[] {
  const lines = [`- ${renderShortText(reason.message)}`];
  const details = reason.details ?? [];
  for (const detail of details.slice(0, 20)) lines.push(`  - ${renderShortText(detail)}`);
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
  const overridden = decision.conclusion === "success" && decision.breakGlass !== null;
  if (decision.kind === "retry") lines.push(escapeMarkdown("Some evidence could not be read; the evaluation will be retried and nothing was decided."));
  else if (overridden) lines.push(escapeMarkdown("Approved by a break-glass override: the approval requirements were not met by the owners on this head, and a member of a team the organization policy lists overrode them."));
  else if (decision.conclusion === "success") lines.push(escapeMarkdown("Every owner set of the changed paths is approved on the current head."));
  else lines.push(escapeMarkdown("This pull request cannot merge yet with respect to code-owner approval."));
  lines.push("", `${escapeMarkdown("Head:")} ${code(decision.headSha)}`);
  if (decision.kind === "conclusive") lines.push(...breakGlassLines(decision));
  if (decision.reasons.length > 0) {
    lines.push("", `**${escapeMarkdown(overridden ? "Lifted by the override" : "Blocking reasons")}**`, "");
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
    lines.push("", `${escapeMarkdown("Suggested reviewers:")} ${ownerCodes(decision.suggestedReviewers, 50).join(", ")}`);
  }
  if (decision.insecureChangesAllowed) {
    lines.push("", escapeMarkdown("Warning: insecure changes are allowed on this service (the built-in non-delegable paths are disabled)."));
  }
  return lines.join("\n");
}

export const BREAK_GLASS_TITLE = "Approved by break-glass override";

/** Refused break-glass requests listed in the summary before "and N more". */
const MAX_RENDERED_REFUSALS = 10;

/**
 * The reason, at most MAX_RENDERED_BREAK_GLASS_REASON_CHARS code points then "…". Only its head is read: the reason is
 * already bounded by the evidence (MAX_REVIEW_BODY_LINE_CHARS), but the renderer holds its own bound (DESIGN 3.11).
 */
export function shortenReason(reason: string): string {
  const points = Array.from(reason.slice(0, 2 * MAX_RENDERED_BREAK_GLASS_REASON_CHARS + 2));
  return points.length <= MAX_RENDERED_BREAK_GLASS_REASON_CHARS ? points.join("") : `${points.slice(0, MAX_RENDERED_BREAK_GLASS_REASON_CHARS).join("")}…`;
}

/** The override (reviewer, quoted reason, owner sets not satisfied by their owners) and the requests that did not override. */
function breakGlassLines(decision: Decision): string[] {
  const lines: string[] = [];
  const override = decision.breakGlass;
  if (override !== null) {
    lines.push("", `**${escapeMarkdown("Break-glass override")}**`, "");
    if (decision.conclusion !== "success") lines.push(escapeMarkdown("The override meets the approval requirements, but the reasons below still fail the check."), "");
    lines.push(`${escapeMarkdown("Reviewer:")} ${code(override.reviewer)} ${escapeMarkdown("(member of")} ${code(override.team)}${escapeMarkdown(", review")} ${code(String(override.reviewId))}${escapeMarkdown(")")}`);
    lines.push("", escapeMarkdown("Reason:"), "", `> ${escapeMarkdown(shortenReason(override.reason))}`, "");
    const unsatisfied = override.unsatisfiedOwnerSets;
    lines.push(escapeMarkdown(`Owner sets not satisfied by their owners: ${unsatisfied.length}`));
    for (const index of unsatisfied.slice(0, MAX_RENDERED_OWNERS_PER_SET)) {
      const set = decision.ownerSets[index];
      if (set !== undefined) lines.push(`- ${escapeMarkdown(`Owner set ${index + 1} (${STATUS_WORDS[set.status]}):`)} ${ownerCodes(set.owners, MAX_RENDERED_OWNERS_PER_SET).join(" ")}`);
    }
    if (unsatisfied.length > MAX_RENDERED_OWNERS_PER_SET) lines.push(`- ${escapeMarkdown(`and ${unsatisfied.length - MAX_RENDERED_OWNERS_PER_SET} more`)}`);
  }
  const refusals = decision.breakGlassRefusals.filter((refusal) => refusal.code !== "not_needed" || override === null);
  if (refusals.length > 0) {
    lines.push("", `**${escapeMarkdown("Break-glass requests that did not override")}**`, "");
    for (const refusal of refusals.slice(0, MAX_RENDERED_REFUSALS)) lines.push(`- ${code(refusal.reviewer)}: ${renderShortText(refusal.message)}`);
    const more = Math.min(refusals.length, MAX_LISTED_REVIEWS_PER_SET) - MAX_RENDERED_REFUSALS;
    if (more > 0) lines.push(`- ${escapeMarkdown(`and ${more} more`)}`);
  }
  return lines;
}

/**
 * `value` cut to `max` code points, keeping its head and its tail around "…". Only the ends of a long value are read: it is
 * never split into all its code points (a 3 MB token costs what a short one does).
 */
export function shortenValue(value: string, max: number): string {
  if (value.length <= max) return value;
  const head = Math.ceil((max - 1) / 2);
  const tail = max - 1 - head;
  if (value.length <= 2 * max) {
    const points = Array.from(value);
    if (points.length <= max) return value;
    return `${points.slice(0, head).join("")}…${points.slice(points.length - tail).join("")}`;
  }
  // Over 2 × max UTF-16 units there are over max code points. Each end is read from 2 × max units: a pair split at the cut
  // is a lone unit at the far end of that slice, never among the `head` first or `tail` last code points kept.
  const start = Array.from(value.slice(0, 2 * max)).slice(0, head).join("");
  const end = tail === 0 ? "" : Array.from(value.slice(value.length - 2 * max)).slice(-tail).join("");
  return `${start}…${end}`;
}

/** `path` cut to MAX_RENDERED_PATH_CHARS code points, keeping its head and its tail (the file name) around "…". */
export function shortenPath(path: string): string {
  return shortenValue(path, MAX_RENDERED_PATH_CHARS);
}

/** At most `max` owners, each shortened to MAX_RENDERED_OWNER_CHARS, as code, then "and N more". */
function ownerCodes(owners: readonly string[], max: number): string[] {
  const shown = owners.slice(0, max).map((owner) => code(shortenValue(owner, MAX_RENDERED_OWNER_CHARS)));
  if (owners.length > max) shown.push(escapeMarkdown(`and ${owners.length - max} more`));
  return shown;
}

/** A set's status, approvals and owners: shown for every set, before any set's details (issue 16 item 6). */
function setHeader(set: OwnerSetResult, index: number): string {
  return [
    `### ${escapeMarkdown(`Owner set ${index + 1}: ${STATUS_WORDS[set.status]} (${set.approvals} of ${set.required} approvals)`)}`,
    "",
    `${escapeMarkdown("Owners:")} ${ownerCodes(set.owners, MAX_RENDERED_OWNERS_PER_SET).join(" ")}`,
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
  if (set.blockedBy.length > 0) lines.push("", `${escapeMarkdown("Changes requested by:")} ${ownerCodes(set.blockedBy, MAX_RENDERED_OWNERS_PER_SET).join(", ")}`);
  if (set.unresolved.length > 0) {
    lines.push("", escapeMarkdown("Could not be established:"));
    for (const entry of set.unresolved.slice(0, 20)) lines.push(`- ${renderShortText(entry)}`);
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
  // Headers are made only while they could still fit: past the budget the rest are neither rendered nor reserved for.
  const headers: string[] = [];
  let later = 0;
  for (const [index, set] of decision.ownerSets.entries()) {
    if (later > budget) break;
    headers.push(`${setHeader(set, index)}\n\n`);
    later += headers[index]!.length + DETAILS_NOT_SHOWN.length + 2;
  }
  const headersFit = headers.length === decision.ownerSets.length && later <= budget;
  const sections: string[] = [];
  let length = 0;
  let shown = 0;
  for (const [index, set] of decision.ownerSets.entries()) {
    if (index >= headers.length) break;
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
  const shown = label.owners.length === 0 ? escapeMarkdown("(no owners)") : ownerCodes(label.owners, MAX_PREVIEW_OWNERS).join(" ");
  if (label.apps.length === 0) return shown;
  return `${shown} ${escapeMarkdown("(or App")} ${ownerCodes(label.apps, MAX_PREVIEW_OWNERS).join(", ")}${escapeMarkdown(")")}`;
}

/**
 * The change preview as a Markdown section of at most `limit` characters, built line by line against that budget (each line
 * bounded by the preview's list bounds and shortened paths, owners and messages). Every value taken from the head's files
 * (paths, owners, parser messages that quote tokens or TOML keys) is a code span, as in the decision's own output, so the
 * forge's mention and reference filters never act on it (issue 25 item 7).
 */
export function previewSection(preview: PreviewResult, limit: number = MAX_CHECK_OUTPUT_CHARS): string {
  const out = new BoundedLines(limit);
  out.add(PREVIEW_HEADING, "");
  if (preview.kind === "unavailable") {
    // One line says why: the decision above is published the same without the preview.
    out.add(`${escapeMarkdown("The preview is left out:")} ${renderShortText(preview.why)}${escapeMarkdown(".")}`);
    return out.toString();
  }
  out.add(escapeMarkdown("What this pull request's change of the code-owners file or the repository policy would do once merged. Not part of the decision above, which uses the base commit."));
  const { before, after } = preview.codeownersPath;
  if (before !== after) {
    const where = (path: string | null) => (path === null ? escapeMarkdown("none") : code(shortenPath(path)));
    out.add("", `${escapeMarkdown("Code-owners file:")} ${where(before)} → ${where(after)}`);
  }
  const invalidCount = preview.invalid.length + preview.invalidOmitted;
  if (invalidCount > 0) {
    out.add("", escapeMarkdown(`Invalid after this change (${invalidCount}):`));
    for (const problem of preview.invalid) {
      const file = code(shortenPath(problem.file));
      const at = problem.line === null ? file : `${file} ${escapeMarkdown("line")} ${code(String(problem.line))}`;
      if (!out.add(`- ${at}: ${code(shortenPath(problem.message))}`)) break;
    }
    if (preview.invalidOmitted > 0) out.add(`- ${escapeMarkdown(`and ${preview.invalidOmitted} more`)}`);
  }
  if (preview.problems.length > 0) {
    out.add("", escapeMarkdown("Would fail after this change:"));
    for (const reason of preview.problems) if (!out.add(...reasonLines(reason))) break;
  }
  if (preview.requiredApprovals !== null) {
    out.add("", escapeMarkdown(`Required approvals: ${preview.requiredApprovals.before} → ${preview.requiredApprovals.after}`));
  }
  const changeCount = preview.ownershipChanges.length + preview.ownershipChangesOmitted;
  if (changeCount > 0) {
    out.add("", escapeMarkdown(`Changed files whose owners would change (${changeCount}):`));
    for (const change of preview.ownershipChanges) {
      if (!out.add(`- ${code(shortenPath(change.path))}: ${ownerSetLabel(change.before)} → ${ownerSetLabel(change.after)}`)) break;
    }
    if (preview.ownershipChangesOmitted > 0) out.add(`- ${escapeMarkdown(`and ${preview.ownershipChangesOmitted} more`)}`);
  }
  for (const note of preview.notes) out.add("", renderShortText(note));
  if (invalidCount === 0 && preview.problems.length === 0 && changeCount === 0 && preview.notes.length === 0 && preview.requiredApprovals === null) {
    out.add("", escapeMarkdown("The new files are valid and no changed file's owners would change."));
  }
  return out.toString();
}

/** The check output of `decision` alone: what is published when there is no preview. */
export function renderDecision(decision: Decision): CheckOutput {
  return {
    title: renderPlain([title(decision)]).slice(0, 1_000),
    summary: fitOutput(summary(decision)),
    text: text(decision),
  };
}

/**
 * `output` (a conclusive decision's, from renderDecision) with the preview section after the decision's summary, which stays
 * exactly as it was: the section gets only the room that is left, and none below MIN_PREVIEW_ROOM.
 */
export function withPreview(output: CheckOutput, preview: PreviewResult): CheckOutput {
  const room = MAX_CHECK_OUTPUT_CHARS - output.summary.length - 2;
  if (room < MIN_PREVIEW_ROOM) return output;
  return { ...output, summary: `${output.summary}\n\n${previewSection(preview, room)}` };
}

/**
 * The check output of `decision`; with `preview`, a conclusive decision's summary gains the preview section after the
 * decision's own summary, which stays exactly as without it (the section gets only the room that is left).
 */
export function renderCheck(decision: Decision, preview: PreviewResult | null = null): CheckOutput {
  const output = renderDecision(decision);
  return preview !== null && decision.kind === "conclusive" ? withPreview(output, preview) : output;
}
