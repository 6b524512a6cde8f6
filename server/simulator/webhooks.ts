// Signed webhook delivery as GitHub sends one to an App: X-Hub-Signature-256 (HMAC-SHA256 of the exact raw body),
// X-GitHub-Event, X-GitHub-Delivery, X-GitHub-Hook-ID, X-GitHub-Hook-Installation-Target-ID/-Type (the App) and a
// GitHub-Hookshot user agent. The service also accepts the neutral X-Forge-Event and X-Forge-Delivery; the unit tests send those.
import { createHmac, randomUUID } from "node:crypto";

export interface WebhookDelivery {
  id: string; event: string; action: string | null; installationId: number; url: string | null;
  status: number | null; error: string | null; body: string;
}

export interface WebhookTarget {
  url: string | null; secret: string | null; appId: number;
  /** Also X-Forge-Event and X-Forge-Delivery, with the same values (for builds that read only those). */
  neutralHeaders?: boolean;
}

/** The simulator's one webhook per App: its hook ID is the App's (GitHub numbers hooks on its own; any stable value does). */
const hookId = (appId: number) => String(1_000_000 + appId);

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
    "content-type": "application/json", "user-agent": "GitHub-Hookshot/5151a1e",
    "x-github-event": event, "x-github-delivery": delivery.id, "x-github-hook-id": hookId(target.appId),
    "x-github-hook-installation-target-id": String(target.appId), "x-github-hook-installation-target-type": "integration",
  };
  if (target.neutralHeaders) Object.assign(headers, { "x-forge-event": event, "x-forge-delivery": delivery.id });
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
