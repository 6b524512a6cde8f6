import type { Config } from "../config/index.ts";
import { assertCompatible, type Store } from "../store/index.ts";

/**
 * Liveness and readiness (spec "Health"). A background task reports through a TaskProbe; a task that is disabled, or not
 * expected because the process has no forge client, reports true in its field. An expected task that stopped reports false.
 */
export type TaskProbe = { alive(): boolean; ready(): boolean };
export type CredentialProbe = { isFresh(): boolean };

export type HealthSources = {
  readonly config: Config;
  readonly store: Store;
  /** null while the process has no forge client (no App ID and key): the forge-bound tasks are then not expected. */
  readonly credentials: CredentialProbe | null;
  readonly worker: TaskProbe | null;
  readonly reconciler: TaskProbe | null;
};

export type Liveness = {
  status: "alive" | "not_alive";
  worker_enabled: boolean;
  reconciler_enabled: boolean;
  worker: boolean;
  reconciler: boolean;
};

export type Readiness = {
  status: "ready" | "not_ready";
  forge_credentials: boolean;
  database: boolean;
  worker_enabled: boolean;
  reconciler_enabled: boolean;
  worker: boolean;
  reconciler: boolean;
};

function taskField(enabled: boolean, hasForgeClient: boolean, probe: TaskProbe | null, read: (p: TaskProbe) => boolean): boolean {
  if (!enabled || !hasForgeClient || probe === null) return true;
  return read(probe);
}

export function liveness(sources: HealthSources): Liveness {
  const hasForgeClient = sources.credentials !== null;
  const worker = taskField(sources.config.workerEnabled, hasForgeClient, sources.worker, (p) => p.alive());
  const reconciler = taskField(sources.config.reconcileEnabled, hasForgeClient, sources.reconciler, (p) => p.alive());
  return {
    status: worker && reconciler ? "alive" : "not_alive",
    worker_enabled: sources.config.workerEnabled,
    reconciler_enabled: sources.config.reconcileEnabled,
    worker,
    reconciler,
  };
}

/** How long readiness waits for the database check: inside the packaged probe's 3 second timeout. */
export const READINESS_DATABASE_BOUND_MS = 2_000;
/** A database check answers every probe that arrives within this long of its start: a burst of probes queries once. */
export const READINESS_DATABASE_REUSE_MS = 2_000;

export type DatabaseCheck = () => Promise<boolean>;

/**
 * Readiness' `database` field: every pool of the store runs a statement (Store.ping) and the schema is the binary's, both
 * within READINESS_DATABASE_BOUND_MS, else false. Probes share one check for READINESS_DATABASE_REUSE_MS, so readiness
 * follows the database within bound + reuse (4 s) of it going away or coming back. The store bounds its own statements,
 * so a check given up on here still settles.
 */
export function databaseCheck(store: Store, clock: () => number = () => performance.now()): DatabaseCheck {
  let last: { startedAt: number; result: Promise<boolean> } | null = null;
  return () => {
    const now = clock();
    if (last && now - last.startedAt < READINESS_DATABASE_REUSE_MS) return last.result;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const result = Promise.race([
      Promise.all([store.ping(), assertCompatible(store)]).then(() => true, () => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(resolve, READINESS_DATABASE_BOUND_MS, false))),
    ]).finally(() => clearTimeout(timer));
    last = { startedAt: now, result };
    return result;
  };
}

export async function readiness(sources: HealthSources, checkDatabase: DatabaseCheck = databaseCheck(sources.store)): Promise<Readiness> {
  const hasForgeClient = sources.credentials !== null;
  const database = await checkDatabase();
  const forgeCredentials = sources.credentials?.isFresh() ?? false;
  const worker = taskField(sources.config.workerEnabled, hasForgeClient, sources.worker, (p) => p.ready());
  const reconciler = taskField(sources.config.reconcileEnabled, hasForgeClient, sources.reconciler, (p) => p.ready());
  return {
    status: forgeCredentials && database && worker && reconciler ? "ready" : "not_ready",
    forge_credentials: forgeCredentials,
    database,
    worker_enabled: sources.config.workerEnabled,
    reconciler_enabled: sources.config.reconcileEnabled,
    worker,
    reconciler,
  };
}
