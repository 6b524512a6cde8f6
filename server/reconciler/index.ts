// Public surface of the reconciler (spec "Reconciliation attempt").
export { createReconciler, RECONCILER_LEASE_NAME, RECONCILER_LEASE_TTL_MS, type Reconciler, type ReconcilerDeps, type ReconcilerOptions } from "./reconciler.ts";
export { MAX_RECONCILE_PULL_REQUESTS, MERGE_RECOVERY_PERIOD_MS, RECONCILE_QUEUE_BATCH, recoveryStaggerMs, runAttempt, type AttemptReport, type AttemptResult, type ReconcileForge } from "./attempt.ts";
export { DEFAULT_FULL_SWEEP_HOURS, dueReason, type DueReason, latestSlotMs, sweepOffsetMs } from "./sweep.ts";
export { REJECTION_REASONS, type RejectionReason, validateInstallations, validateOpenPullRequests, validateRepositories } from "./validate.ts";
