// The worker's one call into the core: the decision on the base commit and its check output, with the change preview of a
// pull request that changes a policy file (issue 19 item 2). The preview is computed after the decision and from its own
// copy of the analysis: it can neither change the decision nor fail it.
import { previewFromEvidence, type PreviewResult } from "./change-preview.ts";
import { t, type Decision } from "./decision.ts";
import { evaluate } from "./evaluate.ts";
import type { EvaluationSettings, Evidence } from "./evidence.ts";
import { renderCheck, type CheckOutput } from "./render-check.ts";

/** `preview`: null unless the decision is conclusive and the evidence carries head files (Evidence.headFiles). */
export function decideCheck(evidence: Evidence, settings: EvaluationSettings): { decision: Decision; preview: PreviewResult | null; output: CheckOutput } {
  const decision = evaluate(evidence, settings);
  let preview: PreviewResult | null = null;
  if (decision.kind === "conclusive") {
    try {
      preview = previewFromEvidence(evidence, settings);
    } catch {
      // A defect in the preview must not cost the decision its publication: the section says it is missing instead.
      preview = { kind: "unavailable", why: t`the preview could not be computed` };
    }
  }
  return { decision, preview, output: renderCheck(decision, preview) };
}
