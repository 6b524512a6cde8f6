// Signed webhook delivery: X-Hub-Signature-256 (HMAC-SHA256 of the exact raw body), X-Forge-Event, X-Forge-Delivery.
import { createHmac, randomUUID } from "node:crypto";

export interface WebhookDelivery {
  id: string; event: string; action: string | null; installationId: number; url: string | null;
  status: number | null; error: string | null; body: string;
}

export interface WebhookTarget { url: string | null; secret: string | null }

export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export async function deliverWebhook(
  target: WebhookTarget, event: string, payload: Record<string, unknown>, installationId: number, timeoutMs: number,
): Promise<WebhookDelivery> {
  const body = JSON.stringify(payload);
  const delivery: WebhookDelivery = {
    id: randomUUID(), event, action: typeof payload.action === "string" ? payload.action : null, installationId,
    url: target.url, status: null, error: null, body,
  };
  if (!target.url) return delivery;
  const headers: Record<string, string> = {
    "content-type": "application/json", "user-agent": "ForgeSimulator-Hookshot/1.0",
    "x-forge-event": event, "x-forge-delivery": delivery.id,
  };
  if (target.secret) headers["x-hub-signature-256"] = signBody(target.secret, body);
  try {
    const res = await fetch(target.url, { method: "POST", headers, body, signal: AbortSignal.timeout(timeoutMs) });
    delivery.status = res.status;
    await res.arrayBuffer().catch(() => undefined);
  } catch (error) {
    delivery.error = error instanceof Error ? error.name : "error";
  }
  return delivery;
}
