// The product is everything under server/ that is not a test: the executable compiles it, and `service demo` ships the forge
// simulator (server/simulator, issue 18 item 7). None of it may import from e2e/ (test harnesses, benchmarks, fixtures), or a
// test tool would end up in the executable. Tests under server/ may still use the shared test support in e2e/support.
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const SERVER = import.meta.dir;
const ROOT = dirname(SERVER);

function productSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return productSources(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

test("no product source under server/ imports from e2e/", () => {
  const offending: string[] = [];
  const files = productSources(SERVER);
  expect(files.length).toBeGreaterThan(100);
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
      if (!specifier!.startsWith(".")) continue;
      const target = relative(ROOT, resolve(dirname(file), specifier!));
      if (target.startsWith("e2e/") || target === "e2e") offending.push(`${relative(ROOT, file)} → ${specifier}`);
    }
  }
  expect(offending).toEqual([]);
});

test("the forge simulator the demo runs lives under server/simulator", () => {
  const demo = readFileSync(join(SERVER, "commands", "demo.ts"), "utf8");
  expect(demo).toContain('from "../simulator/simulator.ts"');
});
