// What each review in the list did, for the explanation: read from the Decision (counted, not counted and why, blocking) and,
// for reviews the Decision does not mention, from the engine's own review selection (analyze(): each reviewer's latest
// decisive review). Nothing here re-implements a rule.
import { analyze } from "../../server/evaluation/analyze.ts";
import { t, type Decision, type EvaluationSettings, type Evidence, type Text } from "../../server/evaluation/index.ts";

export interface ReviewEffect {
  /** 1-based position in the review list (forge order). */
  readonly position: number;
  readonly reviewer: string;
  readonly state: string;
  readonly effects: readonly Text[];
}

const DECISIVE = new Set(["APPROVED", "CHANGES_REQUESTED", "DISMISSED"]);

export function reviewEffects(evidence: Evidence, settings: EvaluationSettings, decision: Decision): ReviewEffect[] {
  if (!evidence.reviews.complete) return [];
  const reviews = evidence.reviews.items;
  // The engine's selection of latest reviews, on evidence stripped of everything else (cheap: no paths, no CODEOWNERS).
  const stripped = {
    ...evidence,
    files: { complete: true as const, items: [] },
    pullRequest: { ...evidence.pullRequest, changedFiles: 0 },
    codeowners: { ".forge/CODEOWNERS": { kind: "missing" as const }, CODEOWNERS: { kind: "missing" as const }, "docs/CODEOWNERS": { kind: "missing" as const } },
  };
  const analysis = analyze(stripped, settings);
  const latest = analysis.kind === "analysed" && analysis.latestReviews !== null ? new Set(analysis.latestReviews.map((entry) => entry.review.id)) : null;
  const lower = (login: string) => login.toLowerCase();

  // Break-glass (DESIGN 3.11): the override and every refused request, by review ID, from the Decision.
  const glass = new Map<number, Text>();
  if (decision.breakGlass !== null) glass.set(decision.breakGlass.reviewId, [`overrides the approval requirements (break-glass, member of `, { code: decision.breakGlass.team }, ")"]);
  for (const refusal of decision.breakGlassRefusals) glass.set(refusal.reviewId, [`break-glass request refused (${refusal.code}): `, ...refusal.message]);
  return reviews.map((review, index) => {
    const effect = ownerEffect(review, index);
    const extra = glass.get(review.id);
    return extra === undefined ? effect : { ...effect, effects: [extra, ...effect.effects] };
  });

  function ownerEffect(review: (typeof reviews)[number], index: number): ReviewEffect {
    const position = index + 1;
    const state = String(review.state).toUpperCase();
    const reviewer = review.user?.login ?? "(deleted user)";
    const one = (text: Text): ReviewEffect => ({ position, reviewer, state, effects: [text] });
    if (review.user === null) return one(t`no user (deleted account): never counts`);
    if (!DECISIVE.has(state)) return one(t`${state.toLowerCase()}: neither approves nor blocks`);
    if (latest === null) return one(decision.kind === "not_enabled" ? t`not evaluated: the repository has not opted in` : t`not evaluated: the review list could not be used`);
    if (!latest.has(review.id)) {
      const later = reviews.findIndex((other, j) => j > index && other.user?.id === review.user!.id && latest.has(other.id));
      return one(later >= 0 ? [`superseded by review #${later + 1} of the same reviewer`] : t`superseded by a later review of the same reviewer`);
    }
    if (state === "DISMISSED") return one(t`dismissed: neither approves nor blocks`);
    const login = lower(review.user.login);
    const effects: Text[] = [];
    decision.ownerSets.forEach((set, setIndex) => {
      const name = `owner set ${setIndex + 1}`;
      for (const approval of set.counted) {
        if (lower(approval.reviewer) !== login) continue;
        effects.push(approval.via.kind === "app" ? [`counts for ${name} through the App delegation `, { code: approval.via.app }] : [`counts for ${name} as `, { code: approval.via.owner }]);
      }
      for (const entry of set.notCounted) if (lower(entry.reviewer) === login) effects.push([`does not count for ${name}: `, ...entry.why]);
      if (set.blockedBy.some((blocker) => lower(blocker) === login)) effects.push([`blocks ${name} (changes requested)`]);
    });
    if (effects.length > 0) return { position, reviewer, state, effects };
    if (review.user.id === evidence.pullRequest.author.id) return one(t`the author's own review never counts`);
    if (decision.ownerSets.length === 0) return one(t`no owner set to approve or block`);
    if (state === "CHANGES_REQUESTED") return one(t`blocks no owner set: not an eligible owner of any of them`);
    return one(t`not considered by any owner set`);
  }
}
