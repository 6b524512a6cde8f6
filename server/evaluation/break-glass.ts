// Break-glass override (DESIGN 3.11): an emergency approval the organization governs, bound to one commit.
//
// A request is a review whose body's first line starts with `break-glass:`. It overrides when it is the reviewer's latest
// non-comment review (a later review by the same reviewer replaces it), its state is APPROVED, its commit is the head, its
// reason (the rest of the line, trimmed) has at least `min_reason_length` visible characters, the reviewer is a person other
// than the pull request's author, the reviewer is an active member of a team the organization policy's `[break_glass]` lists
// (the team membership lookup of owner teams; unknown fails closed; the team's repository access is not required), and the
// review's body was never edited (anyone with write access may edit another person's review; the forge's GraphQL API says
// whether it was, its REST API does not; unknown fails closed).
// What it lifts is decided in evaluate(): the approval requirements only, never completeness, the shared-head rule or opt-in.
//
// Requests are judged in two steps so the fetcher looks up only what matters: breakGlassRequests() needs no directory facts
// and leaves a request pending when only membership and edits are left to check (planLookups asks for those memberships and,
// in one query, the edits); judgeBreakGlass() reads them and picks the override.
import { MAX_BREAK_GLASS_REQUESTS, MAX_LISTED_REVIEWS_PER_SET, MAX_REVIEW_BODY_LINE_CHARS, MAX_REVIEWS } from "../policy/bounds.ts";
import type { Analysis } from "./analyze.ts";
import { t, type BreakGlassOverride, type BreakGlassRefusal, type BreakGlassRefusalCode, type OwnerSetResult, type Text } from "./decision.ts";
import type { Directory } from "./eligibility.ts";
import type { Evidence, Review } from "./evidence.ts";
import { Keyed, type FactGap } from "./facts.ts";

export const BREAK_GLASS_MARKER = "break-glass:";

const DECISIVE_STATES = new Set(["APPROVED", "CHANGES_REQUESTED", "DISMISSED"]);

/**
 * The first line of `body`, at most `max` characters (a pair of UTF-16 units is never split). Reads at most `max + 1`
 * characters of the body, whatever its size.
 */
export function firstLineOf(body: string, max: number = MAX_REVIEW_BODY_LINE_CHARS): string {
  let line = body.slice(0, max + 1);
  const end = line.search(/[\r\n]/);
  line = end >= 0 ? line.slice(0, end) : line.slice(0, max);
  const last = line.charCodeAt(line.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? line.slice(0, -1) : line;
}

/** The reason of a review asking for an override (the first line after the marker, trimmed), or null when it does not ask. */
export function breakGlassReason(review: Pick<Review, "bodyFirstLine">): string | null {
  if (typeof review.bodyFirstLine !== "string") return null;
  // Bounded again here: the playground and replayed evidence are hostile input too.
  const line = firstLineOf(review.bodyFirstLine);
  return line.startsWith(BREAK_GLASS_MARKER) ? line.slice(BREAK_GLASS_MARKER.length).trim() : null;
}

/**
 * Characters a reader sees: Unicode letters, marks, numbers, punctuation and symbols. Separators, format, control,
 * private-use and unassigned characters never count, nor do the default-ignorable ones that Unicode gives a letter or mark
 * category (Hangul fillers U+115F, U+1160, U+3164, U+FFA0, variation selectors, the combining grapheme joiner) or the
 * blank braille pattern U+2800 (a symbol that renders as nothing): twenty of any of them are no reason.
 */
const VISIBLE = /(?![\p{Default_Ignorable_Code_Point}\u2800])[\p{L}\p{M}\p{N}\p{P}\p{S}]/gu;
const visibleCharacters = (text: string) => text.match(VISIBLE)?.length ?? 0;

export interface BreakGlassRequest {
  readonly review: Review & { readonly user: NonNullable<Review["user"]> };
  readonly reason: string;
  /** Why it cannot override whatever the directory says; null when only the reviewer's team membership is left to check. */
  readonly refusal: { readonly code: BreakGlassRefusalCode; readonly message: Text } | null;
}

/**
 * Every reviewer's most recent review asking for an override, most recent first, each with the refusal that needs no
 * directory facts. Empty when the review list is unusable (evaluate() fails closed on that already).
 */
export function breakGlassRequests(evidence: Pick<Evidence, "reviews" | "pullRequest">, analysis: Pick<Analysis, "breakGlass">): BreakGlassRequest[] {
  const reviews = evidence.reviews;
  if (!reviews.complete || reviews.items.length > MAX_REVIEWS) return [];
  const latestDecisive = new Map<number, number>();
  const latestRequest = new Map<number, { index: number; reason: string }>();
  reviews.items.forEach((review, index) => {
    if (review.user === null) return;
    if (DECISIVE_STATES.has(String(review.state).toUpperCase())) latestDecisive.set(review.user.id, index);
    const reason = breakGlassReason(review);
    if (reason !== null) latestRequest.set(review.user.id, { index, reason });
  });
  const ordered = [...latestRequest.entries()].sort(([, a], [, b]) => b.index - a.index);
  const refuse = (code: BreakGlassRefusalCode, message: Text) => ({ code, message });
  return ordered.map(([userId, { index, reason }], position): BreakGlassRequest => {
    const review = reviews.items[index] as BreakGlassRequest["review"];
    const judged = (refusal: BreakGlassRequest["refusal"]): BreakGlassRequest => ({ review, reason, refusal });
    if (position >= MAX_BREAK_GLASS_REQUESTS) return judged(refuse("too_many_requests", t`not judged: ${String(MAX_BREAK_GLASS_REQUESTS)} more recent reviews ask for an override`));
    if (analysis.breakGlass.kind === "not_enabled") return judged(refuse("not_enabled", analysis.breakGlass.why));
    const settings = analysis.breakGlass.settings;
    const decisive = latestDecisive.get(userId);
    if (decisive !== undefined && decisive > index) return judged(refuse("superseded", t`a later review by ${review.user.login} replaces it`));
    const state = String(review.state).toUpperCase();
    if (review.user.id === evidence.pullRequest.author.id) return judged(refuse("author", t`the author cannot override for their own pull request`));
    if (state !== "APPROVED") {
      const what = state === "DISMISSED" ? t`the review was dismissed` : state === "CHANGES_REQUESTED" ? t`the review requests changes` : t`the review is ${state.toLowerCase()}, not an approval`;
      return judged(refuse("wrong_state", [...what, ...t`; only an approving review overrides`]));
    }
    if (review.commitId !== evidence.pullRequest.headSha) {
      return judged(refuse("stale_commit", t`approved ${review.commitId === null ? "an unknown commit" : review.commitId.slice(0, 7)}, not the current head ${evidence.pullRequest.headSha.slice(0, 7)}: a push ends an override`));
    }
    const length = visibleCharacters(reason);
    if (length < settings.minReasonLength) {
      return judged(refuse("short_reason", [`the reason has ${length} visible characters; the organization requires at least ${settings.minReasonLength}`]));
    }
    if (review.user.type !== "User") return judged(refuse("not_a_member", t`${review.user.login} is not a person's account`));
    return judged(null);
  });
}

/** `org/slug` of each team the organization lists, as the directory facts key them. */
export function breakGlassTeams(evidence: Pick<Evidence, "repository">, analysis: Pick<Analysis, "breakGlass">): { slug: string; team: string }[] {
  if (analysis.breakGlass.kind !== "enabled") return [];
  return analysis.breakGlass.settings.teams.map((slug) => ({ slug, team: `${evidence.repository.owner}/${slug}` }));
}

export interface BreakGlassJudgement {
  readonly override: BreakGlassOverride | null;
  readonly refusals: readonly BreakGlassRefusal[];
  /** Membership facts that could not be established and would decide whether an override applies (fail closed on them). */
  readonly gaps: readonly FactGap[];
}

/**
 * The override that applies, if any: the most recent valid request, when the decision does not succeed without it
 * (`needed`). The rest are refusals.
 */
export function judgeBreakGlass(input: {
  readonly evidence: Pick<Evidence, "reviews" | "pullRequest" | "repository" | "directory">;
  readonly analysis: Pick<Analysis, "breakGlass">;
  readonly directory: Directory;
  readonly ownerSets: readonly OwnerSetResult[];
  readonly needed: boolean;
}): BreakGlassJudgement {
  const requests = breakGlassRequests(input.evidence, input.analysis);
  const teams = breakGlassTeams(input.evidence, input.analysis);
  let override: BreakGlassOverride | null = null;
  const refusals: BreakGlassRefusal[] = [];
  const unknown: FactGap[] = [];
  const refuse = (request: BreakGlassRequest, code: BreakGlassRefusalCode, message: Text) =>
    refusals.push({ reviewId: request.review.id, reviewer: request.review.user.login, code, message });
  const edits = new Keyed(input.evidence.directory.reviewEdits ?? {});
  for (const request of requests) {
    if (request.refusal !== null) {
      refuse(request, request.refusal.code, request.refusal.message);
      continue;
    }
    const login = request.review.user.login;
    const edit = edits.get(String(request.review.id));
    if (edit?.kind === "found" && edit.value.lastEditedAt !== null) {
      refuse(request, "edited", t`the review's body was edited after it was submitted (last at ${edit.value.lastEditedAt}); only a body as its reviewer submitted it overrides`);
      continue;
    }
    const gaps: FactGap[] = [];
    let team: string | null = null;
    for (const candidate of teams) {
      const fact = input.directory.activeMember(candidate.team, login);
      if (fact.value === "yes") {
        team = candidate.slug;
        break;
      }
      if (fact.value === "unknown") gaps.push(...fact.gaps);
    }
    if (team === null) {
      if (gaps.length > 0) {
        unknown.push(...gaps);
        refuse(request, "membership_incomplete", t`the team membership of ${login} could not be established`);
      } else refuse(request, "not_a_member", t`${login} is not an active member of a team the organization lists (${teams.map((entry) => entry.slug).join(", ")})`);
      continue;
    }
    if (edit?.kind !== "found") {
      // Not looked up (no node ID, or a bound), not found, or the query failed: the body may not be the reviewer's own.
      const detail = edit === undefined ? "was not looked up" : edit.kind === "not_found" ? "was not found" : edit.detail;
      unknown.push({ cause: edit?.kind === "incomplete" ? edit.cause : "inconsistent", message: t`whether review ${String(request.review.id)} by ${login} was edited: ${detail}`, ...(edit === undefined ? { notLookedUp: true as const } : {}) });
      refuse(request, "membership_incomplete", t`whether the review of ${login} was edited could not be established`);
      continue;
    }
    if (!input.needed) refuse(request, "not_needed", t`the owners' approvals already meet the approval requirements`);
    else if (override !== null) refuse(request, "not_needed", t`a more recent override by ${override.reviewer} applies`);
    else {
      override = {
        reviewId: request.review.id,
        reviewerId: request.review.user.id,
        reviewer: login,
        reason: request.reason,
        team,
        unsatisfiedOwnerSets: input.ownerSets.flatMap((set, index) => (set.status === "satisfied" ? [] : [index])),
      };
    }
  }
  return {
    override,
    refusals: refusals.slice(0, MAX_LISTED_REVIEWS_PER_SET),
    // Unknown memberships matter only while no override applies and one is needed.
    gaps: override === null && input.needed ? unknown : [],
  };
}
