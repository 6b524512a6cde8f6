import type { Config } from "../config/index.ts";
import { describeConfig, evaluationSettingsOf } from "../config/index.ts";
import { createApp, listenerFetch } from "../http/app.ts";
import { createForgeClient, createGovernor, createIdentityProbe, type ForgeClient, type IdentityProbe } from "../forge/index.ts";
import type { HealthSources } from "../http/health.ts";
import { createBodyBudget, PullHandoff, type WebhookDeps } from "../ingress/index.ts";
import type { CheckTransition } from "../worker/context.ts";
import { createWorker, DEFAULT_WORKER_OPTIONS, type Worker } from "../worker/worker.ts";
import { type Evaluator, threadEvaluator } from "../worker/evaluator.ts";
import { createReconciler, type Reconciler } from "../reconciler/index.ts";
import { hostname } from "node:os";
import type { Logger } from "../observability/logger.ts";
import { createMetrics } from "../observability/metrics.ts";
import { assertCompatible, openStore, type Store, StoreError } from "../store/index.ts";
import { databaseFailureRecorder } from "../store/failures.ts";
import { APPLICATION_VERSION, BUILD_REVISION_VALUE } from "../build-info.ts";
import { describe } from "./database.ts";

/** Bound on each forge request; the fast path has its own, shorter overall deadline. */
export const FORGE_REQUEST_TIMEOUT_MS = 10_000;

/**
 * Bun's idle timeout, set rather than left to its default (behaviour checked on Bun 1.4.4): a connection is closed once this
 * long passes with less than about 16 KiB received (uWebSockets' receive-throughput rule), so idle keep-alive connections and
 * bodies trickled a few bytes at a time are closed after 10 to 14 s on every route, while a handler still working on a whole
 * request is never cut. Bun closes a connection whose request headers are still incomplete after about 12 s whatever this
 * says. The webhook route's own body rules (read-body.ts) are stricter. A proxy in front should drop idle upstream
 * connections sooner than this.
 */
export const HTTP_IDLE_TIMEOUT_SECONDS = 10;

/**
 * One process per address. Bun turns SO_REUSEPORT on by default when `development` is false (checked on Bun 1.4.4: a
 * second process then binds the same host and port and the kernel spreads connections over both), so serve asks for it to
 * be off; a second process on a used address fails to start, and says which address.
 */
function listenFailure(address: string, error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "EADDRINUSE") return `cannot listen on ${address}: the address is in use (another process, perhaps another instance of this service, listens there)`;
  if (code === "EACCES") return `cannot listen on ${address}: permission denied`;
  return `cannot listen on ${address}: ${(error as Error).message}`;
}

export type RunningService = { readonly url: string; readonly port: number; stop(): Promise<void> };

/**
 * `serve`: checks the database (never creating or changing schema), then serves the HTTP routes. Returns a handle whose
 * stop() drains: stop accepting, finish in-flight requests, stop tasks, close the database.
 */
export type ServiceHooks = { readonly onTransition?: (event: CheckTransition) => void };

export async function startService(config: Config, log: Logger, hooks: ServiceHooks = {}): Promise<RunningService> {
  log.info({ settings: describeConfig(config), version: APPLICATION_VERSION, build_revision: BUILD_REVISION_VALUE }, "starting");
  if (config.allowInsecureChanges) {
    log.error(
      { setting: "SERVICE_ALLOW_INSECURE_CHANGES", severity: "high" },
      "SERVICE_ALLOW_INSECURE_CHANGES=true: the built-in non-delegable paths are disabled for every installation; App approvals can now stand in for humans on CODEOWNERS, policy and workflow files",
    );
  }
  let store: Store;
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  try {
    store = openStore(config.database, { onFailure: databaseFailureRecorder(metrics, log) });
    await assertCompatible(store);
  } catch (error) {
    throw new StoreError(error instanceof StoreError ? error.code : "unreachable", describe(error));
  }
  metrics.insecureChangesEnabled.set(config.allowInsecureChanges ? 1 : 0);

  // "Evaluator configured" = this process has a forge client (App ID and key), whatever SERVICE_WORKER_ENABLED says (DESIGN 3.6).
  let forge: ForgeClient | null = null;
  let probe: IdentityProbe | null = null;
  if (config.forge.appId !== null && config.forge.privateKey !== null) {
    const governor = createGovernor({ ...config.forge.requestBudget, onRequest: (kind, outcome) => metrics.forgeRequests.inc({ kind, outcome }) });
    metrics.setForgeBudgetSource(() => governor.lowestRemaining());
    forge = createForgeClient({ apiUrl: config.forge.apiUrl, appId: config.forge.appId, privateKey: config.forge.privateKey, requestTimeoutMs: FORGE_REQUEST_TIMEOUT_MS, checkName: config.checkName, logger: log, governor });
    probe = createIdentityProbe({ client: forge, appId: config.forge.appId, intervalMs: config.forge.identityProbeIntervalSeconds * 1000, freshnessMs: config.forge.identityFreshnessSeconds * 1000, logger: log });
    probe.start();
  } else {
    log.warn("no App ID and private key configured: no forge client, so direct triggers are stored but answered 503 and readiness stays false");
  }

  const now = () => Date.now();
  // The fast path's reads of pull requests, handed to the evaluations their deliveries queued in this process.
  const pullHandoff = new PullHandoff();
  let worker: Worker | null = null;
  let evaluator: Evaluator | null = null;
  if (forge && config.workerEnabled) {
    const settings = { ...evaluationSettingsOf(config), organizationPolicyRepository: config.organizationPolicyRepository };
    // The decision core runs on evaluation threads: no decision can stall ingress, probes or lease renewal (issue 16 item 2).
    evaluator = threadEvaluator(settings, { log });
    worker = createWorker(
      {
        store, forge, metrics, log, now, settings, evaluator, pullHandoff,
        workerId: `${hostname()}:${process.pid}:${crypto.randomUUID().slice(0, 8)}`,
        guardTimeoutMs: config.webhookInvalidationTimeoutSeconds * 1000,
        resetTimeoutMs: config.webhookInvalidationTimeoutSeconds * 1000,
        ...(hooks.onTransition ? { onTransition: hooks.onTransition } : {}),
      },
      { ...DEFAULT_WORKER_OPTIONS, leaseMs: config.workerLeaseSeconds * 1000, retryCapSeconds: config.workerRetryMaxSeconds },
    );
    worker.start();
  }
  let reconciler: Reconciler | null = null;
  if (forge && config.reconcileEnabled) {
    reconciler = createReconciler(
      {
        store, forge, log, metrics, organizationPolicyRepository: config.organizationPolicyRepository, policyPath: config.policyPath, ...(worker ? { onQueued: () => worker.wake() } : {}),
        ...(config.attestation === null ? {} : { attestation: { signer: config.attestation.signer, forgeWebUrl: config.forge.webUrl, appId: config.forge.appId ?? 0, version: APPLICATION_VERSION } }),
      },
      { intervalMs: config.reconcileIntervalSeconds * 1000, retentionMs: config.webhookDeliveryRetentionDays * 86_400_000, fullSweepMs: config.reconcileFullSweepHours * 3_600_000, decisionRetentionMs: config.decisionRetentionDays * 86_400_000 },
    );
    reconciler.start();
  }
  const webhook: WebhookDeps = {
    secret: config.webhookSecret,
    store,
    metrics,
    log,
    mapping: { organizationPolicyRepository: config.organizationPolicyRepository, checkName: config.checkName, appId: config.forge.appId },
    fastPath: forge
      ? {
          forge, store, policyPath: config.policyPath, now, guardTimeoutMs: config.webhookInvalidationTimeoutSeconds * 1000, handoff: pullHandoff,
          ...(hooks.onTransition ? { onReset: (e: { pullNumber: number | null; headSha: string; created: boolean }) => hooks.onTransition!({ pullNumber: e.pullNumber, headSha: e.headSha, status: "in_progress", conclusion: null, title: e.created ? "created, evaluating" : "reset, evaluating" }) } : {}),
        }
      : null,
    invalidationTimeoutMs: config.webhookInvalidationTimeoutSeconds * 1000,
    bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes),
    now,
    ...(worker ? { onQueued: () => worker.wake() } : {}),
  };
  const health: HealthSources = { config, store, credentials: probe, worker, reconciler };
  const app = createApp({ config, build: { version: APPLICATION_VERSION, buildRevision: BUILD_REVISION_VALUE }, health, metrics, webhook, log });
  const stopTasks = async () => {
    await reconciler?.stop();
    await worker?.stop();
    await evaluator?.close();
    await probe?.stop();
    await store.close();
  };
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({ hostname: config.host, port: config.port, fetch: listenerFetch(app), development: false, idleTimeout: HTTP_IDLE_TIMEOUT_SECONDS, reusePort: false });
  } catch (error) {
    await stopTasks();
    throw new Error(listenFailure(`${host}:${config.port}`, error));
  }
  const url = `http://${host}:${server.port}`;
  log.info({ url, port: server.port, database_backend: config.database.backend }, "listening");
  return {
    url,
    port: server.port ?? config.port,
    async stop() {
      await server.stop();
      await stopTasks();
      log.info("stopped");
    },
  };
}
