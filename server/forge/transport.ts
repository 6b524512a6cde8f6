// The only place that talks HTTP to the forge: App JWT and installation tokens through @octokit/app (its auth-app), a timeout
// on every request, errors classified into ForgeError (errors.ts). Installation tokens carry explicit permissions without
// statuses (spec "Authentication") and live only in auth-app's in-memory cache, the App JWT only in app-jwt.ts's; they are
// never persisted or logged.
import { App } from "@octokit/app";
import { Octokit } from "@octokit/core";
import { GraphqlResponseError, withCustomRequest } from "@octokit/graphql";
import { request as octokitRequest } from "@octokit/request";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { createAppJwtSource, withAppJwt } from "./app-jwt.ts";
import { classifyForgeError, ForgeError } from "./errors.ts";
import { type Answer, APP_SCOPE, createGovernor, DEFAULT_GOVERNOR_SETTINGS, type Governor, graphqlScope, type Permit, type Priority, type RequestOutcome } from "./governor.ts";

/** Runtime installation-token permissions: everything the service reads or writes, never statuses (spec "Authentication"). */
export const INSTALLATION_PERMISSIONS = Object.freeze({ checks: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" } as const);
/** The REST API version the forge's published description documents (@octokit/openapi api.github.com, DESIGN 3.7). */
export const FORGE_API_VERSION = "2026-03-10";
/** Page size of every list (the forge's maximum, DESIGN 7.1). */
export const PER_PAGE = 100;
/**
 * Approximate bytes of GET responses kept for conditional requests (ETag / If-None-Match): a 304 revalidates them and spends
 * no rate limit. Bounded by bytes, not entries, so thousands of small answers (a large organization's pull requests and
 * directory facts) stay revalidatable; least recently used first out; one answer may take at most an eighth.
 */
export const CONDITIONAL_CACHE_BYTES = 32 * 1024 * 1024;
/** What one kept answer costs beyond its body: key, ETag, headers, bookkeeping. */
export const CONDITIONAL_ENTRY_OVERHEAD_BYTES = 512;
/**
 * Lookups never kept for conditional requests: the managed check-run list changes with every write of ours (its ETag never
 * matches again), and a pull request's file pages are cached by head and base commit instead (evidence.ts).
 */
export const NOT_KEPT_ROUTES: ReadonlySet<string> = new Set(["GET /repos/{owner}/{repo}/commits/{ref}/check-runs", "GET /repos/{owner}/{repo}/pulls/{pull_number}/files"]);

/** How long a token from @octokit/auth-app is used before asking it again (it mints a new one when its own cache says so). */
const TOKEN_RECHECK_MS = 60_000;
/** A token is never used this close to its expiry. */
const TOKEN_EXPIRY_MARGIN_MS = 5 * 60_000;

/** RFC 6570 simple expansion of one value, as @octokit/endpoint encodes path parameters. */
function encodeUnreserved(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A kept GET answer: its ETag, the answer, and the approximate bytes of its body. */
export interface KeptResponse { etag: string; response: ForgeResponse; bytes: number }

/** The conditional cache: least recently used out first, bounded by the bytes of what it keeps (with a per-entry overhead). */
export function conditionalCache(maxBytes: number): LRUCache<string, KeptResponse> {
  return new LRUCache<string, KeptResponse>({
    maxSize: maxBytes, maxEntrySize: Math.floor(maxBytes / 8),
    sizeCalculation: (entry, key) => entry.bytes + key.length + CONDITIONAL_ENTRY_OVERHEAD_BYTES,
  });
}

/** One request's key in the conditional cache: who asks (App or installation), the route template and every parameter. */
export function conditionalKey(scope: string, route: string, params: Record<string, unknown>): string {
  return `${scope} ${route} ${JSON.stringify(Object.entries(params).sort(([a], [b]) => (a < b ? -1 : 1)))}`;
}

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
  /** Asked before every request and told every answer (governor.ts); one with the default settings when absent. */
  governor?: Governor;
}

export interface CallOptions {
  /** Caller's overall deadline (e.g. the webhook fast path); combined with the per-request timeout. */
  signal?: AbortSignal;
  /** Incremented once per forge request issued for this call (token exchanges excluded); `notModified` counts 304s. */
  counter?: { requests: number; notModified?: number };
  /** Told the provider delay of every rate-limited response, so a caller can defer its retry (bounded to one day). */
  onRateLimit?: (retryAfterMs: number) => void;
  /**
   * false: ask afresh, without the kept ETag (a listing read again after a revalidated page seemed to break its links). A
   * caller's own If-None-Match (in `headers`) is still sent, and its 304 is returned as it is, with `data` null.
   */
  conditional?: false;
  /** Webhook-driven work is "interactive" (the default); reconciler scans and fan-out work are "background" (governor.ts). */
  priority?: Priority;
  /**
   * The form a 200's JSON body is returned in and kept in for conditional requests (a 304 then gives the same form): a long
   * listing keeps only the fields its reader looks at, so all its pages stay revalidatable in CONDITIONAL_CACHE_BYTES (the
   * reconciler's pull-request pages: a whole page of the forge's pull requests is about a megabyte). `name` keeps these
   * entries apart from the whole bodies other readers of the route keep.
   */
  keptAs?: { readonly name: string; readonly project: (data: unknown) => unknown };
  /**
   * The most bytes of response body read (installation requests): past it the request is cut off and fails with
   * ResponseOverBound, before the rest is received. For answers whose size a hostile party decides (a blob of any size).
   */
  maxBodyBytes?: number;
}

/** A response body over its caller's `maxBodyBytes`: cut off unread. Permanent: the same request would answer the same. */
export class ResponseOverBound extends ForgeError {
  constructor(route: string, readonly maxBodyBytes: number) {
    super("permanent", `${route}: response body over ${maxBodyBytes} bytes`);
  }
}

/** The body of `response` as text, reading at most `maxBytes` (a declared Content-Length over it is refused unread). */
export async function boundedText(response: Response, route: string, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new ResponseOverBound(route, maxBytes);
  }
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new ResponseOverBound(route, maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export interface ForgeResponse {
  data: unknown;
  headers: Record<string, string | number | undefined>;
  status: number;
  /** The forge answered 304: `data` is the body kept from an earlier answer. */
  revalidated?: true;
}

/** The route template GraphQL requests are logged, counted and classified under. */
export const GRAPHQL_ROUTE = "POST /graphql";

/** A GraphQL query and its variables (graphql.ts). */
export interface GraphqlDocument {
  readonly query: string;
  readonly variables: Readonly<Record<string, unknown>>;
}

export interface Transport {
  readonly appId: number;
  /** App-authenticated (JWT) request: GET /app, GET /app/installations. */
  app(route: string, params: Record<string, unknown>, options?: CallOptions): Promise<ForgeResponse>;
  /** Installation-authenticated request with the runtime permissions. */
  installation(installationId: number, route: string, params: Record<string, unknown>, options?: CallOptions): Promise<ForgeResponse>;
  /**
   * Installation-authenticated GraphQL query (POST /graphql; on a forge whose REST API is under `/api/v3`, its `/api/graphql`).
   * `data` is the whole answer (`data` and `errors` as the forge sent them); graphql.ts reads it. The governor paces it in
   * the installation's GraphQL scope; `maxBodyBytes` bounds the answer as for REST reads.
   */
  graphql(installationId: number, document: GraphqlDocument, options?: CallOptions): Promise<ForgeResponse>;
}

export function createTransport(options: TransportOptions): Transport {
  const baseFetch = options.fetch ?? globalThis.fetch;
  // A fresh timeout signal per request: one made at startup would expire once for all (RECIPES 7). The API version header is
  // set here because @octokit/core has no default-headers option and the token exchange uses auth-app's own request.
  const timeoutFetch = ((input: RequestInfo | URL, init?: RequestInit) => {
    const timeout = AbortSignal.timeout(options.requestTimeoutMs);
    const headers = new Headers(init?.headers);
    headers.set("x-github-api-version", FORGE_API_VERSION);
    return baseFetch(input, { ...init, headers, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
  }) as typeof fetch;
  const log = options.logger.child({ component: "forge" });
  const governor = options.governor ?? createGovernor(DEFAULT_GOVERNOR_SETTINGS);
  const quiet = { debug() {}, info() {}, warn: (message: string) => log.warn({ source: "octokit" }, String(message)), error: (message: string) => log.error({ source: "octokit" }, String(message)) };
  const ForgeOctokit = Octokit.defaults({
    baseUrl: options.apiUrl.replace(/\/+$/, ""),
    userAgent: options.userAgent ?? "codeowner-approval-service",
    request: { fetch: timeoutFetch },
  });
  // The App's Octokit from @octokit/app, its Octokit class given the App JWTs minted by app-jwt.ts (one kept for a while)
  // instead of auth-app minting one for every request it signs (DESIGN 3.13). Only app.octokit is used: never
  // app.getInstallationOctokit (RECIPES 7: it asks for every installed permission) nor app.webhooks (we verify ourselves).
  const createJwt = createAppJwtSource({ appId: options.appId, privateKey: options.privateKey });
  const appOctokit = new App({ appId: options.appId, privateKey: options.privateKey, Octokit: withAppJwt(ForgeOctokit, createJwt), log: quiet }).octokit;
  const userAgent = options.userAgent ?? "codeowner-approval-service";
  const baseUrl = options.apiUrl.replace(/\/+$/, "");
  // Each installation's token as @octokit/auth-app last gave it, asked again at most once a TOKEN_RECHECK_MS (auth-app
  // keeps the token itself and decides when to mint a new one) and at once after a 401.
  const tokens = new Map<number, { token: string; recheckAt: number }>();
  const stale = new Set<number>();

  async function tokenFor(installationId: number): Promise<string> {
    const refresh = stale.delete(installationId);
    const known = tokens.get(installationId);
    if (!refresh && known && Date.now() < known.recheckAt) return known.token;
    try {
      const auth = (await appOctokit.auth({ type: "installation", installationId, permissions: { ...INSTALLATION_PERMISSIONS }, refresh })) as { token: string; expiresAt?: string };
      const expiresAt = auth.expiresAt ? Date.parse(auth.expiresAt) : Number.NaN;
      const recheckAt = Math.min(Date.now() + TOKEN_RECHECK_MS, Number.isNaN(expiresAt) ? Number.POSITIVE_INFINITY : expiresAt - TOKEN_EXPIRY_MARGIN_MS);
      tokens.set(installationId, { token: auth.token, recheckAt });
      return auth.token;
    } catch (error) {
      throw report(error, "POST /app/installations/{installation_id}/access_tokens");
    }
  }

  /**
   * One installation request with fetch. Written by hand instead of going through Octokit's request pipeline: under webhook
   * load that pipeline (endpoint merging, URL-template expansion, the hook chain, a RequestError built for every 304) cost
   * several times the request itself (issue 5 profile). Same wire format as @octokit/request: path parameters percent-encoded
   * as RFC 6570 simple expansion, the others in the query (GET) or a JSON body, JSON parsed when the response says so.
   */
  async function fetchInstallation(token: string, route: string, params: Record<string, unknown>, headers: Record<string, string>, signal: AbortSignal | undefined, maxBodyBytes?: number, url?: string): Promise<ForgeResponse> {
    const space = route.indexOf(" ");
    const method = route.slice(0, space);
    const rest: Record<string, unknown> = { ...params };
    delete rest.headers;
    const path = route.slice(space + 1).replace(/\{(\w+)\}/g, (_match, name: string) => {
      const value = rest[name];
      delete rest[name];
      return encodeUnreserved(String(value));
    });
    const fields = Object.entries(rest).filter(([, value]) => value !== undefined);
    const read = method === "GET" || method === "HEAD";
    const query = read && fields.length > 0 ? `?${fields.map(([name, value]) => `${name}=${encodeURIComponent(String(value))}`).join("&")}` : "";
    const timeout = AbortSignal.timeout(options.requestTimeoutMs);
    const response = await baseFetch(url ?? `${baseUrl}${path}${query}`, {
      method,
      headers: {
        accept: "application/vnd.github.v3+json",
        "user-agent": userAgent,
        "x-github-api-version": FORGE_API_VERSION,
        authorization: `token ${token}`,
        ...(read || fields.length === 0 ? {} : { "content-type": "application/json; charset=utf-8" }),
        ...headers,
      },
      ...(read || fields.length === 0 ? {} : { body: JSON.stringify(Object.fromEntries(fields)) }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const responseHeaders: ForgeResponse["headers"] = Object.fromEntries(response.headers);
    if (response.status === 304) {
      await response.arrayBuffer().catch(() => {});
      return { data: null, headers: responseHeaders, status: 304 };
    }
    if (response.status >= 400) {
      await response.arrayBuffer().catch(() => {});
      throw Object.assign(new Error(`status ${response.status}`), { status: response.status, response: { status: response.status, headers: responseHeaders } });
    }
    const text = maxBodyBytes === undefined ? await response.text() : await boundedText(response, route, maxBodyBytes);
    let data: unknown = text;
    if (/application\/json/.test(String(responseHeaders["content-type"] ?? ""))) {
      try {
        data = JSON.parse(text);
      } catch {
        // A truncated or malformed JSON body stays a string: callers treat a non-object as an invalid body (transient).
      }
    }
    return { data, headers: responseHeaders, status: response.status };
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
  const conditional = conditionalCache(CONDITIONAL_CACHE_BYTES);
  const keep = (key: string, entry: KeptResponse) => {
    conditional.delete(key);
    conditional.set(key, entry); // lru-cache drops an entry over maxEntrySize instead of keeping it
  };

  type Exchange = (params: Record<string, unknown>, headers: Record<string, string>, signal: AbortSignal | undefined) => Promise<ForgeResponse>;

  /** A failed call as a ForgeError, logged, with its provider delay told to the caller. */
  function fail(error: unknown, route: string, call: CallOptions | undefined): ForgeError {
    const classified = report(error, route);
    if (classified.retryAfterMs !== null) call?.onRateLimit?.(classified.retryAfterMs);
    return classified;
  }

  async function send(scope: string, route: string, params: Record<string, unknown>, call: CallOptions | undefined, exchange: Exchange): Promise<ForgeResponse> {
    let permit: Permit;
    try {
      permit = await governor.acquire(scope, route.slice(0, route.indexOf(" ")), call?.priority ?? "interactive", call?.signal);
    } catch (error) {
      throw fail(error, route, call);
    }
    if (call?.counter) call.counter.requests += 1;
    const key = route.startsWith("GET ") && !NOT_KEPT_ROUTES.has(route) ? conditionalKey(scope, route, params) + (call?.keptAs ? ` as ${call.keptAs.name}` : "") : null;
    const kept = key && call?.conditional !== false ? conditional.get(key) : undefined;
    const headers = { ...(params.headers as Record<string, string> | undefined), ...(kept ? { "if-none-match": kept.etag } : {}) };
    // 304: the kept body is still current (it spent no rate limit). Its Link is the one the 304 carries, when it carries one
    // (RFC 9111 4.3.4: a 304's fields update the kept response): a list's pages can move while a page's body stays the same.
    const revalidated = (entry: NonNullable<typeof kept>, at: string, notModified: ForgeResponse["headers"] | undefined): ForgeResponse => {
      if (call?.counter) call.counter.notModified = (call.counter.notModified ?? 0) + 1;
      const link = notModified?.link;
      const current = link === undefined ? entry : { ...entry, response: { ...entry.response, headers: { ...entry.response.headers, link } } };
      keep(at, current);
      return { ...current.response, revalidated: true };
    };
    let answer: Answer | null = null;
    try {
      let result = await exchange(params, headers, call?.signal);
      answer = result;
      const projected = call?.keptAs && result.status === 200 && typeof result.data === "object" && result.data !== null;
      if (projected) result = { ...result, data: call.keptAs!.project(result.data) };
      if (result.status === 304) {
        if (kept && key) return revalidated(kept, key, result.headers);
        // A conditional request the caller made itself (its own If-None-Match) gets the 304 back: the caller knows what it holds.
        if (!kept && typeof headers["if-none-match"] === "string") {
          if (call?.counter) call.counter.notModified = (call.counter.notModified ?? 0) + 1;
          return result;
        }
        throw Object.assign(new Error("status 304"), { status: 304, response: { status: 304, headers: result.headers } });
      }
      const etag = result.headers.etag;
      // Only parsed JSON is kept: a truncated body arrives as a string and must never be revalidated into use.
      if (key && typeof etag === "string" && result.status === 200 && typeof result.data === "object" && result.data !== null) {
        const length = Number(result.headers["content-length"]);
        keep(key, { etag, response: result, bytes: !projected && Number.isSafeInteger(length) && length > 0 ? length : JSON.stringify(result.data, (_k, v) => (typeof v === "bigint" ? String(v) : v)).length });
      }
      return result;
    } catch (error) {
      const response = (error as { response?: { status?: unknown; headers?: ForgeResponse["headers"] } }).response;
      if (typeof response?.status === "number") answer = { status: response.status, headers: response.headers ?? {} };
      if (kept && key && (error as { status?: unknown }).status === 304) return revalidated(kept, key, response?.headers);
      throw fail(error, route, call);
    } finally {
      permit.settle(answer);
    }
  }

  /**
   * A GraphQL answer carrying `errors` is a failed request whatever its HTTP status (200): counted `rate_limited` when an error
   * says RATE_LIMITED, else `error` (graphql.ts reads the errors themselves).
   */
  function withGraphqlOutcome(response: ForgeResponse): ForgeResponse & { outcome?: RequestOutcome } {
    const errors = typeof response.data === "object" && response.data !== null ? (response.data as { errors?: unknown }).errors : undefined;
    if (errors === undefined || errors === null || (Array.isArray(errors) && errors.length === 0)) return response;
    const rateLimited = Array.isArray(errors) && errors.some((entry) => typeof entry === "object" && entry !== null && (entry as { type?: unknown }).type === "RATE_LIMITED");
    return { ...response, outcome: rateLimited ? "rate_limited" : "error" };
  }

  // GraphQL requests are composed by @octokit/graphql (variables, the endpoint's URL, including a GitHub Enterprise Server's
  // `/api/graphql` beside its `/api/v3`) and sent by fetchInstallation, through the hook of a request made for each query:
  // @octokit/request would read the whole answer unbounded, and the governor needs the answer's status and rate-limit
  // headers, which @octokit/graphql does not return. The answer comes back whole (`data` and `errors`), for graphql.ts.
  const graphqlBase = octokitRequest.defaults({ baseUrl });
  function fetchGraphql(token: string, document: GraphqlDocument, headers: Record<string, string>, signal: AbortSignal | undefined, maxBodyBytes: number | undefined): Promise<ForgeResponse> {
    let answer: ForgeResponse | undefined;
    const query = withCustomRequest(graphqlBase.defaults({
      request: {
        hook: async (_send: unknown, endpoint: Parameters<typeof graphqlBase.endpoint.parse>[0]) => {
          const { url, body } = graphqlBase.endpoint.parse(endpoint);
          answer = await fetchInstallation(token, GRAPHQL_ROUTE, body as Record<string, unknown>, headers, signal, maxBodyBytes, url);
          // @octokit/graphql reads `data.errors` and `data.data`: a body that is not an object is handed on as an empty one.
          return { ...answer, url, data: typeof answer.data === "object" && answer.data !== null ? answer.data : {} };
        },
      },
    }));
    return query(document.query, { ...document.variables }).then(
      () => answer!,
      (error: unknown) => {
        if (error instanceof GraphqlResponseError && answer !== undefined) return answer; // errors are read by graphql.ts
        throw error;
      },
    );
  }

  return {
    appId: options.appId,
    app: (route, params, call) =>
      send(APP_SCOPE, route, params, call, async (rest, headers, signal) => {
        const response = await appOctokit.request(route, { ...rest, headers, ...(signal ? { request: { signal } } : {}) });
        return { data: response.data, headers: response.headers as ForgeResponse["headers"], status: response.status };
      }),
    async installation(installationId, route, params, call) {
      const token = await tokenFor(installationId);
      try {
        return await send(`installation:${installationId}`, route, params, call, (rest, headers, signal) => fetchInstallation(token, route, rest, headers, signal, call?.maxBodyBytes));
      } catch (error) {
        if (error instanceof ForgeError && error.kind === "unauthorized") stale.add(installationId);
        throw error;
      }
    },
    async graphql(installationId, document, call) {
      const token = await tokenFor(installationId);
      try {
        return await send(graphqlScope(installationId), GRAPHQL_ROUTE, {}, call, async (_rest, headers, signal) => withGraphqlOutcome(await fetchGraphql(token, document, headers, signal, call?.maxBodyBytes)));
      } catch (error) {
        if (error instanceof ForgeError && error.kind === "unauthorized") stale.add(installationId);
        throw error;
      }
    },
  };
}
