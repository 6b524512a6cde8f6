import { type Logger, pino } from "pino";
import { createTestDatabase, type BackendName, type TestDatabase } from "./databases.ts";
import { signedDelivery } from "./payloads.ts";
import { DEFAULTS } from "../../server/config/index.ts";
import { ForgeError } from "../../server/forge/index.ts";
import { createMetrics, type Metrics } from "../../server/observability/metrics.ts";
import { all, migrateDatabase, openStore, type Store } from "../../server/store/index.ts";
import { type BodyBudget, createBodyBudget } from "../../server/ingress/body-budget.ts";
import type { FastPathDeps } from "../../server/ingress/fast-path.ts";
import { handleWebhook, type WebhookDeps } from "../../server/ingress/handle-webhook.ts";

/** A configured evaluator whose forge cannot be reached: every fast path fails and leaves its invalidation pending. */
export function unreachableForge(store: Store): FastPathDeps {
  const down = async (): Promise<never> => {
    throw new ForgeError("transient", "forge unreachable (test)");
  };
  return { forge: { getPullRequest: down, findManagedCheck: down, setCheckInProgress: down, createInProgressCheck: down, readFile: down }, store, policyPath: ".forge/service-policy.toml", now: () => Date.now(), guardTimeoutMs: 1_000 };
}

/** Test harness: a migrated throwaway database, the webhook handler with injectable fast path, and row inspection. */
export const SECRET = "test-webhook-secret-0123456789abcdef-0123";

export type Harness = {
  store: Store;
  metrics: Metrics;
  deps: WebhookDeps;
  logs: string[];
  send(event: string, deliveryId: string, payload: unknown, init?: { headers?: Record<string, string | null>; body?: BodyInit }): Promise<{ status: number; body: Record<string, unknown> }>;
  count(table: string, where?: string): Promise<number>;
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  close(): Promise<void>;
};

export async function ingressHarness(backend: BackendName, options: { secret?: string | null; fastPath?: FastPathDeps | null; timeoutMs?: number; appId?: number | null; bodyBudget?: BodyBudget } = {}): Promise<Harness> {
  const database: TestDatabase = await createTestDatabase(backend);
  await migrateDatabase(database.target, 1);
  const store = openStore(database.target);
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  const logs: string[] = [];
  const log: Logger = pino({ level: "trace" }, { write: (line: string) => void logs.push(line) });
  const deps: WebhookDeps = {
    secret: options.secret === null ? null : new TextEncoder().encode(options.secret ?? SECRET),
    store,
    metrics,
    log,
    mapping: { organizationPolicyRepository: ".forge", checkName: "Service / approval", appId: options.appId === undefined ? 12 : options.appId },
    fastPath: options.fastPath === undefined ? unreachableForge(store) : options.fastPath,
    invalidationTimeoutMs: options.timeoutMs ?? 2_000,
    bodyBudget: options.bodyBudget ?? createBodyBudget(DEFAULTS.webhookUnverifiedBodyBudgetBytes),
    now: () => Date.now(),
  };
  const rows = async <T,>(sql: string) => store.execute(function* () { return (yield* all(sql)) as T[]; });
  return {
    store, metrics, deps, logs, rows,
    async send(event, deliveryId, payload, init = {}) {
      const signed = signedDelivery(options.secret ?? SECRET, event, deliveryId, payload);
      const headers = new Headers();
      for (const [name, value] of Object.entries({ ...signed.headers, ...init.headers })) if (value !== null) headers.set(name, value);
      const request = new Request("http://localhost/webhooks/forge", { method: "POST", headers, body: (init.body ?? signed.body) as BodyInit });
      const reply = await handleWebhook(deps, request);
      return { status: reply.status, body: reply.body as Record<string, unknown> };
    },
    async count(table, where = "1 = 1") {
      const [row] = await rows<{ n: number }>(`select count(*) as n from ${table} where ${where}`);
      return Number(row!.n);
    },
    async close() {
      await store.close();
      await database.drop();
    },
  };
}
