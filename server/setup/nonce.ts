// The browser binding of the setup flow (issue 16): GET /setup sets a cookie holding a random nonce and signs only its SHA-256
// into the state; GET /setup/callback accepts the state only from the browser that presents the nonce. A state copied out of
// that browser (a shared link, a page an attacker lures the administrator to with the attacker's own state and code) is refused.
//
// Cookie: `__Host-setup-nonce=<32 random bytes, base64url>; Path=/; Max-Age=<state lifetime>; Secure; HttpOnly; SameSite=Lax`.
// - `__Host-` makes the browser accept it only from a secure origin, without Domain, with Path=/: no sibling host (or plain-http
//   origin) can plant a nonce of its own choosing. That guarantee is why Path is `/` and not `/setup/callback`: the prefix
//   requires Path=/, and a path never isolated cookies within one origin anyway (RFC 6265 §8.5); the cookie only ever goes to
//   this service, lives as long as the state and is HttpOnly.
// - SameSite=Lax: the forge sends the browser back with a top-level GET redirect from another site, which Lax cookies follow.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export const SETUP_NONCE_COOKIE = "__Host-setup-nonce";
/** 32 random bytes, base64url: 43 characters. */
const NONCE = /^[A-Za-z0-9_-]{43}$/;

export function hashSetupNonce(nonce: string): string {
  return createHash("sha256").update(nonce, "utf8").digest("base64url");
}

/** A fresh nonce and its hash (the part the state carries). */
export function newSetupNonce(): { nonce: string; hash: string } {
  const nonce = randomBytes(32).toString("base64url");
  return { nonce, hash: hashSetupNonce(nonce) };
}

function serialize(value: string, maxAgeSeconds: number): string {
  return new Bun.Cookie(SETUP_NONCE_COOKIE, value, { path: "/", maxAge: maxAgeSeconds, secure: true, httpOnly: true, sameSite: "lax" }).serialize();
}

/** The Set-Cookie value that gives the browser its nonce for `maxAgeSeconds`. */
export function setupNonceCookie(nonce: string, maxAgeSeconds: number): string {
  return serialize(nonce, maxAgeSeconds);
}

/** The Set-Cookie value that makes the browser drop the nonce (used once). */
export function clearedSetupNonceCookie(): string {
  return serialize("", 0);
}

/** The nonce the request carries, or null when it carries none or a malformed one. */
export function readSetupNonce(request: Request): string | null {
  const header = request.headers.get("cookie");
  if (!header) return null;
  let nonce: string | null;
  try {
    nonce = new Bun.CookieMap(header).get(SETUP_NONCE_COOKIE);
  } catch {
    return null; // a header the parser refuses carries no usable nonce
  }
  return nonce !== null && NONCE.test(nonce) ? nonce : null;
}

/** Whether `nonce` is the one whose hash the state carries (constant time; both are SHA-256 digests in base64url). */
export function nonceMatches(nonce: string, nonceHash: string): boolean {
  const given = Buffer.from(hashSetupNonce(nonce), "base64url");
  const expected = Buffer.from(nonceHash, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
