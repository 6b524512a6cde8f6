import { afterEach, describe, expect, test } from "bun:test";
import type postgres from "postgres";
import { INSTALLATION, POLICY_REPO, pullRequestEvent, pushEvent, SHA_A, signedDelivery } from "../../e2e/support/payloads.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import { claimNext, type PostgresStore } from "../store/index.ts";
import { publicationGuardKey } from "../store/postgres.ts";
import { webhookRoutes } from "../http/webhook-route.ts";
import type { FastPathDeps } from "./fast-path.ts";
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

/** A forge that never answers: each call ends only when the fast path's signal does. */
function silentForge(store: FastPathDeps["store"], calls: { at: number; aborted?: number }[]): FastPathDeps {
  const never = (...args: unknown[]): Promise<never> => {
    const signal = args.map((arg) => (arg as { signal?: AbortSignal } | null)?.signal).find((s) => s instanceof AbortSignal);
    const call: { at: number; aborted?: number } = { at: performance.now() };
    calls.push(call);
    return new Promise((_, reject) => {
      signal?.addEventListener("abort", () => {
        call.aborted = performance.now();
        reject(signal.reason);
      }, { once: true });
    });
  };
  return { forge: { getPullRequest: never, findManagedCheck: never, setCheckInProgress: never, createInProgressCheck: never, readFile: never }, store, policyPath: ".forge/service-policy.toml", now: () => Date.now(), guardTimeoutMs: TIMEOUT_MS };
}

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

  test("a direct trigger whose acceptance stalls is answered 202 within the deadline: the fast path gets only what is left, and its work runs", async () => {
    h = await ingressHarness("postgresql", { timeoutMs: TIMEOUT_MS });
    const calls: { at: number; aborted?: number }[] = [];
    const deps: WebhookDeps = { ...h.deps, fastPath: silentForge(h.store, calls) };
    // Another session holds the queue table for 2.5 s: the acceptance waits for it (within its statement bound), then commits.
    const stall = await session();
    await stall.sql.unsafe("begin");
    await stall.sql.unsafe("lock table jobs in access exclusive mode");
    setTimeout(() => void later(stall.sql.unsafe("commit")), 2_500);
    const reply = await post(deps, "pull_request", "d1", pullRequestEvent("opened"));
    expect(reply).toMatchObject({ status: 202, body: { accepted: true, queued: true } });
    expect(reply.ms).toBeGreaterThan(2_500);
    expect(reply.ms).toBeLessThan(ANSWER_BY_MS);
    expect(calls.length).toBeGreaterThan(0);
    // Nothing accepted is lost: the head's invalidation is claimable once the answer is out, and the evaluation after it.
    expect(await h.count("webhook_deliveries")).toBe(1);
    const claimed = await h.store.execute(() => claimNext("test-worker", Date.now(), 30_000));
    expect(claimed).toMatchObject({ kind: "head_invalidation", head_sha: SHA_A });
    const next = await h.store.execute(() => claimNext("test-worker", Date.now(), 30_000));
    expect(next).toMatchObject({ kind: "evaluation", pull_number: 7 });
  }, 25_000);

  test("an authority event whose acceptance stalls after its guard is answered 503 within the deadline and nothing of it is kept", async () => {
    h = await ingressHarness("postgresql", { timeoutMs: TIMEOUT_MS });
    // A slow database: each row the acceptance writes takes 2.8 s (each statement within the 3 s bound), after a check
    // write held the installation guard for 2.5 s.
    await h.rows("create function stall() returns trigger language plpgsql as $$ begin perform pg_sleep(2.8); return new; end $$");
    for (const table of ["webhook_deliveries", "installation_epochs", "jobs"]) await h.rows(`create trigger stall before insert on ${table} for each row execute function stall()`);
    const writer = await session();
    await writer.sql.unsafe("select pg_advisory_lock_shared($1::bigint)", [publicationGuardKey(INSTALLATION)]);
    setTimeout(() => void later(writer.sql.unsafe("select pg_advisory_unlock_shared($1::bigint)", [publicationGuardKey(INSTALLATION)])), 2_500);
    const reply = await post(h.deps, "push", "a1", authorityPush());
    expect(reply).toMatchObject({ status: 503, body: { error: "database" } });
    expect(reply.ms).toBeLessThan(ANSWER_BY_MS);
    // The stalled statement ends on the server too: the transaction never commits.
    await Bun.sleep(3_500);
    expect(await h.count("webhook_deliveries")).toBe(0);
    expect(await h.count("installation_epochs")).toBe(0);
    expect(await h.count("jobs")).toBe(0);
    // Once the database is quick again, the forge's redelivery is accepted.
    for (const table of ["webhook_deliveries", "installation_epochs", "jobs"]) await h.rows(`drop trigger stall on ${table}`);
    expect((await post(h.deps, "push", "a1", authorityPush())).status).toBe(202);
  }, 30_000);
});
