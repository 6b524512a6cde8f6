import { hostname } from "node:os";
import { type ProbeClock, systemClock } from "../forge/index.ts";
import type { Metrics } from "../observability/metrics.ts";
import { type ElectionLease, releaseElectionLease, renewElectionLease } from "../store/index.ts";
import { type AttemptDeps, type AttemptReport, type MergeRecoveryState, runAttempt } from "./attempt.ts";
import { DEFAULT_FULL_SWEEP_HOURS } from "./sweep.ts";

/**
 * The reconciler loop (spec "Reconciliation attempt"; DESIGN 4 "elected reconciler"; STYLE 12). start() runs the first
 * attempt at once (a missed delivery is recovered at startup, not one interval later), then one every intervalMs, timed by
 * the injected clock. Only the process holding the named lease scans; between its attempts it keeps the lease for one
 * interval plus RECONCILER_LEASE_TTL_MS, so leadership is stable and a crashed leader is replaced within that time.
 *
 * Outcomes are counted in service_reconciliations_total{result}; a success sets
 * service_reconciliation_last_success_timestamp_seconds. An attempt that saw another owner records nothing. stop() aborts the
 * attempt in flight (it records partial when it was elected), waits for it, and releases the lease; an idle or unelected
 * stop records nothing.
 */
export const RECONCILER_LEASE_NAME = "reconciler";
/**
 * How long the lease lasts past its latest renewal while scanning: every installation, repository and queueing transaction
 * renews it, and so does a background renewal every third of it (a single long forge listing cannot outlast it).
 */
export const RECONCILER_LEASE_TTL_MS = 60_000;

export type ReconcilerDeps = Omit<AttemptDeps, "clock"> & {
  readonly metrics: Pick<Metrics, "reconciliations" | "reconciliationLastSuccess">;
  readonly clock?: ProbeClock;
  /** This process's identity in the lease table (default: host, pid and a random suffix). */
  readonly owner?: string;
};

export type ReconcilerOptions = {
  readonly intervalMs: number;
  /** Delivery IDs older than this are pruned (SERVICE_WEBHOOK_DELIVERY_RETENTION_DAYS). */
  readonly retentionMs: number;
  /** SERVICE_RECONCILE_FULL_SWEEP_HOURS in milliseconds (default 24 hours): the rolling full sweep's period (sweep.ts). */
  readonly fullSweepMs?: number;
  /** SERVICE_DECISION_RETENTION_DAYS in milliseconds (default 400 days): decision and merge records older are pruned. */
  readonly decisionRetentionMs?: number;
  readonly leaseTtlMs?: number;
};

export type Reconciler = {
  start(): void;
  /** Stops the loop, interrupts and waits for the attempt in flight, and gives the lease up. */
  stop(): Promise<void>;
  /** One attempt now (what the loop runs); joins the attempt in flight if there is one. */
  runOnce(): Promise<AttemptReport>;
  alive(): boolean;
  ready(): boolean;
  readonly owner: string;
};

export function createReconciler(deps: ReconcilerDeps, options: ReconcilerOptions): Reconciler {
  const clock = deps.clock ?? systemClock;
  const owner = deps.owner ?? `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`;
  const ttlMs = options.leaseTtlMs ?? RECONCILER_LEASE_TTL_MS;
  const fullSweepMs = options.fullSweepMs ?? DEFAULT_FULL_SWEEP_HOURS * 3_600_000;
  const lease: ElectionLease = { name: RECONCILER_LEASE_NAME, owner, ttlMs };
  let running = false;
  let crashed = false;
  let timer: unknown = null;
  let current: Promise<AttemptReport> | null = null;
  let controller = new AbortController();
  /** The merge recovery's knowledge of each repository between this process's attempts (attempt.ts; none at start: all owed). */
  const mergeRecovery: MergeRecoveryState = new Map();

  async function attempt(): Promise<AttemptReport> {
    const report = await runAttempt({ ...deps, clock }, { lease, retentionMs: options.retentionMs, fullSweepMs, mergeRecovery, ...(options.decisionRetentionMs !== undefined ? { decisionRetentionMs: options.decisionRetentionMs } : {}) }, controller.signal);
    if (report.result === "unelected") return report;
    deps.metrics.reconciliations.inc({ result: report.result });
    const summary = { result: report.result, problems: report.problems, installations: report.installations, repositories: report.repositories, pull_requests: report.pullRequests, unchanged: report.unchanged, queued: report.queued, pruned: report.pruned, checkpointed: report.checkpointed };
    if (report.result === "success") {
      deps.metrics.reconciliationLastSuccess.set(clock.now() / 1000);
      deps.log.info(summary, "reconciliation finished");
    } else {
      deps.log.warn(summary, "reconciliation did not finish completely");
    }
    if (report.result !== "failure" && !controller.signal.aborted) {
      // Keep leadership until the next attempt (plus the scan TTL); a failed renewal only means the next election decides.
      await deps.store.execute(() => renewElectionLease(lease, clock.now(), options.intervalMs + ttlMs)).catch(() => false);
    }
    return report;
  }

  function runOnce(): Promise<AttemptReport> {
    current ??= attempt().finally(() => {
      current = null;
    });
    return current;
  }

  function schedule(): void {
    if (!running) return;
    timer = clock.setTimeout(() => {
      timer = null;
      if (!running) return;
      runOnce().then(schedule, (error) => {
        crashed = true;
        deps.log.fatal({ error: (error as Error)?.name }, "the reconciler loop stopped unexpectedly");
      });
    }, options.intervalMs);
  }

  return {
    owner,
    start() {
      if (running) return;
      running = true;
      crashed = false;
      controller = new AbortController();
      runOnce().then(schedule, (error) => {
        crashed = true;
        deps.log.fatal({ error: (error as Error)?.name }, "the reconciler loop stopped unexpectedly");
      });
    },
    async stop() {
      running = false;
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
      controller.abort(new Error("shutting down"));
      await current?.catch(() => {});
      // Deletes the row only while it names this process: an unelected stop changes nothing.
      await deps.store.execute(() => releaseElectionLease(lease)).catch(() => false);
    },
    runOnce,
    alive: () => running && !crashed,
    ready: () => running && !crashed,
  };
}
