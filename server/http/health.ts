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

export async function readiness(sources: HealthSources): Promise<Readiness> {
  const hasForgeClient = sources.credentials !== null;
  let database = false;
  try {
    await assertCompatible(sources.store);
    database = true;
  } catch {
    database = false;
  }
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
