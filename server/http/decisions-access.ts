import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { DecisionsToken } from "../config/decision-tokens.ts";
import { matchDecisionsToken } from "../config/decision-tokens.ts";

/**
 * Who may read the decision records. Two credentials, either enough:
 * - a named bearer token (SERVICE_DECISIONS_TOKEN_FILE): pipelines and auditors; reads every record;
 * - a session from signing in with the forge (the App's OAuth web flow, sign-in-routes.ts): a person; reads only the records
 *   of repositories the forge says they can read (ReadableRepositories, below).
 * With neither configured the decision routes answer 404, as if they did not exist.
 *
 * The session is a cookie the service alone can read or make: AES-256-GCM (node:crypto) over the person's login, ID, their
 * user access token (the forge's answer about their repositories needs it) and the session's end, with a key derived by HKDF
 * from the App's client secret (every `serve` process of one deployment shares it; rotating the secret ends every session).
 * Anything that does not decrypt and authenticate, or whose end has passed, is no session. Written by hand around node:crypto
 * because the session must carry the token without a server-side table, and the cookie libraries at hand only sign.
 */

export const SESSION_COOKIE = "__Host-decisions-session";
/** How long a session lasts (the forge's user access tokens of an App last as long). */
export const SESSION_LIFETIME_MS = 8 * 60 * 60 * 1000;
/** A session cookie longer than this is not read (the browser's own limit is 4 KiB). */
const MAX_SESSION_COOKIE_LENGTH = 3000;

export type Reader =
  | { readonly kind: "token"; readonly name: string }
  | { readonly kind: "person"; readonly login: string; readonly id: number; readonly accessToken: string };

/** The name a read is logged under: a token's name, or a person's forge login. */
export function readerName(reader: Reader): string {
  return reader.kind === "token" ? `token:${reader.name}` : `login:${reader.login}`;
}

type SessionBody = { readonly login: string; readonly id: number; readonly token: string; readonly exp: number };

export class SessionCipher {
  private readonly key: Buffer;
  constructor(clientSecret: string) {
    this.key = Buffer.from(hkdfSync("sha256", Buffer.from(clientSecret, "utf8"), Buffer.alloc(0), "decisions-session-v1", 32));
  }

  seal(person: { readonly login: string; readonly id: number; readonly accessToken: string }, nowMs: number): string {
    const body: SessionBody = { login: person.login, id: person.id, token: person.accessToken, exp: nowMs + SESSION_LIFETIME_MS };
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(body), "utf8"), cipher.final()]);
    return `v1.${Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString("base64url")}`;
  }

  /** The person a cookie value names, or null: not one this service sealed, altered, or past its end. */
  open(value: string, nowMs: number): Reader | null {
    if (value.length > MAX_SESSION_COOKIE_LENGTH || !value.startsWith("v1.")) return null;
    const raw = Buffer.from(value.slice(3), "base64url");
    if (raw.length < 12 + 16 + 2) return null;
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
      const body = JSON.parse(text) as Partial<SessionBody>;
      if (typeof body.login !== "string" || typeof body.id !== "number" || typeof body.token !== "string" || typeof body.exp !== "number") return null;
      if (!(nowMs < body.exp)) return null;
      return { kind: "person", login: body.login, id: body.id, accessToken: body.token };
    } catch {
      return null;
    }
  }
}

/** One cookie's value from the request (Bun's cookie parser, as setup's nonce reads it), or null. */
export function cookieValue(request: Request, name: string): string | null {
  const header = request.headers.get("cookie");
  if (header === null || header.length > 16_384) return null;
  try {
    return new Bun.CookieMap(header).get(name);
  } catch {
    return null; // a header the parser refuses carries no usable cookie
  }
}

/** A Set-Cookie value: always HttpOnly, Secure and SameSite=Lax, for the whole origin (the `__Host-` names require it). */
export function setCookie(name: string, value: string, maxAgeSeconds: number): string {
  return new Bun.Cookie(name, value, { path: "/", maxAge: maxAgeSeconds, secure: true, httpOnly: true, sameSite: "lax" }).serialize();
}

export interface DecisionsAccess {
  /** Whether any credential is configured (else the routes answer 404). */
  readonly configured: boolean;
  /** Whether people may sign in with the forge. */
  readonly signInEnabled: boolean;
  /** Who the request's credential names: a bearer token first, else the session cookie; null when neither holds. */
  reader(request: Request, nowMs: number): Reader | null;
  readonly sessions: SessionCipher | null;
}

export function decisionsAccess(options: { readonly tokens: readonly DecisionsToken[]; readonly clientSecret: string | null }): DecisionsAccess {
  const sessions = options.clientSecret === null ? null : new SessionCipher(options.clientSecret);
  return {
    configured: options.tokens.length > 0 || sessions !== null,
    signInEnabled: sessions !== null,
    sessions,
    reader(request, nowMs) {
      const authorization = request.headers.get("authorization");
      if (authorization !== null) {
        // A bearer token, when one is presented, is the only credential read: a wrong one is refused, not ignored.
        const match = /^Bearer ([\x21-\x7e]{1,512})$/.exec(authorization);
        if (match === null || options.tokens.length === 0) return null;
        const name = matchDecisionsToken(options.tokens, match[1]!);
        return name === null ? null : { kind: "token", name };
      }
      if (sessions === null) return null;
      const value = cookieValue(request, SESSION_COOKIE);
      return value === null ? null : sessions.open(value, nowMs);
    },
  };
}

/** What the forge says a person may read, as repository IDs. */
export type ReadableSet = { readonly repositoryIds: ReadonlySet<number> };

/** The most repositories a signed-in person's reads are filtered by (their IDs go into each query as parameters). */
export const MAX_READABLE_REPOSITORIES = 1000;
/** How long the forge's answer about a person's repositories is used before it is asked again. */
export const READABLE_CACHE_MS = 5 * 60 * 1000;

export class TooManyRepositories extends Error {
  override readonly name = "TooManyRepositories";
}

/**
 * The repositories each signed-in person may read, asked of the forge with their own token and kept at most
 * READABLE_CACHE_MS (bounded: at most 1,000 people). `fetch` answers the IDs or throws (the forge unreachable: the read fails
 * closed with 503; more than MAX_READABLE_REPOSITORIES: TooManyRepositories, 403).
 */
export class ReadableRepositories {
  private readonly cache = new LRUCache<string, { at: number; set: ReadableSet }>({ max: 1000 });
  constructor(private readonly fetch: (accessToken: string) => Promise<readonly number[]>) {}

  async of(reader: Extract<Reader, { kind: "person" }>, nowMs: number): Promise<ReadableSet> {
    // Keyed by the person and their token: a new sign-in asks again.
    const key = `${reader.id}:${reader.accessToken}`;
    const kept = this.cache.get(key);
    if (kept !== undefined && nowMs - kept.at < READABLE_CACHE_MS && nowMs >= kept.at) return kept.set;
    const ids = await this.fetch(reader.accessToken);
    if (ids.length > MAX_READABLE_REPOSITORIES) throw new TooManyRepositories(`the forge lists more than ${MAX_READABLE_REPOSITORIES} repositories`);
    const set: ReadableSet = { repositoryIds: new Set(ids) };
    this.cache.set(key, { at: nowMs, set });
    return set;
  }
}
