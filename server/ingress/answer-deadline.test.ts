import { afterEach, describe, expect, test } from "bun:test";
import type postgres from "postgres";
import { INSTALLATION, POLICY_REPO, pushEvent, signedDelivery } from "../../e2e/support/payloads.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import type { PostgresStore } from "../store/index.ts";
import { publicationGuardKey } from "../store/postgres.ts";
import { webhookRoutes } from "../http/webhook-route.ts";
import type { WebhookDeps } from "./handle-webhook.ts";

/**
 * The forge records a webhook answered after 10 s as failed and never retries it (spec "POST /webhooks/forge" rule 10), so
 * every answer comes within one deadline from receipt, whatever the database or the forge do meanwhile (issue 25 item 10),
 * and a guard wait lasts as long as SERVICE_WEBHOOK_INVALIDATION_TIMEOUT_SECONDS allows, answered with the spec's reason
 * when it runs out (item 9). Both at that setting's maximum, 9 s, on PostgreSQL, where other processes hold locks; the
 * answer time is measured by an HTTP client.
 */
const TIMEOUT_MS = 9_000;
/** What a client may see past the 9 s deadline: the answer's own way back, and timer slack on a loaded machine. */
const ANSWER_BY_MS = 9_600;

const authorityPush = () => pushEvent({ repo: POLICY_REPO, ref: "refs/heads/main" });

/** Sends a statement from a timer (postgres.js sends a query only once it is awaited or `then`ed). */
const later = (statement: Promise<unknown>) => statement.then(() => {}, () => {});

/** A session of its own on the test database: holds what another process would hold. */
type Session = { sql: postgres.ReservedSql; end(): Promise<void> };

describe("answers within the forge's deadline on postgresql", () => {
  let h: Harness;
  let server: ReturnType<typeof Bun.serve> | null = null;
  const sessions: Session[] = [];
  afterEach(async () => {
    for (const session of sessions.splice(0)) await session.end().catch(() => {});
    server?.stop(true);
    server = null;
    await h?.close();
  });

  /** A connection of its own (not one the acceptance can use), as another process would have. */
  const session = async (): Promise<Session> => {
    const sql = await (h.store as PostgresStore).sql.reserve();
    const opened = { sql, end: async () => sql.release() };
    sessions.push(opened);
    return opened;
  };
  const failures = async (reason: string) => {
    const text = await h.metrics.registry.getSingleMetricAsString("service_webhook_failures_total");
    return Number(text.match(new RegExp(`reason="${reason}"} (\\d+)`))?.[1] ?? 0);
  };
  /** Serves the webhook route over HTTP and sends one signed delivery; `ms` is what the client waited for the answer. */
  const post = async (deps: WebhookDeps, event: string, deliveryId: string, payload: unknown) => {
    server ??= Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => webhookRoutes(deps).handle(request) });
    const signed = signedDelivery(SECRET, event, deliveryId, payload);
    const started = performance.now();
    const response = await fetch(`http://127.0.0.1:${server.port}/webhooks/forge`, { method: "POST", headers: signed.headers, body: signed.body as BodyInit });
    const body = await response.json();
    return { status: response.status, body, ms: performance.now() - started };
  };

  test("an authority event waits past the ordinary statement bound for a check write and is recorded when it ends", async () => {
    h = await ingressHarness("postgresql", { timeoutMs: TIMEOUT_MS });
    const writer = await session();
    await writer.sql.unsafe("select pg_advisory_lock_shared($1::bigint)", [publicationGuardKey(INSTALLATION)]);
    setTimeout(() => void later(writer.sql.unsafe("select pg_advisory_unlock_shared($1::bigint)", [publicationGuardKey(INSTALLATION)])), 4_000);
    const reply = await post(h.deps, "push", "a1", authorityPush());
    expect(reply).toMatchObject({ status: 202, body: { accepted: true, queued: true } });
    expect(reply.ms).toBeGreaterThan(3_900);
    expect(await h.count("installation_epochs", "authority_epoch = 1")).toBe(1);
  }, 20_000);

  test("an authority event that a check write outlasts waits the configured 9 s and is answered 503 authority_timeout", async () => {
    h = await ingressHarness("postgresql", { timeoutMs: TIMEOUT_MS });
    const writer = await session();
    await writer.sql.unsafe("select pg_advisory_lock_shared($1::bigint)", [publicationGuardKey(INSTALLATION)]);
    const reply = await post(h.deps, "push", "a1", authorityPush());
    expect(reply).toMatchObject({ status: 503, body: { error: "authority_timeout" } });
    expect(reply.ms).toBeGreaterThan(8_000);
    expect(reply.ms).toBeLessThan(ANSWER_BY_MS);
    expect(await failures("authority_timeout")).toBe(1);
    expect(await failures("database")).toBe(0);
    expect(await h.count("webhook_deliveries")).toBe(0);
  }, 20_000);
});
