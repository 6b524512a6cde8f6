// What the worker writes on the forge for a decision: the check run's status, conclusion and output, or nothing. The worker
// acts on it (server/worker/jobs/evaluate-pull-request.ts) and the playground shows it as "the check run as the forge shows
// it", so the two cannot drift apart.
import type { Decision } from "./decision.ts";
import type { CheckOutput } from "./render-check.ts";

/** The output of a check that is (being) evaluated again: written by every reset to in_progress. */
export const IN_PROGRESS_OUTPUT = {
  title: "Evaluating code-owner approval",
  summary: "New activity on this pull request: the code-owner approval check is being evaluated again for this exact commit.",
} as const;

export type CheckPublication =
  /** The check is completed with the decision's conclusion and output (the only way a check ever shows success). */
  | { readonly kind: "completed"; readonly conclusion: "success" | "failure"; readonly output: CheckOutput }
  /** The check is left in progress with this output (no text). */
  | { readonly kind: "in_progress"; readonly output: { readonly title: string; readonly summary: string } }
  /**
   * Nothing is written. `retry`: evidence was incomplete, the check stays in progress as the reset that queued the evaluation
   * left it, and the evaluation is retried; `not_enabled`: the repository did not opt in, no check exists; `closed_shared_head`:
   * a closed pull request's head is also an open one's, whose evaluation owns the check.
   */
  | { readonly kind: "none"; readonly why: "retry" | "not_enabled" | "closed_shared_head" };

/**
 * The publication of `decision` (its rendered `output`) for a pull request in `state`. A shared head is never completed:
 * however the decision concludes, the check stays in progress naming the other pull request(s), until they close or move.
 */
export function publicationOf(decision: Decision, output: CheckOutput, state: string): CheckPublication {
  if (decision.kind === "retry") return { kind: "none", why: "retry" };
  if (decision.kind === "not_enabled") return { kind: "none", why: "not_enabled" };
  if (decision.sharedHeadWith.length > 0) {
    if (state !== "open") return { kind: "none", why: "closed_shared_head" };
    const others = decision.sharedHeadWith.map((n) => `#${n}`).join(", ");
    return {
      kind: "in_progress",
      output: {
        title: `Waiting: this commit is also the head of ${others}`,
        summary: `${IN_PROGRESS_OUTPUT.summary}\n\nThis commit is the head of more than one open pull request (${others}); a check on a shared commit cannot be bound to one pull request, so it stays in progress until the other pull request closes or moves to a new commit.`,
      },
    };
  }
  return { kind: "completed", conclusion: decision.conclusion!, output };
}
