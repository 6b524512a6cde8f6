import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { REQUEST_KINDS, REQUEST_OUTCOMES } from "../forge/governor.ts";
import { WEBHOOK_FAILURE_REASONS } from "../ingress/limits.ts";
import { DATABASE_FAILURE_REASONS } from "../store/failures.ts";

/**
 * The spec's metrics (service.md "GET /metrics"). Labels carry only fixed vocabularies: never repository names, titles,
 * actors, paths or delivery IDs. Depth gauges are read from the store at scrape time so they are accurate at every scrape.
 */
export type QueueGauges = { queueDepth: number; sharedHeadInvalidationDepth: number; deadJobs: number };

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(options: { readQueueGauges?: () => Promise<QueueGauges> } = {}) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let read = options.readQueueGauges;
  let readForgeBudget: (() => number | null) | null = null;
  let pending: Promise<QueueGauges | null> | null = null;
  // One store read per scrape feeds all three gauges.
  const snapshot = () => {
    pending ??= (read ? read() : Promise.resolve(null)).catch(() => null).finally(() => queueMicrotask(() => (pending = null)));
    return pending;
  };
  const fromStore = (key: keyof QueueGauges) =>
    async function (this: Gauge) {
      const values = await snapshot();
      if (values) this.set(values[key]);
    };

  const metrics = {
    registry,
    webhooks: new Counter({ name: "service_webhooks_total", help: "Verified webhook deliveries.", labelNames: ["event", "action"] as const, registers: [registry] }),
    webhookFailures: new Counter({ name: "service_webhook_failures_total", help: "Rejected or failed webhook deliveries.", labelNames: ["reason"] as const, registers: [registry] }),
    evaluations: new Counter({ name: "service_evaluations_total", help: "Completed evaluations.", labelNames: ["conclusion"] as const, registers: [registry] }),
    evaluationSeconds: new Histogram({ name: "service_evaluation_seconds", help: "Evaluation latency.", buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry] }),
    queueDepth: new Gauge({ name: "service_queue_depth", help: "Pending and leased exact-head invalidation, evaluation and authority fan-out rows.", registers: [registry], collect: fromStore("queueDepth") }),
    sharedHeadInvalidationDepth: new Gauge({ name: "service_shared_head_invalidation_depth", help: "Commit generations whose durable check invalidation has not finished.", registers: [registry], collect: fromStore("sharedHeadInvalidationDepth") }),
    sharedHeadInvalidations: new Counter({ name: "service_shared_head_invalidations_total", help: "Durable exact-head invalidation attempts.", labelNames: ["outcome"] as const, registers: [registry] }),
    deadJobs: new Gauge({ name: "service_dead_jobs", help: "Terminal queue rows; should be 0.", registers: [registry], collect: fromStore("deadJobs") }),
    insecureChangesEnabled: new Gauge({ name: "service_insecure_changes_enabled", help: "1 while the built-in non-delegable set is disabled, else 0.", registers: [registry] }),
    unapprovedMerges: new Counter({ name: "service_unapproved_merges_total", help: "Merges in repositories whose policy at the base commit enables the service, made without a current confirmed success from the service (none, never confirmed, or withdrawn by a reset to in progress): an administrator bypass, or the check not required. Counted once it is known the service was enabled there.", registers: [registry] }),
    reconciliations: new Counter({ name: "service_reconciliations_total", help: "Reconciliation outcomes.", labelNames: ["result"] as const, registers: [registry] }),
    forgeRequests: new Counter({ name: "service_forge_requests_total", help: "Forge requests by kind (read, write, app, graphql) and outcome; deferred ones were held back unsent.", labelNames: ["kind", "outcome"] as const, registers: [registry] }),
    // The smallest across installations and the App: a label per installation would be unbounded. NaN until an answer told
    // one (0 would read as a spent budget).
    forgeRateLimitRemaining: new Gauge({
      name: "service_forge_rate_limit_remaining", help: "Smallest primary forge rate-limit budget left in a current window, across installations and the App (NaN: none known yet).", registers: [registry],
      collect(this: Gauge) {
        this.set(readForgeBudget?.() ?? Number.NaN);
      },
    }),
    databaseErrors: new Counter({ name: "service_database_errors_total", help: "Failed database statements and operations, by reason (each failed attempt).", labelNames: ["reason"] as const, registers: [registry] }),
    databaseRetries: new Counter({ name: "service_database_retries_total", help: "Store operations run again after a failure, by the failure's reason.", labelNames: ["reason"] as const, registers: [registry] }),
    // No labels: an override's repository and reviewer are in the warn log line and the decision record, never a label.
    breakGlass: new Counter({ name: "service_break_glass_total", help: "Checks published as approved by a break-glass override; each publication counts.", registers: [registry] }),
    reconciliationLastSuccess: new Gauge({ name: "service_reconciliation_last_success_timestamp_seconds", help: "Unix timestamp of this process's most recent complete reconciliation.", registers: [registry] }),
    /** Attach the store once it is open (the registry exists before the database connects). */
    setQueueGaugeSource(source: () => Promise<QueueGauges>) {
      read = source;
    },
    /** Attach the forge request governor's lowest remaining primary budget (null: none known). */
    setForgeBudgetSource(source: () => number | null) {
      readForgeBudget = source;
    },
  };
  // Pre-create the fixed label values so every series exists from the first scrape.
  for (const outcome of ["completed", "failed", "rate_limited", "superseded"]) metrics.sharedHeadInvalidations.inc({ outcome }, 0);
  for (const reason of WEBHOOK_FAILURE_REASONS) metrics.webhookFailures.inc({ reason }, 0);
  for (const result of ["success", "partial", "failure"]) metrics.reconciliations.inc({ result }, 0);
  for (const conclusion of ["success", "failure"]) metrics.evaluations.inc({ conclusion }, 0);
  for (const kind of REQUEST_KINDS) for (const outcome of REQUEST_OUTCOMES) metrics.forgeRequests.inc({ kind, outcome }, 0);
  for (const reason of DATABASE_FAILURE_REASONS) {
    metrics.databaseErrors.inc({ reason }, 0);
    metrics.databaseRetries.inc({ reason }, 0);
  }
  return metrics;
}
