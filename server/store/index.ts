export { MIGRATION_HEAD, MIGRATIONS, RELEASE_CONTRACT } from "./migrations.ts";
export { migrateDatabase, openStore } from "./open-store.ts";
export { PostgresStore } from "./postgres.ts";
export { assertCompatible, compatibilityProblem } from "./schema-check.ts";
export { SqliteStore } from "./sqlite.ts";
export { type MigrationReport, type SchemaIdentity, type Store, StoreError } from "./store.ts";
export { all, one, type Op, type OpOptions, run } from "./op.ts";
export * from "./ops/ingress-ops.ts";
export type { RepositoryRef } from "./ops/work-rows.ts";
