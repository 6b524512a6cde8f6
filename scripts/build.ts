#!/usr/bin/env bun
/**
 * `bun run build`: compiles the service into one executable, dist/service, that runs from any directory with no dotenv or
 * bunfig autoload. BUILD_REVISION (a full 40- or 64-hex commit) may be given at build time to bake `build_revision` in.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { THREAD_ENTRY_POINTS } from "../server/threads.ts";

const root = join(import.meta.dir, "..");
const outfileFlag = process.argv.indexOf("--outfile");
const outfile = outfileFlag === -1 ? "dist/service" : process.argv[outfileFlag + 1]!;
const revision = process.env.BUILD_REVISION ?? "";
if (revision !== "" && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(revision)) {
  console.error("BUILD_REVISION must be a full lowercase commit ID (40 or 64 hex characters)");
  process.exit(2);
}

function run(cmd: string[], cwd = root) {
  const started = performance.now();
  const result = Bun.spawnSync(cmd, { cwd, stdout: "inherit", stderr: "inherit" });
  if (result.exitCode !== 0) {
    console.error(`build step failed: ${cmd.slice(0, 3).join(" ")} (exit ${result.exitCode})`);
    process.exit(1);
  }
  console.log(`  ${cmd.slice(0, 3).join(" ")} … ${Math.round(performance.now() - started)} ms`);
}

if (existsSync(join(root, "web", "vite.config.ts"))) {
  run([process.execPath, "x", "vite", "build", "--config", "web/vite.config.ts", "--logLevel", "warn"]);
  // The decisions page, a second static page beside the playground, served at /decisions/.
  run([process.execPath, "x", "vite", "build", "--config", "web/decisions/vite.config.ts", "--logLevel", "warn"]);
  run([process.execPath, "scripts/gen-embed.ts"]);
}

mkdirSync(join(root, "dist"), { recursive: true });
run([
  // Thread entry points are bundled beside the main one (server/threads.ts says how they are found at run time).
  process.execPath, "build", "--compile", "server/main.ts", ...THREAD_ENTRY_POINTS,
  "--outfile", outfile,
  "--minify-whitespace", "--minify-syntax", "--sourcemap",
  "--no-compile-autoload-dotenv", "--no-compile-autoload-bunfig",
  "--define", `BUILD_REVISION=${JSON.stringify(revision)}`,
]);
console.log(`built ${outfile}${revision ? ` (build_revision ${revision})` : ""}`);
