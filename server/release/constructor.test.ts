import util from "node:util";
import { describe, expect, test } from "bun:test";
import { AmbiguousMutationError, ControllerError, ReleaseClient, type ReleaseClientOptions } from "./index.ts";

const TOKEN = "ghs_SecretValueNeverShown_0123456789";
const base: ReleaseClientOptions = {
  token: TOKEN,
  repository: "octo-org/release-target",
  apiUrl: "https://api.forge.example",
  uploadUrl: "https://uploads.forge.example",
};

function refused(change: Partial<ReleaseClientOptions> | Record<string, unknown>): ControllerError {
  try {
    new ReleaseClient({ ...base, ...change } as ReleaseClientOptions);
  } catch (e) {
    expect(e).toBeInstanceOf(ControllerError);
    const error = e as ControllerError;
    expect(error.reason).toBe("invalid-argument");
    const token = (change as { token?: unknown }).token;
    if (typeof token === "string" && token.length > 0) expect(`${error.message}${error.stack}`).not.toContain(token);
    return error;
  }
  throw new Error("expected the constructor to refuse");
}

describe("token", () => {
  test("a printable ASCII token of exactly 4,096 bytes is accepted and one more byte is refused", () => {
    expect(() => new ReleaseClient({ ...base, token: "t".repeat(4096) })).not.toThrow();
    refused({ token: "t".repeat(4097) });
  });

  test("missing, whitespace, control and non-ASCII tokens are refused without echoing them", () => {
    for (const token of [undefined, "", "ghs_ab cd", "ghs_ab\tcd", "ghs_ab\ncd", "ghs_ab\u0000cd", "ghs_ab\u007fcd", "ghs_\u00e9t\u00e9", 42]) {
      refused({ token });
    }
  });
});

describe("repository", () => {
  test("components of up to 100 characters are accepted and 101 are refused", () => {
    expect(() => new ReleaseClient({ ...base, repository: `${"o".repeat(100)}/${"r".repeat(100)}` })).not.toThrow();
    refused({ repository: `${"o".repeat(101)}/r` });
    refused({ repository: `o/${"r".repeat(101)}` });
  });

  test("anything but exactly <owner>/<repository> with plain components is refused", () => {
    for (const repository of ["", "owner", "owner/", "/repo", "a/b/c", "./repo", "owner/..", "../x", "owner/re po", "owner/repo?x", "owner/repo#x", "owner/re%2Fpo", "owner/rep\u00f6", "owner\\repo"]) {
      refused({ repository });
    }
  });
});

describe("URLs", () => {
  test("only canonical HTTPS URLs without credentials, query or fragment are accepted", () => {
    expect(() => new ReleaseClient({ ...base, apiUrl: "https://forge.example/api/v3/", uploadUrl: "https://forge.example/api/uploads" })).not.toThrow();
    expect(() => new ReleaseClient({ ...base, apiUrl: "https://127.0.0.1:8443", uploadUrl: "https://[::1]:8443" })).not.toThrow();
    for (const apiUrl of [
      "http://api.forge.example",
      "ftp://api.forge.example",
      "https://user:pass@api.forge.example",
      "https://api.forge.example?x=1",
      "https://api.forge.example#x",
      "https://api.forge.example:443",
      "https://API.forge.example",
      "https://api.forge.example/a/../b",
      "https://api.forge.example/a%20b",
      "https://api.forge.example//",
      "api.forge.example",
      "",
    ]) {
      refused({ apiUrl });
      refused({ uploadUrl: apiUrl });
    }
  });
});

describe("timeout and CA", () => {
  test("timeouts above 0 and up to 120 seconds are accepted, fractions included", () => {
    for (const timeoutSeconds of [undefined, 0.3, 1, 30, 120]) {
      expect(() => new ReleaseClient({ ...base, ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }) })).not.toThrow();
    }
    for (const timeoutSeconds of [0, -1, 120.001, 121, Number.NaN, Number.POSITIVE_INFINITY, "30"]) refused({ timeoutSeconds });
  });

  test("a CA must be PEM certificate text", () => {
    for (const ca of ["", "not a certificate", 1, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"]) refused({ ca });
  });
});

describe("the token never shows", () => {
  test("String, JSON.stringify, Bun.inspect and util.inspect show the repository but never the token", () => {
    const client = new ReleaseClient(base);
    const shown = [
      String(client),
      `${client}`,
      JSON.stringify(client),
      JSON.stringify({ client }),
      Bun.inspect(client),
      util.inspect(client, { showHidden: true, depth: 10, getters: true }),
      util.format("%o %O %j %s", client, client, client, client),
      Object.prototype.toString.call(client),
      JSON.stringify(Object.getOwnPropertyNames(client).map((k) => (client as unknown as Record<string, unknown>)[k])),
    ];
    for (const text of shown) expect(text).not.toContain(TOKEN);
    expect(String(client)).toBe("ReleaseClient(octo-org/release-target)");
    expect(JSON.stringify(client)).toBe('{"repository":"octo-org/release-target"}');
  });

  test("the error classes are distinct, exported and carry no cause", () => {
    const a = new AmbiguousMutationError({ reason: "status", method: "POST", path: "/x?token=1", status: 502, requestId: "AB:CD" });
    expect(a).toBeInstanceOf(Error);
    expect(a).not.toBeInstanceOf(ControllerError);
    expect(a.message).toBe("POST /x: unexpected status: HTTP 502, request ID AB:CD");
    expect(a.path).toBe("/x");
    expect("cause" in a).toBe(false);
  });

  test("error paths are bounded", () => {
    const e = new ControllerError({ reason: "status", method: "GET", path: `/${"p".repeat(500)}`, status: 404 });
    expect(e.path!.length).toBeLessThanOrEqual(203);
    expect(e.message.length).toBeLessThan(300);
  });
});
