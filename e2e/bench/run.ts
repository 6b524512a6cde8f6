#!/usr/bin/env bun
/**
 * `bun run bench`: runs every e2e/bench/*-bench.ts in turn (never part of the pass/fail test run) and prints one JSON
 * document with each benchmark's own JSON output. A benchmark that needs PostgreSQL reads TEST_POSTGRES_URL; run
 * `scripts/bench.sh` to get a throwaway cluster.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";

const only = process.argv[2];
const dir = import.meta.dir;
const results: Record<string, unknown> = {};
for (const file of readdirSync(dir).filter((f) => f.endsWith("-bench.ts")).sort()) {
  if (only && !file.includes(only)) continue;
  const started = performance.now();
  const proc = Bun.spawnSync([process.execPath, join(dir, file)], { stdout: "pipe", stderr: "inherit", env: process.env });
  const text = proc.stdout.toString().trim();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text.slice(text.indexOf("{")));
  } catch {}
  results[file.replace(/\.ts$/, "")] = { exit_code: proc.exitCode, wall_ms: Math.round(performance.now() - started), result: parsed };
}
console.log(JSON.stringify({ machine: { cpus: navigator.hardwareConcurrency, bun: Bun.version }, benchmarks: results }, null, 2));
