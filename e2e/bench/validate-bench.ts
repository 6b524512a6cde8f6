// `service validate` benchmark (issue 19 item 4). Run: `npm run bench -- validate` (or `bun e2e/bench/validate-bench.ts`);
// prints one JSON document.
//
// A real-looking monorepo tree of 10,000 files (services, packages, apps, docs, generated code, tooling) and a CODEOWNERS of
// 2,000 rules written for it (directories, extensions under a package, any-depth names, per-app configs, doc areas; some
// rules point at directories that no longer exist, some are overtaken by later ones), both from a seeded PRNG so every run
// measures the same work. Timed, as medians after warm-up:
// - baseline: parseCodeowners() of the file alone, what the service does before any matching;
// - validate: the pure validator over the same file, a repository policy and the tree (parse + every tree check);
// - binary: `dist/service validate DIR --files-from FILE --format json` end to end (process start, reads, output), beside
//   `dist/service --version` as the process-start baseline.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCodeowners } from "../../server/policy/codeowners.ts";
import { validate } from "../../server/policy/validate.ts";
import { BINARY, ensureBinary } from "../support/binary.ts";
import { prng, time as timed } from "./timing.ts";

const FILES = 10_000;
const RULES = 2_000;
const RUNS = 9;
const WARMUP = 2;
const BINARY_RUNS = 3;


const EXTENSIONS = ["ts", "tsx", "go", "py", "md", "proto", "yaml", "json", "sql", "rs"];

function tree(seed: number): string[] {
  const random = prng(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const paths = new Set<string>(["README.md", "CODEOWNERS", ".forge/service-policy.toml", "package.json", ".forge/workflows/ci.yml"]);
  while (paths.size < FILES) {
    const kind = random();
    const ext = EXTENSIONS[pick(EXTENSIONS.length)];
    if (kind < 0.4) paths.add(`services/svc-${pick(1100)}/${random() < 0.7 ? "src" : "test"}/mod-${pick(6)}/file-${pick(20)}.${ext}`);
    else if (kind < 0.6) paths.add(`packages/pkg-${pick(200)}/src/mod-${pick(2)}/part-${pick(4)}/unit-${pick(10)}.${random() < 0.8 ? "ts" : "json"}`);
    else if (kind < 0.7) paths.add(`apps/app-${pick(50)}/config-${pick(40)}.yml`);
    else if (kind < 0.8) paths.add(`docs/area-${pick(100)}/page-${pick(30)}.md`);
    else if (kind < 0.9) paths.add(`services/svc-${pick(1100)}/generated-${pick(190)}/out/gen-${pick(10)}.${ext}`);
    else paths.add(`tools/${["lint", "build", "release", "ci"][pick(4)]}/script-${pick(200)}.${["sh", "py", "ts"][pick(3)]}`);
  }
  return [...paths].sort();
}

/**
 * Grouped the way large files are: a default, then tooling, docs, apps, packages, services, generated code (owned by a bot
 * team, so it overrides the services), and last a few security overrides that take whole services from their earlier rule.
 * Some rules name directories the tree no longer has (svc-1100.., generated-190.., tools/old).
 */
function codeowners(seed: number): string {
  const random = prng(seed);
  const pick = (n: number) => Math.floor(random() * n);
  const team = (i: number) => (random() < 0.7 ? `@acme/team-${i % 400}` : `@user-${i % 150}`);
  const lines = ["# generated for the validate benchmark", "* @acme/default"];
  for (const name of ["lint", "build", "release", "ci", "old"]) lines.push(`/tools/${name}/ @acme/tooling`);
  for (let n = 0; n < 100; n++) lines.push(`docs/area-${n}/* ${team(n)}`);
  for (let n = 0; n < 40; n++) lines.push(`/apps/*/config-${n}.yml @acme/ops`);
  for (let n = 0; n < 400; n++) lines.push(`/packages/pkg-${n % 200}/src/mod-${Math.floor(n / 200)}/**/*.ts ${team(n)}`);
  for (let n = 0; n < 1130; n++) lines.push(`/services/svc-${n}/ ${team(n)}`);
  for (let n = 0; n < 200; n++) lines.push(`**/generated-${n}/ @acme/codegen-bot`);
  while (lines.length < RULES + 1) lines.push(`/services/svc-${pick(1100)}/ @acme/security`);
  return lines.join("\n") + "\n";
}


const time = (work: () => unknown, runs = RUNS, warmup = WARMUP) => timed(work, runs, warmup).medianMs;

const POLICY = 'schema_version = 1\nenabled = true\n[[delegations]]\napp = "docs-bot"\npaths = ["docs/**"]\n';
const paths = tree(19);
const text = codeowners(19);
const input = {
  codeowners: [{ path: "CODEOWNERS", text }],
  codeownersLocations: ["CODEOWNERS"],
  forgeDirectory: ".forge",
  repositoryPolicy: { path: ".forge/service-policy.toml", text: POLICY },
  organizationPolicy: null,
  policyPath: ".forge/service-policy.toml",
  tree: paths,
};

const parseMs = time(() => parseCodeowners(text));
const validateMs = time(() => validate(input));
const report = validate(input);
const findings: Record<string, number> = {};
for (const finding of report.findings) findings[finding.kind] = (findings[finding.kind] ?? 0) + 1;

// The compiled binary end to end, over the same files written to disk.
ensureBinary();
const dir = mkdtempSync(join(tmpdir(), "svc-validate-bench-"));
let binaryMs: number;
let startupMs: number;
let binaryExit: number | null;
try {
  mkdirSync(join(dir, "repo", ".forge"), { recursive: true });
  writeFileSync(join(dir, "repo", "CODEOWNERS"), text);
  writeFileSync(join(dir, "repo", ".forge", "service-policy.toml"), POLICY);
  writeFileSync(join(dir, "tree.txt"), paths.join("\n") + "\n");
  const args = [BINARY, "validate", join(dir, "repo"), "--files-from", join(dir, "tree.txt"), "--format", "json"];
  binaryExit = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" }).exitCode;
  binaryMs = time(() => Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" }), BINARY_RUNS, 1);
  startupMs = time(() => Bun.spawnSync([BINARY, "--version"], { stdout: "pipe", stderr: "pipe" }), BINARY_RUNS, 1);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log(
  JSON.stringify(
    {
      inputs: { tree_files: paths.length, rules: report.summary.rules, codeowners_bytes: Buffer.byteLength(text) },
      validate: {
        median_ms: validateMs,
        match_steps: report.summary.matchSteps,
        unowned_paths: report.summary.unownedPaths,
        findings,
      },
      baseline: { what: "parseCodeowners() of the same file alone", median_ms: parseMs },
      validate_over_parse: Math.round((validateMs / parseMs) * 10) / 10,
      binary: { median_ms: binaryMs, exit_code: binaryExit, process_start_baseline_ms: startupMs, runs: BINARY_RUNS },
      runs: RUNS,
    },
    null,
    2,
  ),
);
