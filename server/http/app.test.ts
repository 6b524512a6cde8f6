import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadConfig } from "../config/index.ts";
import { createBodyBudget } from "../ingress/index.ts";
import { createLogger } from "../observability/logger.ts";
import { createMetrics } from "../observability/metrics.ts";
import { type Store } from "../store/index.ts";
import { type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { createApp } from "./app.ts";
import { type HealthSources, READINESS_DATABASE_BOUND_MS, type TaskProbe } from "./health.ts";

let database: TestDatabase;
let store: Store;
beforeAll(async () => {
  ({ database, store } = await openMigratedStore("sqlite"));
});
afterAll(async () => {
  await store.close();
  await database.drop();
});

function app(overrides: Partial<HealthSources> = {}, env: Record<string, string> = {}) {
  const config = loadConfig({ SERVICE_DATABASE_URL: database.url, ...env });
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  metrics.insecureChangesEnabled.set(config.allowInsecureChanges ? 1 : 0);
  const health: HealthSources = { config, store, credentials: { isFresh: () => true }, worker: null, reconciler: null, ...overrides };
  const log = createLogger("silent");
  const webhook = { secret: null, store, metrics, log, mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null, invalidationTimeoutMs: 1000, bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes), now: () => Date.now() };
  return createApp({ config, build: { version: "0.1.0", buildRevision: null }, health, metrics, webhook });
}
const get = (a: ReturnType<typeof app>, path: string) => a.handle(new Request(`http://localhost${path}`));
/** The test store's methods, bound, for a stand-in that overrides some of them. */
const withStore = (): Store => ({
  backend: store.backend, ping: () => store.ping(), schemaIdentity: () => store.schemaIdentity(), execute: (op, options) => store.execute(op, options),
  acquireSharedGuard: (...args) => store.acquireSharedGuard(...args), acquirePublicationGuards: (...args) => store.acquirePublicationGuards(...args),
  queueGauges: () => store.queueGauges(), close: async () => {},
});
const probe = (alive: boolean, ready = alive): TaskProbe => ({ alive: () => alive, ready: () => ready });

const OPERATOR_ROUTES = ["/", "/api/runtime-identity", "/health/live", "/health/ready", "/metrics"];

describe("operator routes", () => {
  test("the root document names the product, version and documentation as an absolute URL", async () => {
    const response = await get(app(), "/");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ name: "Code-owner approval check service", version: "0.1.0", documentation: "http://localhost/api/docs" });
  });

  test("the root document's documentation URL is at the origin the request reached", async () => {
    const response = await app().handle(new Request("http://service.internal:8080/"));
    const body = await response.json();
    expect(new URL(body.documentation).href).toBe("http://service.internal:8080/api/docs");
  });

  test("runtime identity reports the effective settings and no secret", async () => {
    const response = await get(app(), "/api/runtime-identity");
    const body = await response.json();
    expect(body).toEqual({
      schema_version: 1,
      environment: "development",
      forge_api_url: "https://api.github.com",
      forge_app_id: 0,
      database_backend: "sqlite",
      check_name: "Service / approval",
      policy_path: ".forge/service-policy.toml",
      organization_policy_repository_name: ".forge",
      application_version: "0.1.0",
      build_revision: null,
    });
  });

  for (const path of OPERATOR_ROUTES) {
    test(`${path} answers with no-store and the defensive headers`, async () => {
      const response = await get(app(), path);
      expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
      expect(response.headers.get("pragma")).toBe("no-cache");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
    });
  }
});

describe("health", () => {
  test("liveness is alive when the tasks are not expected", async () => {
    const response = await get(app(), "/health/live");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "alive", worker_enabled: true, reconciler_enabled: true, worker: true, reconciler: true });
  });

  test("an expected task that stopped makes liveness 503 with that field false", async () => {
    const response = await get(app({ worker: probe(false) }), "/health/live");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: "not_alive", worker: false, reconciler: true });
  });

  test("a disabled task reports false in its enabled field and true in its health field", async () => {
    const response = await get(app({ reconciler: probe(false) }, { SERVICE_RECONCILE_ENABLED: "false" }), "/health/live");
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ reconciler_enabled: false, reconciler: true });
  });

  test("a task is not expected when the process has no forge client", async () => {
    const response = await get(app({ credentials: null, worker: probe(false) }), "/health/live");
    expect(await response.json()).toMatchObject({ status: "alive", worker: true });
  });

  test("readiness is ready with fresh credentials, a compatible database and healthy tasks", async () => {
    const response = await get(app({ worker: probe(true), reconciler: probe(true) }), "/health/ready");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ready", forge_credentials: true, database: true, worker_enabled: true, reconciler_enabled: true, worker: true, reconciler: true });
  });

  test("readiness is 503 without a forge client", async () => {
    const response = await get(app({ credentials: null }), "/health/ready");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ status: "not_ready", forge_credentials: false, database: true });
  });

  test("readiness is 503 when credentials are stale", async () => {
    const response = await get(app({ credentials: { isFresh: () => false } }), "/health/ready");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ forge_credentials: false });
  });

  test("readiness is 503 when an enabled task is not ready", async () => {
    const response = await get(app({ reconciler: probe(true, false) }), "/health/ready");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ reconciler: false });
  });

  test("readiness reports the database false when one of the store's pools fails, though the schema can be read", async () => {
    const onePoolDown: Store = { ...withStore(), ping: async () => { throw new Error("statement pool down"); } };
    const response = await get(app({ store: onePoolDown, worker: probe(true), reconciler: probe(true) }), "/health/ready");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ database: false });
  });

  test("readiness answers within its bound with the database false when the database does not answer", async () => {
    const silent: Store = { ...withStore(), ping: () => new Promise(() => {}), schemaIdentity: () => new Promise(() => {}) };
    const started = performance.now();
    const response = await get(app({ store: silent, worker: probe(true), reconciler: probe(true) }), "/health/ready");
    expect(performance.now() - started).toBeLessThan(READINESS_DATABASE_BOUND_MS + 500);
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ database: false });
  });

  test("a burst of readiness probes checks the database once", async () => {
    let checks = 0;
    const counted: Store = { ...withStore(), ping: async () => void checks++ };
    const a = app({ store: counted, worker: probe(true), reconciler: probe(true) });
    const responses = await Promise.all(Array.from({ length: 20 }, () => get(a, "/health/ready")));
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(checks).toBe(1);
  });

  test("readiness reports the database false when it cannot be queried", async () => {
    const broken: Store = { ...store, backend: "sqlite", ping: async () => { throw new Error("down"); }, schemaIdentity: async () => { throw new Error("down"); }, queueGauges: store.queueGauges.bind(store), close: async () => {} };
    const response = await get(app({ store: broken }), "/health/ready");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ database: false });
  });
});

describe("metrics", () => {
  test("every metric of the spec is published, with the insecure switch reflected", async () => {
    const text = await (await get(app({}, { SERVICE_ALLOW_INSECURE_CHANGES: "true" }), "/metrics")).text();
    for (const name of [
      "service_webhooks_total", "service_webhook_failures_total", "service_evaluations_total", "service_evaluation_seconds",
      "service_queue_depth", "service_shared_head_invalidation_depth", "service_shared_head_invalidations_total", "service_dead_jobs",
      "service_insecure_changes_enabled", "service_reconciliations_total", "service_reconciliation_last_success_timestamp_seconds",
      "service_forge_requests_total", "service_forge_rate_limit_remaining",
      "service_database_errors_total", "service_database_retries_total",
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toMatch(/^service_insecure_changes_enabled 1$/m);
    expect(text).toMatch(/^service_queue_depth 0$/m);
    expect(text).toContain('service_shared_head_invalidations_total{outcome="rate_limited"} 0');
    expect(text).toContain("process_cpu_user_seconds_total");
  });

  test("service_break_glass_total exists from the first scrape at 0, without labels", async () => {
    const text = await (await get(app(), "/metrics")).text();
    expect(text).toContain("# TYPE service_break_glass_total counter");
    expect(text).toMatch(/^service_break_glass_total 0$/m);
    expect(text).not.toMatch(/^service_break_glass_total\{/m);
  });

  test("every fixed series exists from the first scrape, each webhook failure reason at 0", async () => {
    const text = await (await get(app(), "/metrics")).text();
    for (const reason of ["headers", "signature", "content_length", "too_large", "busy", "json", "payload", "not_configured", "database", "authority_timeout"]) {
      expect(text).toContain(`service_webhook_failures_total{reason="${reason}"} 0`);
    }
    for (const result of ["success", "partial", "failure"]) expect(text).toContain(`service_reconciliations_total{result="${result}"} 0`);
    expect(text).toMatch(/^service_reconciliation_last_success_timestamp_seconds 0$/m);
    expect(text).toMatch(/^service_dead_jobs 0$/m);
    expect(text).toMatch(/^service_evaluation_seconds_count 0$/m);
  });

  test("the insecure gauge is 0 by default", async () => {
    const text = await (await get(app(), "/metrics")).text();
    expect(text).toMatch(/^service_insecure_changes_enabled 0$/m);
  });
});

describe("documentation", () => {
  test("the OpenAPI document covers runtime identity, both health routes and the webhook route", async () => {
    const doc = await (await get(app(), "/api/openapi.json")).json();
    expect(doc.info.version).toBe("0.1");
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/api/runtime-identity", "/health/live", "/health/ready", "/webhooks/forge"]));
    const identity = doc.paths["/api/runtime-identity"].get.responses["200"].content["application/json"].schema;
    expect(Object.keys(identity.properties)).toEqual(expect.arrayContaining(["schema_version", "forge_app_id", "build_revision"]));
    const webhook = doc.paths["/webhooks/forge"].post;
    expect(webhook.parameters.map((p: { name: string }) => p.name)).toEqual(["X-Hub-Signature-256", "X-Forge-Event", "X-Forge-Delivery", "X-GitHub-Event", "X-GitHub-Delivery"]);
    expect(Object.keys(webhook.responses).sort()).toEqual(["202", "400", "401", "413", "503"]);
    expect(Object.keys(doc.paths).some((p) => p.startsWith("/api/docs"))).toBe(false);
  });

  test("the docs page loads only same-origin assets and no inline script", async () => {
    const response = await get(app(), "/api/docs");
    const html = await response.text();
    expect(response.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script>(?!<)/);
    for (const asset of ["/api/docs/assets/swagger-ui-bundle.js", "/api/docs/assets/swagger-ui.css", "/api/docs/assets/init.js", "/api/docs/assets/favicon-32x32.png"]) {
      const r = await get(app(), asset);
      expect(r.status).toBe(200);
    }
    expect((await get(app(), "/api/docs/assets/nothing.js")).status).toBe(404);
  });

  test("the OAuth2 redirect helper loads its script from an absolute same-origin path", async () => {
    const html = await (await get(app(), "/docs/oauth2-redirect")).text();
    expect(html).toContain('<script src="/api/docs/assets/oauth2-redirect.js"></script>');
  });
});
