import { Elysia } from "elysia";
import type { Config } from "../config/index.ts";
import type { Metrics } from "../observability/metrics.ts";
import { DEFENSIVE_HEADERS, jsonResponse } from "./defensive-headers.ts";
import { databaseCheck, type HealthSources, liveness, readiness } from "./health.ts";
import { LivenessDocument, ReadinessDocument, RootDocument, RuntimeIdentity } from "./schemas.ts";

export const PRODUCT_NAME = "Code-owner approval check service";

export type BuildInfo = { readonly version: string; readonly buildRevision: string | null };

/** `/`, `/api/runtime-identity`, `/health/live`, `/health/ready`, `/metrics` (spec "Endpoints"). */
export function opsRoutes(deps: { config: Config; build: BuildInfo; health: HealthSources; metrics: Metrics }) {
  const { config, build, health, metrics } = deps;
  const checkDatabase = databaseCheck(health.store);
  const identity = {
    schema_version: 1 as const,
    environment: config.environment,
    forge_api_url: config.forge.apiUrl,
    forge_app_id: config.forge.appId ?? 0,
    database_backend: config.database.backend,
    check_name: config.checkName,
    policy_path: config.policyPath,
    organization_policy_repository_name: config.organizationPolicyRepository,
    application_version: build.version,
    build_revision: build.buildRevision,
  };
  return new Elysia({ name: "ops" })
    // The spec asks for a documentation URL: absolute, at the origin this request reached (the operator's own address for
    // the service; SERVICE_PUBLIC_URL is the webhook's public origin and is not set unless setup is enabled).
    .get("/", ({ request }) => jsonResponse({ name: PRODUCT_NAME, version: build.version, documentation: new URL("/api/docs", request.url).href }), {
      response: { 200: RootDocument },
      detail: { summary: "Root document", tags: ["operator"] },
    })
    .get("/api/runtime-identity", () => jsonResponse(identity), {
      response: { 200: RuntimeIdentity },
      detail: { summary: "Runtime identity (a self-report, not provenance evidence)", tags: ["operator"] },
    })
    .get(
      "/health/live",
      () => {
        const body = liveness(health);
        return jsonResponse(body, body.status === "alive" ? 200 : 503);
      },
      { response: { 200: LivenessDocument, 503: LivenessDocument }, detail: { summary: "Liveness", tags: ["health"] } },
    )
    .get(
      "/health/ready",
      async () => {
        const body = await readiness(health, checkDatabase);
        return jsonResponse(body, body.status === "ready" ? 200 : 503);
      },
      { response: { 200: ReadinessDocument, 503: ReadinessDocument }, detail: { summary: "Readiness", tags: ["health"] } },
    )
    .get(
      "/metrics",
      async () =>
        new Response(await metrics.registry.metrics(), {
          headers: { "content-type": metrics.registry.contentType, ...DEFENSIVE_HEADERS },
        }),
      { detail: { summary: "Metrics in the text exposition format", tags: ["operator"] } },
    );
}
