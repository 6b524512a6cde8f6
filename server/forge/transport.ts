// The only place that talks HTTP to the forge: App JWT and installation tokens through @octokit/app, a timeout on every request,
// errors classified into ForgeError (errors.ts). Installation tokens carry explicit permissions without statuses (spec
// "Authentication") and live only in @octokit/auth-app's in-memory cache; they are never persisted or logged.
import { App } from "@octokit/app";
import { Octokit } from "@octokit/core";
import type { Logger } from "pino";
import { classifyForgeError, ForgeError } from "./errors.ts";

/** Runtime installation-token permissions: everything the service reads or writes, never statuses (spec "Authentication"). */
export const INSTALLATION_PERMISSIONS = Object.freeze({ checks: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" } as const);
/** The REST API version the forge's published description documents (@octokit/openapi api.github.com, DESIGN 3.7). */
export const FORGE_API_VERSION = "2026-03-10";
/** Page size of every list (the forge's maximum, DESIGN 7.1). */
export const PER_PAGE = 100;
/** GET responses kept for conditional requests (ETag / If-None-Match): a 304 revalidates them and spends no rate limit. */
export const CONDITIONAL_CACHE_ENTRIES = 512;
/** Approximate bytes of response bodies kept for conditional requests. */
export const CONDITIONAL_CACHE_BYTES = 32 * 1024 * 1024;

export interface TransportOptions {
  apiUrl: string;
  appId: number;
  /** PEM (PKCS#1 as downloaded from the forge, or PKCS#8). */
  privateKey: string;
  /** Bound on each single request, token exchange included. */
  requestTimeoutMs: number;
  logger: Logger;
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface CallOptions {
  /** Caller's overall deadline (e.g. the webhook fast path); combined with the per-request timeout. */
  signal?: AbortSignal;
  /** Incremented once per forge request issued for this call (token exchanges excluded); `notModified` counts 304s. */
  counter?: { requests: number; notModified?: number };
  /** Told the provider delay of every rate-limited response, so a caller can defer its retry (bounded to one day). */
  onRateLimit?: (retryAfterMs: number) => void;
}

export interface ForgeResponse { data: unknown; headers: Record<string, string | number | undefined>; status: number }

type OctokitInstance = InstanceType<typeof Octokit>;

export interface Transport {
  readonly appId: number;
  /** App-authenticated (JWT) request: GET /app, GET /app/installations. */
  app(route: string, params: Record<string, unknown>, options?: CallOptions): Promise<ForgeResponse>;
  /** Installation-authenticated request with the runtime permissions. */
  installation(installationId: number, route: string, params: Record<string, unknown>, options?: CallOptions): Promise<ForgeResponse>;
}

export function createTransport(options: TransportOptions): Transport {
  const baseFetch = options.fetch ?? globalThis.fetch;
  // A fresh timeout signal per request: one made at startup would expire once for all (RECIPES 7). The API version header is
  // set here because @octokit/core has no default-headers option and the token exchange uses @octokit/app's own instance.
  const timeoutFetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const timeout = AbortSignal.timeout(options.requestTimeoutMs);
    const headers = new Headers(init?.headers);
    headers.set("x-github-api-version", FORGE_API_VERSION);
    return baseFetch(input, { ...init, headers, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
  }) as typeof fetch;
  const log = options.logger.child({ component: "forge" });
  const quiet = { debug() {}, info() {}, warn: (message: string) => log.warn({ source: "octokit" }, String(message)), error: (message: string) => log.error({ source: "octokit" }, String(message)) };
  const ForgeOctokit = Octokit.defaults({
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    userAgent: options.userAgent ?? "codeowner-approval-service",
    request: { fetch: timeoutFetch },
  });
  const app = new App({ appId: options.appId, privateKey: options.privateKey, Octokit: ForgeOctokit, log: quiet });
  const clients = new Map<number, { token: string; octokit: OctokitInstance }>();
  const stale = new Set<number>();

  async function octokitFor(installationId: number): Promise<OctokitInstance> {
    const refresh = stale.delete(installationId);
    let token: string;
    try {
      const auth = (await app.octokit.auth({ type: "installation", installationId, permissions: { ...INSTALLATION_PERMISSIONS }, refresh })) as { token: string };
      token = auth.token;
    } catch (error) {
      throw report(error, "POST /app/installations/{installation_id}/access_tokens");
    }
    const cached = clients.get(installationId);
    if (cached?.token === token) return cached.octokit;
    const octokit = new ForgeOctokit({ auth: token, log: quiet });
    clients.set(installationId, { token, octokit });
    return octokit;
  }

  function report(error: unknown, route: string): ForgeError {
    const classified = classifyForgeError(error, route);
    // Only the route template, status and kind: never the error object (it carries request headers) or response bodies.
    // A 404 is an ordinary answer for directory lookups ("not eligible"), so it is not worth a warning.
    const level = classified.kind === "not_found" ? "debug" : "warn";
    log[level]({ route, status: classified.status, kind: classified.kind, retryAfterMs: classified.retryAfterMs }, "forge request failed");
    return classified;
  }

  // Conditional requests (DESIGN 7.1): the forge answers 304 when nothing changed, which revalidates the kept body; it is
  // never a cache that skips asking, so eligibility facts are still checked at every evaluation.
  const conditional = new Map<string, { etag: string; response: ForgeResponse; bytes: number }>();
  let conditionalBytes = 0;
  const forget = (key: string) => {
    const entry = conditional.get(key);
    if (entry) { conditional.delete(key); conditionalBytes -= entry.bytes; }
  };
  const keep = (key: string, entry: { etag: string; response: ForgeResponse; bytes: number }) => {
    forget(key);
    if (entry.bytes > CONDITIONAL_CACHE_BYTES / 8) return;
    conditional.set(key, entry);
    conditionalBytes += entry.bytes;
    while (conditional.size > CONDITIONAL_CACHE_ENTRIES || conditionalBytes > CONDITIONAL_CACHE_BYTES) forget(conditional.keys().next().value!);
  };

  async function send(octokit: OctokitInstance, scope: string, route: string, params: Record<string, unknown>, call: CallOptions | undefined): Promise<ForgeResponse> {
    if (call?.counter) call.counter.requests += 1;
    const key = route.startsWith("GET ") ? `${scope} ${route} ${JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)))}` : null;
    const kept = key ? conditional.get(key) : undefined;
    const headers = { ...(params.headers as Record<string, string> | undefined), ...(kept ? { "if-none-match": kept.etag } : {}) };
    try {
      const response = await octokit.request(route, { ...params, headers, ...(call?.signal ? { request: { signal: call.signal } } : {}) });
      const result: ForgeResponse = { data: response.data, headers: response.headers as ForgeResponse["headers"], status: response.status };
      const etag = result.headers.etag;
      // Only parsed JSON is kept: a truncated body arrives as a string and must never be revalidated into use.
      if (key && typeof etag === "string" && response.status === 200 && typeof result.data === "object" && result.data !== null) {
        const length = Number(result.headers["content-length"]);
        keep(key, { etag, response: result, bytes: Number.isSafeInteger(length) && length > 0 ? length : JSON.stringify(result.data, (_k, v) => (typeof v === "bigint" ? String(v) : v)).length });
      }
      return result;
    } catch (error) {
      if (kept && key && (error as { status?: unknown }).status === 304) {
        if (call?.counter) call.counter.notModified = (call.counter.notModified ?? 0) + 1;
        keep(key, kept);
        return kept.response;
      }
      const classified = report(error, route);
      if (classified.retryAfterMs !== null) call?.onRateLimit?.(classified.retryAfterMs);
      throw classified;
    }
  }

  return {
    appId: options.appId,
    app: (route, params, call) => send(app.octokit, "app", route, params, call),
    async installation(installationId, route, params, call) {
      const octokit = await octokitFor(installationId);
      try {
        return await send(octokit, `installation:${installationId}`, route, params, call);
      } catch (error) {
        if (error instanceof ForgeError && error.kind === "unauthorized") stale.add(installationId);
        throw error;
      }
    },
  };
}
