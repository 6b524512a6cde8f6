import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { clearedSetupNonceCookie, newSetupNonce, nonceMatches, readSetupNonce, SETUP_NONCE_COOKIE, setupNonceCookie } from "./nonce.ts";

const withCookie = (cookie: string | null) => new Request("https://approvals.example.com/setup/callback", cookie === null ? {} : { headers: { cookie } });

describe("setup nonce", () => {
  test("a nonce is 32 random bytes in base64url, and its hash is its SHA-256", () => {
    const { nonce, hash } = newSetupNonce();
    expect(Buffer.from(nonce, "base64url")).toHaveLength(32);
    expect(hash).toBe(createHash("sha256").update(nonce).digest("base64url"));
    expect(newSetupNonce().nonce).not.toBe(nonce);
  });

  test("the cookie is a __Host- cookie: Secure, Path=/, no Domain; HttpOnly, SameSite=Lax, with the given lifetime", () => {
    const { nonce } = newSetupNonce();
    expect(setupNonceCookie(nonce, 600)).toBe(`${SETUP_NONCE_COOKIE}=${nonce}; Path=/; Max-Age=600; Secure; HttpOnly; SameSite=Lax`);
    expect(SETUP_NONCE_COOKIE.startsWith("__Host-")).toBe(true);
    expect(clearedSetupNonceCookie()).toBe(`${SETUP_NONCE_COOKIE}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax`);
  });

  test("the nonce is read from the request's cookies; absent or malformed, there is none", () => {
    const { nonce } = newSetupNonce();
    expect(readSetupNonce(withCookie(`a=1; ${SETUP_NONCE_COOKIE}=${nonce}; b=2`))).toBe(nonce);
    for (const header of [null, "", "a=1", `${SETUP_NONCE_COOKIE}=`, `${SETUP_NONCE_COOKIE}=${nonce}x`, `${SETUP_NONCE_COOKIE}=${"%".repeat(43)}`, `setup-nonce=${nonce}`, "=;;;%%%"]) {
      expect(readSetupNonce(withCookie(header))).toBeNull();
    }
  });

  test("only the nonce whose hash the state carries matches", () => {
    const mine = newSetupNonce();
    expect(nonceMatches(mine.nonce, mine.hash)).toBe(true);
    expect(nonceMatches(newSetupNonce().nonce, mine.hash)).toBe(false);
    expect(nonceMatches(mine.nonce, mine.hash.slice(0, -2))).toBe(false);
  });
});
