// The signed setup state (spec "Authentication": signature, audience and expiry). It travels from GET /setup through the forge's
// App creation page and back to GET /setup/callback, where it is checked before the one-use code is exchanged.
//
//   state = base64url(JSON payload) "." base64url(HMAC-SHA256(secret, "setup-state.v2." + base64url(JSON payload)))
//   payload = { v: 2, aud, iat, exp, nh, org }   aud = "<public URL>/setup/callback"; exp = iat + SETUP_STATE_LIFETIME_SECONDS
//     nh  = base64url(SHA-256(nonce)): the nonce itself is only in the browser's cookie (nonce.ts), so the state alone is useless
//           to anyone but the browser that opened /setup; nh is also the state's identity for single use (used-states.ts)
//     org = the organization the App is created for, or null for the administrator's personal account; the exchanged App's
//           owner must be that account (issue 16)
//
// The MAC is compared with crypto.timingSafeEqual before the payload is parsed; only then are the audience and expiry read. The
// secret is SERVICE_SETUP_STATE_SECRET, never the webhook secret (configuration refuses equal secrets). Version 1 states (no
// nonce hash, no owner) are refused as malformed.
import { createHmac, timingSafeEqual } from "node:crypto";
import { isOrganizationLogin } from "./manifest.ts";

/** The administrator has this long between opening /setup and coming back from the forge. */
export const SETUP_STATE_LIFETIME_SECONDS = 600;
/** Clock skew tolerated for a state issued "in the future" (several replicas, slightly different clocks). */
export const SETUP_STATE_CLOCK_SKEW_SECONDS = 60;
/** Longer input is refused before any work: a real state is about 200 characters. */
export const MAX_SETUP_STATE_LENGTH = 1024;

const DOMAIN = "setup-state.v2.";
/** base64url of a SHA-256 digest. */
const NONCE_HASH = /^[A-Za-z0-9_-]{43}$/;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

export type StateRejection = "malformed" | "signature" | "audience" | "expired";

/** What a state binds: the browser's nonce (by its hash) and the account that must own the App (null: personal). */
export interface SetupStateClaims { readonly nonceHash: string; readonly organization: string | null }
export type StateCheck = { ok: true; claims: SetupStateClaims; expiresAtMs: number } | { ok: false; reason: StateRejection };

interface StatePayload { v: 2; aud: string; iat: number; exp: number; nh: string; org: string | null }

/** The audience a state is bound to: the callback URL of this service's public origin. */
export function setupStateAudience(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/setup/callback`;
}

function mac(secret: Uint8Array, encodedPayload: string): Buffer {
  return createHmac("sha256", secret).update(DOMAIN + encodedPayload).digest();
}

/** Signs a state binding `claims` for `audience`, valid for `lifetimeSeconds` from `nowMs`. */
export function signSetupState(secret: Uint8Array, audience: string, nowMs: number, claims: SetupStateClaims, lifetimeSeconds = SETUP_STATE_LIFETIME_SECONDS): string {
  const iat = Math.floor(nowMs / 1000);
  const payload: StatePayload = { v: 2, aud: audience, iat, exp: iat + lifetimeSeconds, nh: claims.nonceHash, org: claims.organization };
  const encoded = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${encoded}.${mac(secret, encoded).toString("base64url")}`;
}

/** Checks signature (constant time), then audience, then expiry; returns the claims. Never throws; says which check failed. */
export function verifySetupState(secret: Uint8Array, state: string, audience: string, nowMs: number): StateCheck {
  if (state.length === 0 || state.length > MAX_SETUP_STATE_LENGTH) return { ok: false, reason: "malformed" };
  const parts = state.split(".");
  if (parts.length !== 2 || !SEGMENT.test(parts[0]!) || !SEGMENT.test(parts[1]!)) return { ok: false, reason: "malformed" };
  const [encoded, signature] = parts as [string, string];
  const expected = mac(secret, encoded);
  const given = Buffer.from(signature, "base64url");
  // Equal lengths first (timingSafeEqual requires it); the length of a SHA-256 MAC is public anyway.
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: "signature" };
  let payload: Partial<StatePayload>;
  try {
    payload = JSON.parse(Buffer.from(encoded, "base64url").toString("utf8")) as Partial<StatePayload>;
  } catch {
    return { ok: false, reason: "malformed" };
  }
  if (typeof payload !== "object" || payload === null || payload.v !== 2) return { ok: false, reason: "malformed" };
  if (typeof payload.nh !== "string" || !NONCE_HASH.test(payload.nh)) return { ok: false, reason: "malformed" };
  if (payload.org !== null && (typeof payload.org !== "string" || !isOrganizationLogin(payload.org))) return { ok: false, reason: "malformed" };
  if (payload.aud !== audience) return { ok: false, reason: "audience" };
  const now = Math.floor(nowMs / 1000);
  if (typeof payload.iat !== "number" || typeof payload.exp !== "number" || !Number.isSafeInteger(payload.iat) || !Number.isSafeInteger(payload.exp)) {
    return { ok: false, reason: "malformed" };
  }
  if (payload.exp <= now || payload.iat > now + SETUP_STATE_CLOCK_SKEW_SECONDS || payload.exp - payload.iat > SETUP_STATE_LIFETIME_SECONDS) {
    return { ok: false, reason: "expired" };
  }
  return { ok: true, claims: { nonceHash: payload.nh, organization: payload.org }, expiresAtMs: payload.exp * 1000 };
}
