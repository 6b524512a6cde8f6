import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { loadConfig } from "../../server/config/index.ts";
import { createApp } from "../../server/http/app.ts";
import { createBodyBudget } from "../../server/ingress/index.ts";
import { createLogger } from "../../server/observability/logger.ts";
import { createMetrics } from "../../server/observability/metrics.ts";
import type { Store } from "../../server/store/index.ts";
import { openMigratedStore, type TestDatabase } from "../support/databases.ts";
import { read, ROOT } from "./markdown.ts";

/**
 * docs/security.md says what every route the service serves exposes: a route added to the application without a line there
 * fails this test. The routes are the application's own (every route group mounted, as `serve` mounts them).
 */
let database: TestDatabase;
let store: Store;
beforeAll(async () => {
  ({ database, store } = await openMigratedStore("sqlite"));
});
afterAll(async () => {
  await store.close();
  await database.drop();
});

function servedRoutes(): string[] {
  const config = loadConfig({ SERVICE_DATABASE_URL: database.url });
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  const health = { config, store, credentials: { isFresh: () => true }, worker: null, reconciler: null };
  const webhook = {
    secret: null, store, metrics, log: createLogger("silent"), mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null,
    invalidationTimeoutMs: 1000, bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes), now: () => Date.now(),
  };
  const app = createApp({ config, build: { version: "0.1.0", buildRevision: null }, health, metrics, webhook });
  // Path parameters as the page writes them ({id}); a wildcard route is its folder (/decisions/*: /decisions/).
  return app.routes.map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/")}`);
}

/** Every `METHOD /path` the section names; `/setup*` stands for every path it begins. */
function documentedRoutes(): string[] {
  const text = read(join(ROOT, "docs", "security.md"));
  const section = text.slice(text.indexOf("## What each route exposes"), text.indexOf("## Residual risks"));
  return [...section.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)`/g)].map((m) => `${m[1]} ${m[2]}`);
}

/** A route is documented by its own line, its folder's, or a parent path's (assets under `/api/docs`), never by `/` alone. */
function covered(route: string, documented: readonly string[]): boolean {
  return documented.some((entry) =>
    entry === route || entry === `${route}/` || (entry.endsWith("*") && route.startsWith(entry.slice(0, -1))) || (!entry.endsWith(" /") && route.startsWith(`${entry.replace(/\/$/, "")}/`)),
  );
}

describe("docs/security.md and the routes the service serves", () => {
  test("every route the application serves is in the route tables", () => {
    const routes = servedRoutes();
    expect(routes).toContain("GET /api/decisions/{id}");
    const documented = documentedRoutes();
    expect(routes.filter((route) => !covered(route, documented))).toEqual([]);
  });

  test("a route named nowhere is found", () => {
    expect(covered("GET /api/secrets", ["GET /", "GET /api/docs", "GET /api/decisions"])).toBe(false);
    expect(covered("GET /api/docs/assets/{file}", ["GET /api/docs"])).toBe(true);
  });
});
