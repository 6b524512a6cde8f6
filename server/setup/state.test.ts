import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { newSetupNonce } from "./nonce.ts";
import { MAX_SETUP_STATE_LENGTH, SETUP_STATE_LIFETIME_SECONDS, setupStateAudience, signSetupState as sign, verifySetupState } from "./state.ts";

const SECRET = new TextEncoder().encode("a-setup-state-secret-of-32-bytes!!");
const OTHER = new TextEncoder().encode("another-setup-state-secret-32-bytes");
const AUDIENCE = setupStateAudience("https://approvals.example.com");
const NOW = Date.parse("2026-11-22T12:00:00Z");
const CLAIMS = { nonceHash: newSetupNonce().hash, organization: "acme" };
const signSetupState = (secret: Uint8Array, audience: string, nowMs: number) => sign(secret, audience, nowMs, CLAIMS);

const payloadOf = (state: string) => JSON.parse(Buffer.from(state.split(".")[0]!, "base64url").toString("utf8")) as Record<string, unknown>;
/** Re-signs a changed payload with `secret`: what an attacker holding the secret could do (and nobody else). */
function forge(payload: Record<string, unknown>, secret = SECRET, domain = "setup-state.v2."): string {
  const encoded = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${encoded}.${createHmac("sha256", secret).update(`${domain}${encoded}`).digest("base64url")}`;
}
const payload = (changes: Record<string, unknown> = {}) => ({ v: 2, aud: AUDIENCE, iat: NOW / 1000, exp: NOW / 1000 + 60, nh: CLAIMS.nonceHash, org: "acme", ...changes });

describe("setup state", () => {
  test("a fresh state verifies for its audience and gives back its nonce hash, organization and expiry", () => {
    expect(verifySetupState(SECRET, signSetupState(SECRET, AUDIENCE, NOW), AUDIENCE, NOW + 1000))
      .toEqual({ ok: true, claims: CLAIMS, expiresAtMs: NOW + SETUP_STATE_LIFETIME_SECONDS * 1000 });
    const personal = { nonceHash: CLAIMS.nonceHash, organization: null };
    expect(verifySetupState(SECRET, sign(SECRET, AUDIENCE, NOW, personal), AUDIENCE, NOW)).toMatchObject({ ok: true, claims: personal });
  });
  test("the audience is the callback URL of the public origin", () => {
    expect(AUDIENCE).toBe("https://approvals.example.com/setup/callback");
    expect(payloadOf(signSetupState(SECRET, AUDIENCE, NOW))).toEqual({ v: 2, aud: AUDIENCE, iat: NOW / 1000, exp: NOW / 1000 + SETUP_STATE_LIFETIME_SECONDS, nh: CLAIMS.nonceHash, org: "acme" });
  });
  test("each setup's state is unique (its nonce hash)", () => {
    const other = sign(SECRET, AUDIENCE, NOW, { ...CLAIMS, nonceHash: newSetupNonce().hash });
    expect(other).not.toBe(signSetupState(SECRET, AUDIENCE, NOW));
  });

  describe("tampering", () => {
    test("a changed signature is refused", () => {
      const state = signSetupState(SECRET, AUDIENCE, NOW);
      const [payload, signature] = state.split(".") as [string, string];
      const flipped = `${payload}.${signature.slice(0, 5)}${signature[5] === "A" ? "B" : "A"}${signature.slice(6)}`;
      expect(verifySetupState(SECRET, flipped, AUDIENCE, NOW)).toEqual({ ok: false, reason: "signature" });
      expect(verifySetupState(SECRET, `${payload}.${signature.slice(0, -4)}`, AUDIENCE, NOW)).toEqual({ ok: false, reason: "signature" });
    });
    test("a changed payload (longer expiry) under the old signature is refused", () => {
      const state = signSetupState(SECRET, AUDIENCE, NOW);
      const changed = Buffer.from(JSON.stringify({ ...payloadOf(state), exp: NOW / 1000 + 86_400 })).toString("base64url");
      expect(verifySetupState(SECRET, `${changed}.${state.split(".")[1]}`, AUDIENCE, NOW)).toEqual({ ok: false, reason: "signature" });
    });
    test("a state signed with another secret is refused", () => {
      expect(verifySetupState(SECRET, signSetupState(OTHER, AUDIENCE, NOW), AUDIENCE, NOW)).toEqual({ ok: false, reason: "signature" });
    });
    test("a state for another audience is refused", () => {
      const elsewhere = signSetupState(SECRET, setupStateAudience("https://other.example.com"), NOW);
      expect(verifySetupState(SECRET, elsewhere, AUDIENCE, NOW)).toEqual({ ok: false, reason: "audience" });
    });
    test("an expired state is refused", () => {
      const state = signSetupState(SECRET, AUDIENCE, NOW);
      expect(verifySetupState(SECRET, state, AUDIENCE, NOW + SETUP_STATE_LIFETIME_SECONDS * 1000 - 1000)).toMatchObject({ ok: true });
      expect(verifySetupState(SECRET, state, AUDIENCE, NOW + SETUP_STATE_LIFETIME_SECONDS * 1000)).toEqual({ ok: false, reason: "expired" });
    });
    test("a state issued in the future, or with a lifetime beyond the limit, is refused even when correctly signed", () => {
      expect(verifySetupState(SECRET, signSetupState(SECRET, AUDIENCE, NOW + 3_600_000), AUDIENCE, NOW)).toEqual({ ok: false, reason: "expired" });
      const long = forge(payload({ exp: NOW / 1000 + 86_400 }));
      expect(verifySetupState(SECRET, long, AUDIENCE, NOW)).toEqual({ ok: false, reason: "expired" });
    });
    test("a state of the first version (no nonce hash, no owner) is refused, with either domain", () => {
      const v1 = { v: 1, aud: AUDIENCE, iat: NOW / 1000, exp: NOW / 1000 + 60, nonce: "n" };
      for (const domain of ["setup-state.v1.", "setup-state.v2."]) expect(verifySetupState(SECRET, forge(v1, SECRET, domain), AUDIENCE, NOW).ok).toBe(false);
    });
    test("a signed state without a well-formed nonce hash or owner is refused as malformed", () => {
      expect(verifySetupState(SECRET, forge(payload()), AUDIENCE, NOW).ok).toBe(true);
      for (const changes of [{ nh: undefined }, { nh: "short" }, { nh: 7 }, { org: undefined }, { org: "-bad-" }, { org: 5 }, { org: "x".repeat(40) }]) {
        expect(verifySetupState(SECRET, forge(payload(changes)), AUDIENCE, NOW)).toEqual({ ok: false, reason: "malformed" });
      }
    });
    test("malformed states are refused without throwing", () => {
      for (const bad of ["", "abc", "a.b.c", "a b.c", "x".repeat(MAX_SETUP_STATE_LENGTH + 1), forge({ v: 3, aud: AUDIENCE }), forge(payload({ iat: "x", exp: 1 }))]) {
        const result = verifySetupState(SECRET, bad, AUDIENCE, NOW);
        expect(result.ok).toBe(false);
      }
      expect(verifySetupState(SECRET, `${Buffer.from("not json").toString("base64url")}.${createHmac("sha256", SECRET).update(`setup-state.v2.${Buffer.from("not json").toString("base64url")}`).digest("base64url")}`, AUDIENCE, NOW)).toEqual({ ok: false, reason: "malformed" });
    });
  });
});
