// The adapter is standalone (spec/release-adapter.md): no route, command or workflow may use it, so nothing else under
// server/ may import from server/release.

import fs from "node:fs";
import path from "node:path";
import { expect, test } from "bun:test";

const SERVER_DIR = path.resolve(import.meta.dir, "..");
const RELEASE_DIR = import.meta.dir;
const SOURCE = /\.(?:[cm]?[jt]sx?)$/;
// Static imports and re-exports, dynamic import(), require() and import type: any module specifier.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+)(["'`])([^"'`]+)\1/g;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (full === RELEASE_DIR || entry.name === "node_modules") continue;
      out.push(...sourceFiles(full));
    } else if (SOURCE.test(entry.name)) {
      out.push(full);
    }
  }
  return out;
}

export function importsOfRelease(file: string, text: string): string[] {
  const hits: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[2] ?? "";
    const resolved = specifier.startsWith(".") ? path.resolve(path.dirname(file), specifier) : specifier;
    const inRelease =
      resolved === RELEASE_DIR ||
      resolved.startsWith(`${RELEASE_DIR}${path.sep}`) ||
      /(?:^|\/)server\/release(?:\/|$)/.test(specifier);
    if (inRelease) hits.push(specifier);
  }
  return hits;
}

test("nothing else under server/ imports the release adapter", () => {
  const offenders: string[] = [];
  for (const file of sourceFiles(SERVER_DIR)) {
    const hits = importsOfRelease(file, fs.readFileSync(file, "utf8"));
    if (hits.length > 0) offenders.push(`${path.relative(SERVER_DIR, file)}: ${hits.join(", ")}`);
  }
  expect(offenders).toEqual([]);
});

test("the import scan recognises every way of importing the adapter", () => {
  const file = path.join(SERVER_DIR, "worker", "example.ts");
  const forms = [
    'import { ReleaseClient } from "../release/index.ts";',
    "import type { DraftPlan } from '../release/release-client.ts';",
    'export * from "../release";',
    'const m = await import("../release/index.ts");',
    'const m = require("../release");',
    'import "../release/index.ts";',
    'import { x } from "@/server/release/index.ts";',
  ];
  for (const form of forms) expect(importsOfRelease(file, form)).toHaveLength(1);
  expect(importsOfRelease(file, 'import { x } from "../releases/index.ts";')).toEqual([]);
  expect(importsOfRelease(file, 'import { x } from "./release-notes.ts";')).toEqual([]);
});
