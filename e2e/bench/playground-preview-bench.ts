// Playground change-preview benchmark (issue 19 item 3). Run: `bun e2e/bench/playground-preview-bench.ts`; prints one JSON
// document. What one keystroke costs the page's Web Worker (engine.ts explain(): the decision, the page's extras and, with a
// second CODEOWNERS, the change preview) for a 10,000-rule CODEOWNERS and a 2,999-file pull request:
// - baseline: no second CODEOWNERS (the page before the preview existed), measured in the same run;
// - unchanged: the second CODEOWNERS equal to the first (both files analysed, nothing to list);
// - moved: the second CODEOWNERS re-owns every changed file (100 changes listed, the rest counted).
// Each is the median of several runs after warm-up; the playground's own Playwright test holds the baseline to 300 ms per
// keystroke in the browser, so the preview's share is what this reports.
import { explain } from "../../web/src/engine.ts";
import { largeCodeowners, largeState } from "../../web/src/large-state.ts";
import { withChangePreview, withEvidence, withHeadCodeownersAt } from "../../web/src/state.ts";
import { time } from "./timing.ts";

const RUNS = 15;
const WARMUP = 3;

const median = (run: () => void) => time(run, RUNS, WARMUP).medianMs;

const state = largeState(10_000, 2_999);
const text = largeCodeowners(10_000);
const unchanged = withEvidence(state, withChangePreview);
const moved = withEvidence(state, (evidence) => withHeadCodeownersAt(withChangePreview(evidence), "CODEOWNERS", `${text}/services/ @zed\n`, ".forge"));
const movedPreview = explain(moved, "").preview;

console.log(
  JSON.stringify({
    rules: 10_000,
    files: 2_999,
    baselineMs: median(() => explain(state, "")),
    unchangedMs: median(() => explain(unchanged, "")),
    movedMs: median(() => explain(moved, "")),
    movedListed: movedPreview?.kind === "preview" ? movedPreview.ownershipChanges.length : null,
    movedMore: movedPreview?.kind === "preview" ? movedPreview.ownershipChangesOmitted : null,
  }),
);
