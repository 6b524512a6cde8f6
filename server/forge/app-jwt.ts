// The App JWT, minted once and used for a while (issue 26 item 8), given to @octokit/app through its `Octokit` option
// (DESIGN 3.13: withAppJwt below). @octokit/auth-app mints a fresh RS256 JWT for every App
// request and twice for every installation-token exchange (the exchange's own request passes its auth hook too), and caches
// only the installation tokens it gets: while the forge refuses the exchange (unreachable, 5xx), every webhook's fast path
// signed two JWTs, a quarter of the service's CPU under load. auth-app's `createJwt` option lets the caller mint; this is
// that minting, through the same library auth-app uses (universal-github-app-jwt), with its answer kept in memory only:
// never persisted, never logged, never in an error.
import type { Octokit } from "@octokit/core";
import githubAppJwt from "universal-github-app-jwt";

/**
 * How long a minted JWT is handed out. The forge accepts an App JWT for at most 10 minutes and universal-github-app-jwt
 * mints one valid from 30 s in the past to 9.5 minutes ahead, so a JWT handed out is still valid for at least
 * APP_JWT_MIN_VALIDITY_MS (clock skew between us and the forge, and a request that waits in the governor, stay covered).
 */
export const APP_JWT_REUSE_MS = 60_000;
/** A JWT is never handed out with less validity left than this, whatever the reuse window says. */
export const APP_JWT_MIN_VALIDITY_MS = 5 * 60_000;

export type MintAppJwt = (options: { id: number; privateKey: string; now?: number }) => Promise<{ token: string; expiration: number }>;

/** auth-app's createJwt: the JWT and its expiry (ISO 8601), for the App ID it was created for. */
export type AppJwtSource = (appId: string | number, timeDifference?: number) => Promise<{ jwt: string; expiresAt: string }>;

export type AppJwtOptions = {
  readonly appId: number;
  /** PEM (PKCS#1 as downloaded from the forge, or PKCS#8). */
  readonly privateKey: string;
  /** Milliseconds since the epoch (Date.now unless injected). */
  readonly now?: () => number;
  readonly mint?: MintAppJwt;
};

export function createAppJwtSource(options: AppJwtOptions): AppJwtSource {
  const now = options.now ?? Date.now;
  const mint: MintAppJwt = options.mint ?? githubAppJwt;
  let kept: { jwt: string; expiresAtMs: number; mintedAtMs: number } | null = null;
  let minting: Promise<{ jwt: string; expiresAtMs: number; mintedAtMs: number }> | null = null;

  const mintNow = async (timeDifference: number) => {
    const at = now();
    const minted = await mint({ id: options.appId, privateKey: options.privateKey, ...(timeDifference ? { now: Math.floor(at / 1000) + timeDifference } : {}) });
    return { jwt: minted.token, expiresAtMs: minted.expiration * 1000, mintedAtMs: at };
  };
  const usable = (entry: NonNullable<typeof kept>) => {
    const at = now();
    // A clock that went back makes the entry's age meaningless: mint again.
    return at >= entry.mintedAtMs && at - entry.mintedAtMs < APP_JWT_REUSE_MS && entry.expiresAtMs - at >= APP_JWT_MIN_VALIDITY_MS;
  };
  const answer = (entry: NonNullable<typeof kept>) => ({ jwt: entry.jwt, expiresAt: new Date(entry.expiresAtMs).toISOString() });

  return async (_appId, timeDifference) => {
    // auth-app passes a time difference only when the forge said our clock is off: that JWT is minted for the moment and
    // not kept (the next request starts from our clock again, as auth-app's own minting does).
    if (timeDifference) return answer(await mintNow(timeDifference));
    if (kept !== null && usable(kept)) return answer(kept);
    // Requests that come while one JWT is being minted wait for it: one minting, however many requests.
    if (minting === null) {
      minting = mintNow(0).then(
        (entry) => {
          kept = entry;
          minting = null;
          return entry;
        },
        (error: unknown) => {
          minting = null;
          throw error;
        },
      );
    }
    return answer(await minting);
  };
}

/**
 * The Octokit class to give @octokit/app as its `Octokit` option: @octokit/app builds the App's Octokit with auth-app and
 * `{ appId, privateKey }`, and has no option to pass `createJwt` (auth-app refuses both at once). This subclass's constructor
 * swaps the private key for `createJwt`, so every JWT the App's Octokit signs with (App requests and installation-token
 * exchanges) comes from `createJwt`. Options without a private key (an installation's Octokit built from the App's auth)
 * pass unchanged.
 */
export function withAppJwt(Base: typeof Octokit, createJwt: AppJwtSource): typeof Octokit {
  return class AppJwtOctokit extends Base {
    constructor(options: ConstructorParameters<typeof Octokit>[0] = {}) {
      const auth = options.auth as unknown;
      if (typeof auth === "object" && auth !== null && "privateKey" in auth) {
        const { privateKey: _replaced, ...rest } = auth as Record<string, unknown>;
        super({ ...options, auth: { ...rest, createJwt } });
      } else {
        super(options);
      }
    }
  };
}
