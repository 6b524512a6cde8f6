// The worker's calls into the core: the decision on the base commit and its check output, then the change preview of a pull
// request that changes a policy file (issue 19 item 2), appended after the decision's summary.
// The preview can neither change, delay beyond its own bound, nor block the decision (issue 25 item 1): the decision and its
// output are made first (decideOnly); the preview is computed from its own copy of the analysis with its own matching budget
// (MAX_PREVIEW_MATCH_STEPS) and rendered into the room the decision leaves (previewCheck). On the worker the two run as
// separate evaluation-thread requests, the preview's with a short time bound; whatever goes wrong with it, the decision's
// output is published with a one-line note saying why the preview is missing (previewLeftOut).
import { previewFromEvidence, type PreviewResult, type PreviewUnavailable } from "./change-preview.ts";
import { t, type Decision } from "./decision.ts";
import { evaluate } from "./evaluate.ts";
import type { EvaluationSettings, Evidence } from "./evidence.ts";
import { renderDecision, withPreview, type CheckOutput } from "./render-check.ts";

/** The decision and its output without any preview. */
export function decideOnly(evidence: Evidence, settings: EvaluationSettings): { decision: Decision; output: CheckOutput } {
  const decision = evaluate(evidence, settings);
  return { decision, output: renderDecision(decision) };
}

/** Whether the check of `decision` gets a preview: a conclusive decision of a pull request whose evidence has head files. */
export function wantsPreview(decision: Decision, evidence: Evidence): boolean {
  return decision.kind === "conclusive" && evidence.headFiles !== undefined;
}

/**
 * The preview of `evidence` and `output` (the decision's, from decideOnly) with it appended. May throw on a defect of the
 * preview: callers publish previewLeftOut(output, ...) instead.
 */
export function previewCheck(evidence: Evidence, settings: EvaluationSettings, output: CheckOutput): { preview: PreviewResult | null; output: CheckOutput } {
  const preview = previewFromEvidence(evidence, settings);
  return { preview, output: preview === null ? output : withPreview(output, preview) };
}

/** Why a preview is missing from a published check. */
export type PreviewOmission = { readonly kind: "failed" } | { readonly kind: "timeout"; readonly ms: number };

/** The preview result that says why it is missing (rendered as the section's one line). */
export function previewOmitted(omission: PreviewOmission): PreviewUnavailable {
  if (omission.kind === "failed") return { kind: "unavailable", why: t`it could not be computed` };
  return { kind: "unavailable", why: [`it took longer than ${omission.ms / 1000} s`] };
}

/** `output` (the decision's) with the one-line note that replaces a preview that failed or ran past its time bound. */
export function previewLeftOut(output: CheckOutput, omission: PreviewOmission): CheckOutput {
  return withPreview(output, previewOmitted(omission));
}

/**
 * Everything on the calling thread (the inline evaluator, `service explain`, the playground): the decision, then the preview,
 * whose defects cost it only its own section. `preview`: null unless the decision is conclusive and the evidence carries head
 * files (Evidence.headFiles).
 */
export function decideCheck(evidence: Evidence, settings: EvaluationSettings): { decision: Decision; preview: PreviewResult | null; output: CheckOutput } {
  const decided = decideOnly(evidence, settings);
  if (!wantsPreview(decided.decision, evidence)) return { ...decided, preview: null };
  try {
    return { decision: decided.decision, ...previewCheck(evidence, settings, decided.output) };
  } catch {
    // A defect in the preview (its computation or its rendering) must not cost the decision its publication.
    const preview = previewOmitted({ kind: "failed" });
    return { decision: decided.decision, preview, output: withPreview(decided.output, preview) };
  }
}
