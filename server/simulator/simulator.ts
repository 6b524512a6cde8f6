// The forge simulator: a real HTTP server on loopback that speaks the forge REST shapes the service uses (DESIGN 7).
//   startForgeSimulator({ port?, webhookUrl?, webhookSecret? }) → { url, stop(), control, faults, requests, tokenRequests }
// Auth: App JWT (RS256, verified with the App's public key) for /app routes; installation tokens (ghs_…) for everything else,
// each checked against the permissions requested when it was issued. Faults are injected per route (see faults.ts).
// POST /graphql executes queries against the forge's published schema (graphql.ts).
import { handleAppCreation, isAppCreationPath } from "./app-creation.ts";
import { handleOAuth, isOAuthPath } from "./oauth.ts";
import { ControlError, SimulatorControl } from "./control.ts";
import { CONTROL_OPERATIONS, type RequestRecord } from "./control-routes.ts";
import { FaultTable, type Fault } from "./faults.ts";
import { GRAPHQL_ROUTE } from "./graphql.ts";
import { verifyAppJwt } from "./jwt.ts";
import { ForgeState } from "./model.ts";
import { PrimaryRateLimits } from "./rate-limits.ts";
import { RequestCounter } from "./request-counter.ts";
import { HttpFail, ROUTES, type Auth, type Ctx, type Result, type Route, type TokenRequest } from "./rest.ts";

export interface ForgeSimulatorOptions {
  port?: number; webhookUrl?: string; webhookSecret?: string; webhookTimeoutMs?: number;
  /**
   * Also send the neutral X-Forge-Event and X-Forge-Delivery (the same values) beside GitHub's headers: builds that predate
   * reading GitHub's headers read only these, so benchmarks that run older builds beside the new one set it.
   */
  webhookNeutralHeaders?: boolean;
  /** The clock of the primary rate limits (rate-limits.ts); wall-clock time when absent. */
  rateLimitClock?: () => number;
  /** The forge's event times follow the real clock instead of a fixed start (control.ts `now`). */
  realClock?: boolean;
}

export interface ForgeSimulator {
  url: string;
  control: SimulatorControl;
  faults: FaultTable;
  /** Primary rate limits for the installations a test gives one (rate-limits.ts). */
  rateLimits: PrimaryRateLimits;
  requests: RequestRecord[];
  /** Every REST request answered, by route template and status (unbounded in time, bounded by the routes: see request-counter.ts). */
  counter: RequestCounter;
  tokenRequests: TokenRequest[];
  injectFault(fault: Fault): number;
  stop(): Promise<void>;
}

const LEVEL: Record<string, number> = { read: 1, write: 2, admin: 3 };
/** Requests and webhook deliveries kept for inspection (benchmarks run long). */
export const MAX_LOGGED = 10_000;

interface Compiled { route: Route; re: RegExp; names: string[] }

const COMPILED: Compiled[] = ROUTES.map((route) => {
  const names: string[] = [];
  const source = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => { names.push(name); return name === "path" ? "(.+)" : "([^/]+)"; });
  return { route, re: new RegExp(`^${source}$`), names };
});

export function matchRoute(method: string, pathname: string): { route: Route; params: Record<string, string> } | undefined {
  // GraphQL is not part of the REST description the REST routes are checked against (openapi.test.ts).
  if (method === GRAPHQL_ROUTE.method && pathname === GRAPHQL_ROUTE.path) return { route: GRAPHQL_ROUTE, params: {} };
  for (const c of COMPILED) {
    if (c.route.method !== method) continue;
    const m = c.re.exec(pathname);
    if (!m) continue;
    const params: Record<string, string> = {};
    c.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]!); });
    return { route: c.route, params };
  }
  return undefined;
}

export function startForgeSimulator(options: ForgeSimulatorOptions = {}): ForgeSimulator {
  const state = new ForgeState();
  const faults = new FaultTable();
  const rateLimits = new PrimaryRateLimits(options.rateLimitClock);
  const requests: RequestRecord[] = [];
  const counter = new RequestCounter();
  const tokenRequests: TokenRequest[] = [];
  let base = "";
  const control = new SimulatorControl(state, { baseUrl: () => base, webhookUrl: options.webhookUrl, webhookSecret: options.webhookSecret, webhookTimeoutMs: options.webhookTimeoutMs, webhookNeutralHeaders: options.webhookNeutralHeaders, realClock: options.realClock });
  const pending = new Set<Promise<unknown>>();

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 0,
    reusePort: false, // one process per address, whatever Bun's default for the mode it runs in
    idleTimeout: 30,
    fetch: (req) => {
      const p = handle(req);
      pending.add(p);
      return p.finally(() => pending.delete(p));
    },
  });
  base = `http://127.0.0.1:${server.port}`;

  async function handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (url.pathname.startsWith("/_control/")) return handleControl(req, url.pathname.slice("/_control/".length));
    if (isAppCreationPath(url.pathname)) return handleAppCreation(control, req, url);
    if (isOAuthPath(url.pathname)) {
      const record: RequestRecord = { method: req.method, path: url.pathname, query: url.search, status: 0, auth: "none", apiVersion: req.headers.get("x-github-api-version") };
      requests.push(record);
      const response = await handleOAuth(control, req, url, base);
      record.status = response.status;
      return response;
    }
    const record: RequestRecord = { method: req.method, path: url.pathname, query: url.search, status: 0, auth: "none", apiVersion: req.headers.get("x-github-api-version") };
    requests.push(record);
    if (requests.length > MAX_LOGGED) requests.splice(0, requests.length - MAX_LOGGED);
    const match = matchRoute(req.method, url.pathname);
    try {
      return await answer(req, url, record, match);
    } finally {
      counter.add(record.method, match?.route.path ?? null, record.status);
    }
  }

  async function answer(req: Request, url: URL, record: RequestRecord, match: ReturnType<typeof matchRoute>): Promise<Response> {
    const page = Number(url.searchParams.get("page") ?? 1) || 1;
    const fault = faults.take(req.method, decodeURIComponent(url.pathname), page, ["slow", "status", "rate_limit", "reset", "truncate", "push"]);
    if (fault?.kind === "slow") await Bun.sleep(fault.delayMs ?? 1000);
    if (fault?.kind === "push" && match?.params.pull_number !== undefined) {
      await control.pushToPullRequest({ owner: match.params.owner!, repo: match.params.repo!, number: Number(match.params.pull_number), files: fault.files ?? {} });
    }
    if (fault?.kind === "reset") {
      record.status = -1;
      return new Response(new ReadableStream({ async pull(c) { await Bun.sleep(1); c.error(undefined); } }), { headers: { "content-type": "application/json" } });
    }
    if (fault?.kind === "status") return respond(record, { status: fault.status ?? 502, body: { message: "Server Error" } });
    if (fault?.kind === "rate_limit") {
      const reset = Math.floor(Date.now() / 1000) + (fault.resetInSeconds ?? 60);
      const headers: Record<string, string> = { "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(reset), "x-ratelimit-used": "5000", "x-ratelimit-resource": "core" };
      if (fault.retryAfterSeconds !== undefined) headers["retry-after"] = String(fault.retryAfterSeconds);
      return respond(record, { status: fault.status ?? 403, body: { message: "API rate limit exceeded", documentation_url: "https://docs.github.com/rest/rate-limit" }, headers });
    }
    let result: Result;
    const charged: { installationId?: number } = {};
    try {
      result = await route(req, url, record, match, charged);
    } catch (error) {
      if (error instanceof HttpFail) result = { status: error.status, body: { message: error.message, status: String(error.status) } };
      else throw error;
    }
    const response = respond(record, result, req.headers.get("if-none-match"));
    if (charged.installationId !== undefined) rateLimits.charge(charged.installationId, response);
    if (fault?.kind === "truncate") {
      const text = await response.text();
      return new Response(text.slice(0, Math.floor(text.length / 2)), { status: response.status, headers: response.headers });
    }
    return response;
  }

  async function route(req: Request, url: URL, record: RequestRecord, match: ReturnType<typeof matchRoute>, charged: { installationId?: number }): Promise<Result> {
    if (!match) throw new HttpFail(404, "Not Found");
    const auth = authenticate(req, match.route);
    record.auth = auth.kind;
    if (auth.kind === "token") {
      charged.installationId = auth.installation.id;
      const refusal = rateLimits.refusal(auth.installation.id);
      if (refusal) return refusal;
    }
    if (match.route.permission && auth.kind === "token") {
      const [name, level] = match.route.permission;
      if ((LEVEL[auth.token.permissions[name] ?? ""] ?? 0) < LEVEL[level]!) throw new HttpFail(403, "Resource not accessible by integration");
    }
    let body: unknown;
    if (req.method !== "GET") {
      const text = await req.text();
      try { body = text ? JSON.parse(text) : undefined; } catch { throw new HttpFail(400, "Problems parsing JSON"); }
    }
    const ctx: Ctx = { req, url, params: match.params, auth, control, faults, base, body, tokenRequests };
    return match.route.handle(ctx);
  }

  function authenticate(req: Request, route: Route): Auth {
    const header = req.headers.get("authorization") ?? "";
    const [scheme = "", credential = ""] = header.split(" ");
    if (route.auth === "jwt") {
      if (scheme.toLowerCase() !== "bearer") throw new HttpFail(401, "A JSON web token could not be decoded");
      const result = verifyAppJwt(state, credential, Math.floor(Date.now() / 1000));
      if (!result.ok) throw new HttpFail(401, result.message);
      return { kind: "jwt", app: result.app };
    }
    if (!header && route.auth === "optional") return { kind: "none" };
    const token = state.tokens.get(credential);
    if (!token || !["token", "bearer"].includes(scheme.toLowerCase()) || token.expiresAt <= Date.now()) throw new HttpFail(401, "Bad credentials");
    const installation = state.installations.get(token.installationId);
    if (!installation) throw new HttpFail(401, "Bad credentials");
    if (installation.suspendedAt) throw new HttpFail(403, "This installation has been suspended");
    return { kind: "token", token, installation };
  }

  function respond(record: RequestRecord, result: Result, ifNoneMatch: string | null = null): Response {
    record.status = result.status;
    const headers: Record<string, string> = {
      "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3600),
      "x-ratelimit-used": "1", "x-ratelimit-resource": "core", "x-github-request-id": crypto.randomUUID(), ...result.headers,
    };
    if (result.body === undefined && result.text === undefined) return new Response(null, { status: result.status, headers });
    headers["content-type"] ??= "application/json; charset=utf-8";
    const text = result.text ?? JSON.stringify(result.body);
    if (record.method === "GET" && result.status === 200) {
      // Conditional requests as on the forge: a matching If-None-Match gets 304 without a body (and spends no rate limit).
      // A fast non-cryptographic digest: an ETag only has to change when the body does (sha1 was a tenth of the
      // simulator's CPU under the ingest benchmark, which runs it on the same cores as the service).
      headers.etag = result.headers?.etag ?? `W/"${Bun.hash(text).toString(16)}"`;
      if (ifNoneMatch === headers.etag) {
        record.status = 304;
        delete headers["content-type"];
        return new Response(null, { status: 304, headers });
      }
    }
    return new Response(text, { status: result.status, headers });
  }

  async function handleControl(req: Request, operation: string): Promise<Response> {
    const op = CONTROL_OPERATIONS[operation];
    if (!op) return Response.json({ message: "unknown control operation" }, { status: 404 });
    try {
      const text = req.method === "GET" ? "" : await req.text();
      const result = await op({ control, faults, requests, counter, tokenRequests }, text ? JSON.parse(text) : {});
      return Response.json(result ?? { ok: true }, { status: 200 });
    } catch (error) {
      const status = error instanceof ControlError ? error.status : 400;
      return Response.json({ message: error instanceof Error ? error.message : "error" }, { status });
    }
  }

  return {
    url: base, control, faults, rateLimits, requests, counter, tokenRequests,
    injectFault: (fault) => faults.add(fault),
    async stop() {
      await server.stop(true);
      await Promise.allSettled([...pending]);
    },
  };
}
