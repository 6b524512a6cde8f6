import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { pureCore } from "../vite.config.ts";

const root = join(import.meta.dir, "..", "..");
const resolve = pureCore().resolveId as unknown as (source: string, importer: string | undefined) => Promise<null>;
const from = (path: string) => join(root, path);

describe("the build refuses a decision core that is not browser-safe", () => {
  test("the core may import itself and the packages it is known to need", async () => {
    expect(await resolve("./decision.ts", from("server/evaluation/evaluate.ts"))).toBeNull();
    expect(await resolve("../policy/codeowners.ts", from("server/evaluation/analyze.ts"))).toBeNull();
    expect(await resolve("smol-toml", from("server/policy/policy-files.ts"))).toBeNull();
    expect(await resolve("@sinclair/typebox/value", from("server/policy/policy-files.ts"))).toBeNull();
    expect(await resolve("react", from("web/src/app.tsx"))).toBeNull();
  });

  for (const [source, importer, message] of [
    ["bun:sqlite", "server/evaluation/evaluate.ts", "browser-safe"],
    ["node:fs", "server/policy/codeowners.ts", "browser-safe"],
    ["fs", "server/policy/codeowners.ts", "browser-safe"],
    ["../store/index.ts", "server/evaluation/evaluate.ts", "may not reach server/store/index.ts"],
    ["../forge/client.ts", "server/evaluation/evaluate.ts", "may not reach server/forge/client.ts"],
    ["elysia", "server/evaluation/evaluate.ts", "not on the playground's allowlist"],
    ["./anything.ts", "server/store/index.ts", "only server/policy and server/evaluation"],
  ] as const) {
    test(`${importer} importing ${source} fails the build`, async () => {
      await expect(resolve(source, from(importer))).rejects.toThrow(message);
    });
  }
});
