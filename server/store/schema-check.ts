import { MIGRATION_HEAD, RELEASE_CONTRACT } from "./migrations.ts";
import { type SchemaIdentity, type Store, StoreError } from "./store.ts";

/**
 * `serve` and `database check` refuse any database whose migration head or release contract differs from the binary's
 * (DESIGN 3.5). Only `database migrate` changes schema.
 */
export function compatibilityProblem(identity: SchemaIdentity | null): string | null {
  if (identity === null) {
    return `the database has no migration head (expected ${MIGRATION_HEAD}, contract ${RELEASE_CONTRACT}); run \`service database migrate\``;
  }
  if (identity.migrationHead !== MIGRATION_HEAD || identity.releaseContract !== RELEASE_CONTRACT) {
    return (
      `the database is at migration head ${identity.migrationHead} with contract ${identity.releaseContract}, but this binary ` +
      `needs head ${MIGRATION_HEAD} with contract ${RELEASE_CONTRACT}; migrate with the matching release, or restore the ` +
      "pre-migration backup to roll back"
    );
  }
  return null;
}

export async function assertCompatible(store: Store): Promise<void> {
  const problem = compatibilityProblem(await store.schemaIdentity());
  if (problem !== null) throw new StoreError(problem.startsWith("the database has no") ? "unmigrated" : "incompatible", problem);
}
