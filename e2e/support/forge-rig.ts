import { pino, type Logger } from "pino";
import { createForgeClient, type ForgeClient, type ProbeClock } from "../../server/forge/index.ts";
import { createMetrics, type Metrics } from "../../server/observability/metrics.ts";
import { createReconciler, type Reconciler } from "../../server/reconciler/index.ts";
import { migrateDatabase, openStore, type Store } from "../../server/store/index.ts";
import { createWorker, DEFAULT_WORKER_OPTIONS, type Worker } from "../../server/worker/worker.ts";
import { createScenario, generateAppKeys, type Scenario } from "../../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { type BackendName, createTestDatabase, type TestDatabase } from "./databases.ts";
import { assertReplayAgreement, type ReplayReport, replayEveryRecord } from "./replay-records.ts";

export const CHECK_NAME = "Service / approval";
const RIG_SETTINGS = { checkName: CHECK_NAME, policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", allowInsecureChanges: false } as const;

/**
 * The pieces in-process worker and reconciler tests share: a forge simulator with no webhook URL (every delivery is lost, as
 * if the service were down), the base scenario with these reviewers, a migrated database and its store, and a forge client
 * whose logs (and the test's) are kept in `logs`.
 */
export async function startForgeRig(backend: BackendName, reviewers: string[]): Promise<{
  sim: ForgeSimulator; scenario: Scenario; database: TestDatabase; store: Store; forge: ForgeClient; logs: string[]; log: Logger;
}> {
  const sim = startForgeSimulator({});
  const scenario = await createScenario(sim, { keys: generateAppKeys(), reviewers });
  const database = await createTestDatabase(backend);
  await migrateDatabase(database.target, Date.now());
  const store = openStore(database.target);
  const logs: string[] = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void logs.push(line) });
  const forge = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: CHECK_NAME, logger: log });
  return { sim, scenario, database, store, forge, logs, log };
}

export type ReconcilerRig = { sim: ForgeSimulator; scenario: Scenario; store: Store; worker: Worker; reconciler: Reconciler; database: TestDatabase; logs: string[]; metrics: Metrics };

/**
 * The forge rig with a running in-process worker and a reconciler whose scans the test runs (runOnce): no webhook reaches
 * the service, as if it had been down, so every change is found by a scan. `pollMs` and `retryCapSeconds` tune the worker.
 */
export async function startReconcilerRig(backend: BackendName, reviewers: string[], options: { pollMs?: number; retryCapSeconds?: number; reconcilerClock?: ProbeClock } = {}): Promise<ReconcilerRig> {
  const { sim, scenario, database, store, forge, logs, log } = await startForgeRig(backend, reviewers);
  const metrics = createMetrics();
  const worker = createWorker(
    {
      store, forge, metrics, log, now: () => Date.now(), workerId: "worker-1", guardTimeoutMs: 5_000, resetTimeoutMs: 5_000,
      settings: { ...RIG_SETTINGS, organizationPolicyRepository: ".forge" },
    },
    { ...DEFAULT_WORKER_OPTIONS, pollMs: options.pollMs ?? 50, leaseMs: 30_000, retryCapSeconds: options.retryCapSeconds ?? 5 },
  );
  worker.start();
  const reconciler = createReconciler(
    { store, forge, log, metrics, organizationPolicyRepository: ".forge", policyPath: RIG_SETTINGS.policyPath, onQueued: () => worker.wake(), ...(options.reconcilerClock ? { clock: options.reconcilerClock } : {}) },
    { intervalMs: 300_000, retentionMs: 14 * 86_400_000 },
  );
  return { sim, scenario, store, worker, reconciler, database, logs, metrics };
}

/** Stops what startReconcilerRig started and drops its database. */
export async function stopReconcilerRig(rig: ReconcilerRig): Promise<void> {
  await rig.reconciler.stop();
  await rig.worker.stop();
  await rig.store.close();
  // Every decision record the rig's worker wrote must replay to itself (issue 28 item 4), checked while the forge is up.
  let report: ReplayReport | null = null;
  try {
    report = await replayEveryRecord(rig.database.target, rig.sim, rig.scenario, RIG_SETTINGS);
  } finally {
    await rig.sim.stop();
    await rig.database.drop();
  }
  assertReplayAgreement(report);
}
