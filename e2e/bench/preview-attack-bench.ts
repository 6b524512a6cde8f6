// Change-preview attack benchmark (issue 25 item 1). Run: `bun e2e/bench/preview-attack-bench.ts`; prints one JSON document.
//
// A pull request whose head CODEOWNERS is one line `* @a-a-a-…` (one owner of about 2.9 MB) made one decision take 5.7 s
// and 1.3 GB RSS, two at once 2.56 GB. Each scenario below runs in a fresh process (RSS never shrinks back, so scenarios
// must not share one) through the worker's own path: threadEvaluator() on evaluation threads, the decision request then the
// preview request. In each process one ordinary decision warms the threads up first; then the scenario's decision runs
// three times one after another and once as two at the same time, while the main thread samples RSS every 2 ms.
// Reported per scenario: the median wall time of one decide() and the RSS it added (peak − RSS after warm-up), alone and two
// at once, with what the published check says about the preview. Baselines from the same run: the same pull request with
// an ordinary head CODEOWNERS (`normal`), and the attack without the preview (no head files: the decision alone).
// Targets: the attack adds < 50 MiB RSS and < 500 ms per decision over the ordinary pull request, with 100 and 2,998 paths.
// Also `manyOwners`: the head's one line names 75,000 distinct owners of 39 characters (≈ 3 MB, every token valid), the
// case the token bound does not stop, which the per-group label keys and the rendering budget bound.
import { pino } from "pino";
import { MAX_CODEOWNERS_BYTES } from "../../server/policy/bounds.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence } from "../../server/evaluation/evidence.ts";
import { baseEvidence, found, withFiles } from "../../server/evaluation/evidence-fixture.ts";
import { PREVIEW_HEADING } from "../../server/evaluation/render-check.ts";
import { threadEvaluator } from "../../server/worker/evaluator.ts";
import { median } from "./timing.ts";

const settings = DEFAULT_EVALUATION_SETTINGS;
const SCENARIOS = ["normal", "attack", "attackWithoutPreview", "manyOwners"] as const;
const PATH_COUNTS = [100, 2_998] as const;
type Scenario = (typeof SCENARIOS)[number];

function headCodeowners(scenario: Scenario): string {
  if (scenario === "normal") return "* @acme/core\n/src/ @bob\n/docs/ @carol\n";
  if (scenario === "manyOwners") {
    const owners: string[] = [];
    for (let i = 0, bytes = 2; bytes < MAX_CODEOWNERS_BYTES - 100; i++) {
      const owner = `@${`o${i}-`.padEnd(39, "x")}`;
      owners.push(owner);
      bytes += owner.length + 1;
    }
    return `* ${owners.join(" ")}\n`;
  }
  return `* @${"a-".repeat((MAX_CODEOWNERS_BYTES - 100) / 2)}a\n`;
}

function evidenceFor(scenario: Scenario, paths: number): Evidence {
  const files = ["CODEOWNERS", ...Array.from({ length: paths - 1 }, (_, i) => `src/m${i % 50}/f${i}.ts`)];
  const changed = withFiles(baseEvidence(), files);
  if (scenario === "attackWithoutPreview") return changed;
  return { ...changed, headFiles: { codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", headCodeowners(scenario)) }, repositoryPolicy: changed.repositoryPolicy } };
}

const MiB = 1024 * 1024;

/** One scenario in this process: the child side. */
async function measure(scenario: Scenario, paths: number) {
  const evaluator = threadEvaluator(settings, { log: pino({ level: "silent" }), threads: 2 });
  try {
    await Promise.all([evaluator.decide(evidenceFor("normal", paths)), evaluator.decide(evidenceFor("normal", paths))]); // warm both threads
    const evidence = evidenceFor(scenario, paths);
    Bun.gc(true);
    const start = process.memoryUsage().rss;
    let peak = start;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
    const samples: number[] = [];
    let output = { summary: "" };
    for (let i = 0; i < 3; i++) {
      const begun = performance.now();
      ({ output } = await evaluator.decide(evidence));
      samples.push(performance.now() - begun);
    }
    const alonePeak = peak;
    const begunPair = performance.now();
    await Promise.all([evaluator.decide(evidence), evaluator.decide(evidence)]);
    const pairMs = performance.now() - begunPair;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const section = output.summary.includes(PREVIEW_HEADING) ? output.summary.slice(output.summary.indexOf(PREVIEW_HEADING) + PREVIEW_HEADING.length) : "";
    return {
      decideMs: Math.round(median(samples)),
      twoAtOnceMs: Math.round(pairMs),
      addedRssMiB: Math.round(((alonePeak - start) / MiB) * 10) / 10,
      twoAtOnceAddedRssMiB: Math.round(((peak - start) / MiB) * 10) / 10,
      summaryChars: output.summary.length,
      preview: section === "" ? "none" : section.includes("left out") ? section.trim().split("\n").pop() : section.includes("Invalid after this change") ? "shown, head line invalid" : "shown",
    };
  } finally {
    await evaluator.close();
  }
}

if (process.argv[2] === "--scenario") {
  console.log(JSON.stringify(await measure(process.argv[3] as Scenario, Number(process.argv[4]))));
} else {
  const results: Record<string, Record<string, unknown>> = {};
  for (const paths of PATH_COUNTS) {
    const row: Record<string, unknown> = {};
    for (const scenario of SCENARIOS) {
      const proc = Bun.spawnSync([process.execPath, import.meta.path, "--scenario", scenario, String(paths)], { stdout: "pipe", stderr: "inherit" });
      const text = proc.stdout.toString().trim();
      row[scenario] = proc.exitCode === 0 ? JSON.parse(text) : { exitCode: proc.exitCode, output: text.slice(0, 500) };
    }
    const normal = row.normal as { decideMs: number; addedRssMiB: number } | undefined;
    for (const scenario of ["attack", "manyOwners"] as const) {
      const measured = row[scenario] as { decideMs?: number; addedRssMiB?: number };
      if (normal?.decideMs === undefined || measured.decideMs === undefined) continue;
      row[`${scenario}OverNormal`] = { ms: measured.decideMs - normal.decideMs, rssMiB: Math.round((measured.addedRssMiB! - normal.addedRssMiB) * 10) / 10, withinTargets: measured.decideMs - normal.decideMs < 500 && measured.addedRssMiB! - normal.addedRssMiB < 50 };
    }
    results[`paths${paths}`] = row;
  }
  console.log(JSON.stringify({ machine: { cpus: navigator.hardwareConcurrency }, results }, null, 2));
}
