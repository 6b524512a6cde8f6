// Forge errors as values, classified by status, headers and transport facts only — never by message text (STYLE 8).
//   rate_limited  403/429 with x-ratelimit-remaining: 0 or retry-after (429 without either too); retryAfterMs bounded to one day
//   transient     5xx, connection resets/refusals, timeouts, aborted requests, truncated or malformed bodies
//   unauthorized  401: the credential was rejected (the client drops its cached installation token); retryable
//   not_found     404 (DESIGN 3.6: "not eligible" for directory lookups)
//   permanent     any other 4xx

export type ForgeErrorKind = "rate_limited" | "transient" | "unauthorized" | "not_found" | "permanent";

/** Provider rate-limit delays are bounded to one day (spec "Limits"). */
export const MAX_RATE_LIMIT_DELAY_MS = 24 * 60 * 60 * 1000;
/** A 429 without retry-after or reset headers: the forge documents "wait at least one minute". */
export const DEFAULT_RATE_LIMIT_DELAY_MS = 60_000;

export class ForgeError extends Error {
  override readonly name = "ForgeError";
  constructor(
    readonly kind: ForgeErrorKind,
    /** Operator-facing, free of credentials, URLs with query strings and response bodies. */
    message: string,
    readonly status: number | null = null,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }

  /** Whether retrying the same request later may succeed. */
  get retryable(): boolean { return this.kind === "rate_limited" || this.kind === "transient" || this.kind === "unauthorized"; }
}

interface OctokitLikeError {
  name?: unknown; status?: unknown; cause?: unknown;
  response?: { status?: unknown; headers?: Record<string, string | number | undefined> };
}

/** Classifies anything thrown by an Octokit request for `what` (a route template, never a concrete URL). */
export function classifyForgeError(error: unknown, what: string, nowMs: number = Date.now()): ForgeError {
  if (error instanceof ForgeError) return error;
  const e = (typeof error === "object" && error !== null ? error : {}) as OctokitLikeError;
  if (e.name === "AbortError" || e.name === "TimeoutError") return new ForgeError("transient", `${what}: request aborted or timed out`);
  const response = e.response;
  if (!response || typeof response.status !== "number") {
    const cause = (typeof e.cause === "object" && e.cause !== null ? (e.cause as { name?: unknown }).name : undefined);
    const reason = cause === "TimeoutError" ? "timed out" : cause === "AbortError" ? "was aborted" : "failed without a response (connection refused or reset)";
    return new ForgeError("transient", `${what}: request ${reason}`);
  }
  const status = response.status;
  const headers = response.headers ?? {};
  const delay = rateLimitedForMs(status, headers, nowMs);
  if (delay !== null) return new ForgeError("rate_limited", `${what}: rate limited (status ${status})`, status, delay);
  if (status >= 500) return new ForgeError("transient", `${what}: forge error (status ${status})`, status);
  if (status === 401) return new ForgeError("unauthorized", `${what}: credentials rejected (status 401)`, status);
  if (status === 404) return new ForgeError("not_found", `${what}: not found (status 404)`, status);
  return new ForgeError("permanent", `${what}: request refused (status ${status})`, status);
}

/** The provider delay when an answer is a rate limit (403/429 with the headers that say so, or any 429), else null. */
export function rateLimitedForMs(status: number, headers: Record<string, string | number | undefined>, nowMs: number): number | null {
  if (status !== 403 && status !== 429) return null;
  return rateLimitDelayMs(headers, nowMs) ?? (status === 429 ? DEFAULT_RATE_LIMIT_DELAY_MS : null);
}

/** Delay from retry-after (seconds or HTTP date), else from x-ratelimit-reset when x-ratelimit-remaining is 0; null if neither. */
export function rateLimitDelayMs(headers: Record<string, string | number | undefined>, nowMs: number): number | null {
  const bound = (ms: number) => Math.min(MAX_RATE_LIMIT_DELAY_MS, Math.max(0, Math.ceil(ms)));
  const retryAfter = headers["retry-after"];
  if (retryAfter !== undefined && String(retryAfter).trim() !== "") {
    const text = String(retryAfter).trim();
    if (/^\d+$/.test(text)) return bound(Number(text) * 1000);
    const date = Date.parse(text);
    if (!Number.isNaN(date)) return bound(date - nowMs);
  }
  if (String(headers["x-ratelimit-remaining"] ?? "").trim() === "0") {
    const reset = String(headers["x-ratelimit-reset"] ?? "").trim();
    if (/^\d+$/.test(reset)) return bound(Number(reset) * 1000 - nowMs);
    return DEFAULT_RATE_LIMIT_DELAY_MS;
  }
  return null;
}

/** A 2xx response whose body is not what the route documents (truncated, not JSON, wrong shape): retryable. */
export function invalidBody(what: string): ForgeError {
  return new ForgeError("transient", `${what}: the forge sent a truncated or malformed body`);
}
