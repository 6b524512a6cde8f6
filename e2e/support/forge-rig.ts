import { pino, type Logger } from "pino";
import { createForgeClient, type ForgeClient } from "../../server/forge/index.ts";
import { migrateDatabase, openStore, type Store } from "../../server/store/index.ts";
import { createScenario, generateAppKeys, type Scenario } from "../../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { type BackendName, createTestDatabase, type TestDatabase } from "./databases.ts";

export const CHECK_NAME = "Service / approval";

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
