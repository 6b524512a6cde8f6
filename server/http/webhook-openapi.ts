/**
 * OpenAPI description of POST /webhooks/forge (spec "POST /webhooks/forge" and the webhook rows of "Errors"). Written out here
 * because the body is read as raw bytes (the signature covers the exact bytes), so no route body model exists to generate it.
 */
const ack = {
  type: "object",
  required: ["accepted", "queued"],
  properties: {
    accepted: { type: "boolean", description: "true if this request recorded the mapped delivery; false for an already retained delivery; true for unmapped deliveries (acknowledged, not retained)" },
    queued: { type: "boolean", description: "true when this request accepted new mapped work, or its duplicate fast-path attempt reset a check, or that attempt queued a newly observed live head; not a live queue-depth check" },
  },
};
const error = (description: string) => ({
  description,
  content: { "application/json": { schema: { type: "object", required: ["error"], properties: { error: { type: "string" } } } } },
});

export const webhookPathDocument = {
  "/webhooks/forge": {
    post: {
      tags: ["webhook"],
      summary: "Forge webhook delivery",
      description:
        "Authenticated by HMAC-SHA256 over the exact raw body. The signature is verified before JSON is parsed. A 202 for a mapped trigger means durable work was stored, not that the pull request passed. Responses come within 10 seconds.",
      parameters: [
        { name: "X-Hub-Signature-256", in: "header", required: true, description: "sha256=<64 lowercase hex>: HMAC-SHA256 of the raw body keyed by the webhook secret", schema: { type: "string", pattern: "^sha256=[0-9a-f]{64}$" } },
        { name: "X-Forge-Event", in: "header", required: false, description: "event name; selects the scheduling handler. Required unless X-GitHub-Event is sent; when both are sent they must be equal", schema: { type: "string", minLength: 1, maxLength: 128 } },
        { name: "X-Forge-Delivery", in: "header", required: false, description: "delivery ID used for replay-safe deduplication of retained mapped events. Required unless X-GitHub-Delivery is sent; when both are sent they must be equal", schema: { type: "string", minLength: 1, maxLength: 128 } },
        { name: "X-GitHub-Event", in: "header", required: false, description: "GitHub's name for the event header: read when X-Forge-Event is absent", schema: { type: "string", minLength: 1, maxLength: 128 } },
        { name: "X-GitHub-Delivery", in: "header", required: false, description: "GitHub's name for the delivery header: read when X-Forge-Delivery is absent", schema: { type: "string", minLength: 1, maxLength: 128 } },
      ],
      requestBody: {
        required: true,
        description: "JSON object (root must be an object); `action`, when present, must be a string. At most 10 MiB.",
        content: { "application/json": { schema: { type: "object", properties: { action: { type: "string" } }, additionalProperties: true } } },
      },
      responses: {
        "202": { description: "acknowledged", content: { "application/json": { schema: ack } } },
        "400": error("delivery or event header missing, empty or over 128 characters, or sent under both names with different values; invalid Content-Length; malformed JSON; non-object JSON; invalid payload for a mapped event (including a malformed head identifier)"),
        "401": error("signature header missing or malformed, or signature mismatch (rejected before JSON parsing)"),
        "413": error("body larger than 10 MiB (with or without Content-Length; enforced while streaming)"),
        "503": error("no webhook secret configured; retained direct trigger with no evaluator configured; database failure while accepting mapped work; timeout or database failure while ordering an authority event against an in-flight check write; the process-wide budget of unverified body bytes is spent (with Retry-After; the body is not read)"),
      },
    },
  },
};
