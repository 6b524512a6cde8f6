import { Elysia } from "elysia";
import type { Config } from "../config/index.ts";
import type { WebhookDeps } from "../ingress/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { createUserClient, type UserClient } from "../forge/user-client.ts";
import { decisionsAccess, ReadableRepositories } from "./decisions-access.ts";
import { decisionsRoutes } from "./decisions-routes.ts";
import { jsonResponse } from "./defensive-headers.ts";
import { docsRoutes } from "./docs-routes.ts";
import type { HealthSources } from "./health.ts";
import { type BuildInfo, opsRoutes } from "./ops-routes.ts";
import { playgroundRoutes } from "./playground-routes.ts";
import { setupRoutes } from "./setup-routes.ts";
import { signInRoutes } from "./sign-in-routes.ts";
import { webhookRoutes } from "./webhook-route.ts";

export type AppDeps = {
  config: Config; build: BuildInfo; health: HealthSources; metrics: Metrics; webhook: WebhookDeps;
  /** Optional: setup routes log a fixed outcome word per callback (never the query or credentials); reads of records are logged. */
  log?: Logger;
  /** The forge as a signed-in person sees it; defaults to one made from the configured App client ID and secret. */
  users?: UserClient | null;
  now?: () => number;
};

/**
 * The HTTP application: one Elysia instance per route group, composed here.
 *
 * Routing must not depend on the Host. Elysia (1.4.30) finds a request's path by position in request.url, as the first "/"
 * at or after index 11 unless `handler.standardHostname` is false (then index 7): its default assumes "http://" plus a host
 * of at least four characters. Behind a proxy that forwards a short name (`Host: svc`, `gh`, `svc:80`, which the listener
 * writes as http://svc/...) that search skipped the path's own "/": every route, the webhook route included, answered 404,
 * and `Host: a` with `GET /ab/metrics` reached /metrics. With the search starting right after "http://", the first "/" is
 * where the path starts, since an authority never contains one; listenerFetch (below) guarantees an absolute http:// URL.
 * `aot` is pinned on because Elysia's other handler (chosen when the environment sets ELYSIA_AOT=false) always skips 11.
 */
export function createApp(deps: AppDeps) {
  const { signIn } = deps.config;
  const access = decisionsAccess({ tokens: deps.config.decisionsTokens, clientSecret: signIn?.clientSecret ?? null });
  const users = deps.users !== undefined ? deps.users : signIn === null ? null : createUserClient({ apiUrl: deps.config.forge.apiUrl, ...signIn });
  const readable = users === null ? null : new ReadableRepositories((token) => users.readableRepositoryIds(token));
  const logged = { ...(deps.log ? { log: deps.log } : {}), ...(deps.now ? { now: deps.now } : {}) };
  return new Elysia({ nativeStaticResponse: false, aot: true, handler: { standardHostname: false } })
    .use(docsRoutes(deps.build.version))
    .use(opsRoutes(deps))
    .use(webhookRoutes(deps.webhook))
    .use(decisionsRoutes({ store: deps.health.store, forgeWebUrl: deps.config.forge.webUrl, playgroundEnabled: deps.config.playgroundEnabled, access, readable, attestationKeys: deps.config.attestation?.verifiers ?? null, ...logged }))
    .use(signInRoutes({ access, users, ...logged }))
    .use(playgroundRoutes({ enabled: deps.config.playgroundEnabled }))
    .use(setupRoutes({ config: deps.config, ...(deps.log ? { log: deps.log } : {}) }))
    .onError(({ code }) => {
      // One place that turns errors into responses; details stay in logs, never in bodies.
      if (code === "NOT_FOUND") return new Response(JSON.stringify({ error: "not_found" }), { status: 404, headers: { "content-type": "application/json; charset=utf-8" } });
      return new Response(JSON.stringify({ error: "internal" }), { status: 500, headers: { "content-type": "application/json; charset=utf-8" } });
    });
}

/**
 * The listener's entry to the application (serve's fetch handler). Bun's listener serves plain HTTP and builds request.url
 * as "http://" + the Host it accepted + the path; the application's routing (see createApp) relies on exactly that shape.
 * When the Host cannot be made into an address (empty, with userinfo, a "/" or "?"), Bun hands over the bare path instead;
 * such a request is refused with 400 on every route rather than routed or parsed by guesswork.
 */
export function listenerFetch(app: { handle(request: Request): Response | Promise<Response> }): (request: Request) => Response | Promise<Response> {
  return (request) => (request.url.startsWith("http://") ? app.handle(request) : jsonResponse({ error: "bad_host" }, 400));
}
