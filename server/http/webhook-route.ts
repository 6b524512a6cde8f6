import { Elysia } from "elysia";
import { handleWebhook, type WebhookDeps } from "../ingress/index.ts";
import { jsonResponse } from "./defensive-headers.ts";

/**
 * POST /webhooks/forge. The body is left unparsed (parse: "none"): ingress reads and verifies the raw bytes itself.
 * A refusal closes the connection: it may come before the body was read whole (budget spent, too large, too slow), and Bun
 * would otherwise keep the connection open, discarding the rest of the body, for as long as its sender goes on sending (even
 * a trickle of a few bytes lasts until the idle timeout: HTTP_IDLE_TIMEOUT_SECONDS).
 */
export function webhookRoutes(deps: WebhookDeps) {
  return new Elysia({ name: "webhook" }).post(
    "/webhooks/forge",
    async ({ request }) => {
      const reply = await handleWebhook(deps, request);
      return jsonResponse(reply.body, reply.status, reply.status >= 400 ? { ...reply.headers, connection: "close" } : reply.headers);
    },
    { parse: "none", detail: { hide: true } },
  );
}
