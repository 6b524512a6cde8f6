import { describe, expect, test } from "bun:test";
import { ConfigError } from "./config-error.ts";
import { matchDecisionsToken, parseDecisionsTokens } from "./decision-tokens.ts";

const A = "a".repeat(40);
const B = "b".repeat(40);

describe("decisions token file", () => {
  test("reads named tokens, skipping blank and comment lines, and matches a presented token to its name", () => {
    const tokens = parseDecisionsTokens(`# readers\nci-pipeline:${A}\n\nauditor : ${B}\r\n`);
    expect(tokens.map((t) => t.name)).toEqual(["ci-pipeline", "auditor"]);
    expect(matchDecisionsToken(tokens, A)).toBe("ci-pipeline");
    expect(matchDecisionsToken(tokens, B)).toBe("auditor");
  });

  test("a wrong, empty or prefix token matches nobody", () => {
    const tokens = parseDecisionsTokens(`ci:${A}`);
    expect(matchDecisionsToken(tokens, "c".repeat(40))).toBeNull();
    expect(matchDecisionsToken(tokens, "")).toBeNull();
    expect(matchDecisionsToken(tokens, A.slice(0, 39))).toBeNull();
    expect(matchDecisionsToken(tokens, `${A}a`)).toBeNull();
  });

  test.each([
    ["an empty name", `:${A}`, /empty name/],
    ["a duplicated name", `ci:${A}\nci:${B}`, /repeats the name ci/],
    ["a short token", "ci:short", /at least 32 bytes/],
    ["an empty token", "ci:", /at least 32 bytes/],
    ["a line without a colon", A, /name:token/],
    ["a name with spaces", `c i:${A}`, /a name is/],
    ["no token at all", "# nothing\n", /names no token/],
    ["one token under two names", `ci:${A}\naudit:${A}`, /share one token/],
  ])("%s is a configuration error naming the setting and never the token", (_label, text, rule) => {
    let error: unknown;
    try {
      parseDecisionsTokens(text);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("SERVICE_DECISIONS_TOKEN_FILE");
    expect((error as ConfigError).message).toMatch(rule);
    expect((error as ConfigError).message).not.toContain(A);
    expect((error as ConfigError).message).not.toContain(B);
  });
});
