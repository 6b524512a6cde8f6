import type { Config } from "../config/index.ts";
import { describeConfig } from "../config/index.ts";
import { createApp } from "../http/app.ts";
import type { HealthSources } from "../http/health.ts";
import type { Logger } from "../observability/logger.ts";
import { createMetrics } from "../observability/metrics.ts";
import { assertCompatible, openStore, type Store, StoreError } from "../store/index.ts";
import { APPLICATION_VERSION, BUILD_REVISION_VALUE } from "../build-info.ts";
import { describe } from "./database.ts";

export type RunningService = { readonly url: string; readonly port: number; stop(): Promise<void> };

/**
 * `serve`: checks the database (never creating or changing schema), then serves the HTTP routes. Returns a handle whose
 * stop() drains: stop accepting, finish in-flight requests, stop tasks, close the database.
 */
export async function startService(config: Config, log: Logger): Promise<RunningService> {
  log.info({ settings: describeConfig(config), version: APPLICATION_VERSION, build_revision: BUILD_REVISION_VALUE }, "starting");
  if (config.allowInsecureChanges) {
    log.error(
      { setting: "SERVICE_ALLOW_INSECURE_CHANGES", severity: "high" },
      "SERVICE_ALLOW_INSECURE_CHANGES=true: the built-in non-delegable paths are disabled for every installation; App approvals can now stand in for humans on CODEOWNERS, policy and workflow files",
    );
  }
  let store: Store;
  try {
    store = openStore(config.database);
    await assertCompatible(store);
  } catch (error) {
    throw new StoreError(error instanceof StoreError ? error.code : "unreachable", describe(error));
  }
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  metrics.insecureChangesEnabled.set(config.allowInsecureChanges ? 1 : 0);

  const health: HealthSources = { config, store, credentials: null, worker: null, reconciler: null };
  const app = createApp({ config, build: { version: APPLICATION_VERSION, buildRevision: BUILD_REVISION_VALUE }, health, metrics });
  const server = Bun.serve({ hostname: config.host, port: config.port, fetch: (request) => app.handle(request), development: false });
  const url = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${server.port}`;
  log.info({ url, port: server.port, database_backend: config.database.backend }, "listening");
  return {
    url,
    port: server.port ?? config.port,
    async stop() {
      await server.stop();
      await store.close();
      log.info("stopped");
    },
  };
}
