import type { Config } from "../config/index.ts";
import { compatibilityProblem, MIGRATION_HEAD, migrateDatabase, openStore, RELEASE_CONTRACT, StoreError } from "../store/index.ts";
import { EXIT_FAILURE, EXIT_OK } from "./exit-codes.ts";

type Out = { stdout: (line: string) => void; stderr: (line: string) => void };

/** `database migrate`: applies the embedded migrations (the only command that creates or changes schema). */
export async function databaseMigrate(config: Config, out: Out, now = Date.now()): Promise<number> {
  try {
    const report = await migrateDatabase(config.database, now);
    out.stdout(
      report.applied.length === 0
        ? `database already at migration head ${report.head} (contract ${RELEASE_CONTRACT}); nothing to apply`
        : `applied ${report.applied.join(", ")}; database now at migration head ${report.head} (contract ${RELEASE_CONTRACT})`,
    );
    return EXIT_OK;
  } catch (error) {
    out.stderr(`database migrate failed: ${describe(error)}`);
    return EXIT_FAILURE;
  }
}

/** `database check`: exit 0 only when the database is at this binary's migration head and release contract. */
export async function databaseCheck(config: Config, out: Out): Promise<number> {
  let store;
  try {
    store = openStore(config.database);
    const problem = compatibilityProblem(await store.schemaIdentity());
    if (problem !== null) {
      out.stderr(`database check failed: ${problem}`);
      return EXIT_FAILURE;
    }
    out.stdout(`database is at migration head ${MIGRATION_HEAD} with contract ${RELEASE_CONTRACT}`);
    return EXIT_OK;
  } catch (error) {
    out.stderr(`database check failed: ${describe(error)}`);
    return EXIT_FAILURE;
  } finally {
    await store?.close().catch(() => {});
  }
}

/** Only our own classified messages are printed: driver messages can echo connection details. */
export function describe(error: unknown): string {
  return error instanceof StoreError ? error.message : "unexpected database error (see the database server's log)";
}
