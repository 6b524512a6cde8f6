import { Elysia } from "elysia";
import { handleWebhook, type WebhookDeps } from "../ingress/index.ts";
import { jsonResponse } from "./defensive-headers.ts";

/** POST /webhooks/forge. The body is left unparsed (parse: "none"): ingress reads and verifies the raw bytes itself. */
export function webhookRoutes(deps: WebhookDeps) {
  return new Elysia({ name: "webhook" }).post(
    "/webhooks/forge",
    async ({ request }) => {
      const reply = await handleWebhook(deps, request);
      return jsonResponse(reply.body, reply.status, reply.headers);
    },
    { parse: "none", detail: { hide: true } },
  );
}
