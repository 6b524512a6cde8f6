import { t } from "elysia";

/** Route models (TypeBox through Elysia's `t`): they document the routes in the OpenAPI document. */
export const RootDocument = t.Object({
  name: t.String({ description: "product name" }),
  version: t.String({ description: "installed package version" }),
  documentation: t.String({ description: "absolute URL of the HTTP interface documentation (/api/docs at the origin the request reached)" }),
});

export const RuntimeIdentity = t.Object({
  schema_version: t.Literal(1),
  environment: t.String({ description: "effective environment (for example production)" }),
  forge_api_url: t.String({ format: "uri", description: "effective forge API origin" }),
  forge_app_id: t.Integer({ description: "configured App ID (0 when none is configured outside production)" }),
  database_backend: t.Union([t.Literal("postgresql"), t.Literal("sqlite")]),
  check_name: t.String(),
  policy_path: t.String(),
  organization_policy_repository_name: t.String(),
  application_version: t.String(),
  build_revision: t.Union([t.String({ pattern: "^[0-9a-f]{40}([0-9a-f]{24})?$" }), t.Null()], {
    description: "full verified source commit baked into an official image; null for a source installation",
  }),
});

const taskFields = {
  worker_enabled: t.Boolean({ description: "reflects SERVICE_WORKER_ENABLED" }),
  reconciler_enabled: t.Boolean({ description: "reflects SERVICE_RECONCILE_ENABLED" }),
  worker: t.Boolean({ description: "worker task health (true when disabled or not expected)" }),
  reconciler: t.Boolean({ description: "reconciler task health (true when disabled or not expected)" }),
};

export const LivenessDocument = t.Object({ status: t.Union([t.Literal("alive"), t.Literal("not_alive")]), ...taskFields });

export const ReadinessDocument = t.Object({
  status: t.Union([t.Literal("ready"), t.Literal("not_ready")]),
  forge_credentials: t.Boolean({ description: "last App-identity probe succeeded and is still fresh" }),
  database: t.Boolean({ description: "a compatible database can be queried" }),
  ...taskFields,
});

export const WebhookAcknowledgment = t.Object({
  accepted: t.Boolean({ description: "true if this request recorded the mapped delivery; false for an already retained delivery; true for unmapped deliveries" }),
  queued: t.Boolean({ description: "true when this request accepted new mapped work, or its duplicate fast-path attempt reset a check or queued a newly observed live head" }),
});

export const ErrorDocument = t.Object({ error: t.String({ description: "a fixed reason code; clients must use the status code" }) });
