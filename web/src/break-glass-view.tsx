// The break-glass override (DESIGN 3.11), rendered from the Decision: the override that met the approval requirements, and
// every request that did not, each with what its refusal means and what would make it count.
import type { BreakGlassRefusalCode, Decision } from "../../server/evaluation/index.ts";
import { TextView } from "./explanation.tsx";

/** What each refusal means, in the words a reviewer at 3 a.m. needs. */
export const REFUSAL_HELP: Record<BreakGlassRefusalCode, string> = {
  not_enabled: "Only the organization policy can enable overrides, with a [break_glass] section listing the teams whose members may override.",
  wrong_state: "Only an approving review overrides: a comment, a request for changes or a dismissed review does not. Dismissing an override ends it.",
  stale_commit: "An override is bound to the commit it approved, like every approval: after a push, override the new head again.",
  short_reason: "The first line must be 'break-glass:' followed by a reason of at least the organization's min_reason_length visible characters (letters, marks, digits, punctuation, symbols).",
  not_a_member: "Only an active member of a team the organization's [break_glass] lists may override (a person's account, not an App).",
  author: "The pull request's author can never override for their own pull request.",
  membership_incomplete: "The reviewer's team membership, or whether the review's body was edited, could not be looked up, so the override fails closed; the evaluation is retried or fails.",
  edited: "Someone edited the review's body after it was submitted (anyone with write access can edit another person's review), so it is not the reviewer's own word. The reviewer submits a new review instead.",
  superseded: "Each reviewer's latest review counts: a later review by the same reviewer replaces the override.",
  too_many_requests: "Only the most recent requests are judged, so that anyone's reviews cannot cost unbounded lookups.",
  not_needed: "The override is valid but changes nothing: the owners' approvals already meet the requirements, or another override applies.",
};

export function BreakGlassView({ decision }: { decision: Decision }) {
  const override = decision.breakGlass;
  const refusals = decision.breakGlassRefusals;
  if (override === null && refusals.length === 0) return null;
  return (
    <section aria-labelledby="h-break-glass" data-testid="break-glass">
      <h3 id="h-break-glass">Break-glass override</h3>
      {override !== null ? (
        <div data-testid="break-glass-override">
          <p>
            <code>{override.reviewer}</code>, an active member of the listed team <code>{override.team}</code>, overrode the approval requirements
            with review {override.reviewId}. {override.unsatisfiedOwnerSets.length === 0
              ? "Every owner set was satisfied by its owners; the override lifts the invalid code-owners lines."
              : `Owner sets not satisfied by their owners: ${override.unsatisfiedOwnerSets.map((index) => index + 1).join(", ")}.`}
          </p>
          <blockquote className="reason" aria-label="Reason given">{override.reason}</blockquote>
          <p className="muted">
            An override meets only the approval requirements. Incomplete evidence, a shared head or a repository that has not opted in still keep the check from
            succeeding{decision.conclusion === "success" ? "" : ", which is why this one does not succeed"}. A push or a dismissal ends it.
          </p>
        </div>
      ) : null}
      {refusals.length > 0 ? (
        <>
          <h4>Requests that did not override</h4>
          <ul className="refusals" aria-label="Break-glass requests that did not override">
            {refusals.map((refusal) => (
              <li key={refusal.reviewId} data-code={refusal.code}>
                <code>{refusal.reviewer}</code> <span className="muted">({refusal.code})</span>: <TextView text={refusal.message} />
                <div className="hint">{REFUSAL_HELP[refusal.code]}</div>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
