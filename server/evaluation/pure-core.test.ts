// The decision core must stay pure and browser-safe (DESIGN 2; the playground imports it): no Bun, Node, database, forge
// client or clock. This reads the sources, so a forbidden import fails here before it fails in the browser build.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ALLOWED_PACKAGES = new Set(["@sinclair/typebox", "@sinclair/typebox/value", "smol-toml"]);
const FORBIDDEN_CALLS = [/\bDate\.now\b/, /\bnew Date\b/, /\bsetTimeout\b/, /\bsetInterval\b/, /\bprocess\./, /\bBun\./, /\bperformance\./, /\bfetch\(/];

function sources(): { file: string; text: string }[] {
  return ["../policy", "."].flatMap((dir) => {
    const base = join(import.meta.dir, dir);
    return readdirSync(base)
      .filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"))
      .map((name) => ({ file: join(dir, name), text: readFileSync(join(base, name), "utf8") }));
  });
}

describe("pure core", () => {
  test("imports only relative modules and the browser-safe packages", () => {
    for (const { file, text } of sources()) {
      for (const [, specifier] of text.matchAll(/from\s+"([^"]+)"/g)) {
        const relative = specifier!.startsWith("./") || specifier!.startsWith("../policy/") || specifier!.startsWith("../evaluation/");
        expect({ file, specifier, allowed: relative || ALLOWED_PACKAGES.has(specifier!) }).toEqual({ file, specifier, allowed: true });
      }
    }
  });
  test("reads no clock, environment, timer or network", () => {
    for (const { file, text } of sources()) {
      for (const pattern of FORBIDDEN_CALLS) expect({ file, uses: pattern.test(text) ? String(pattern) : null }).toEqual({ file, uses: null });
    }
  });
});
