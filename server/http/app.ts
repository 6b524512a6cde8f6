import { Elysia } from "elysia";
import type { Config } from "../config/index.ts";
import type { WebhookDeps } from "../ingress/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { decisionsRoutes } from "./decisions-routes.ts";
import { docsRoutes } from "./docs-routes.ts";
import type { HealthSources } from "./health.ts";
import { type BuildInfo, opsRoutes } from "./ops-routes.ts";
import { playgroundRoutes } from "./playground-routes.ts";
import { setupRoutes } from "./setup-routes.ts";
import { webhookRoutes } from "./webhook-route.ts";

export type AppDeps = {
  config: Config; build: BuildInfo; health: HealthSources; metrics: Metrics; webhook: WebhookDeps;
  /** Optional: setup routes log a fixed outcome word per callback (never the query or credentials). */
  log?: Logger;
};

/** The HTTP application: one Elysia instance per route group, composed here. */
export function createApp(deps: AppDeps) {
  return new Elysia({ nativeStaticResponse: false })
    .use(docsRoutes(deps.build.version))
    .use(opsRoutes(deps))
    .use(webhookRoutes(deps.webhook))
    .use(decisionsRoutes({ store: deps.health.store, forgeWebUrl: deps.config.forge.webUrl, playgroundEnabled: deps.config.playgroundEnabled }))
    .use(playgroundRoutes({ enabled: deps.config.playgroundEnabled }))
    .use(setupRoutes({ config: deps.config, ...(deps.log ? { log: deps.log } : {}) }))
    .onError(({ code }) => {
      // One place that turns errors into responses; details stay in logs, never in bodies.
      if (code === "NOT_FOUND") return new Response(JSON.stringify({ error: "not_found" }), { status: 404, headers: { "content-type": "application/json; charset=utf-8" } });
      return new Response(JSON.stringify({ error: "internal" }), { status: 500, headers: { "content-type": "application/json; charset=utf-8" } });
    });
}
