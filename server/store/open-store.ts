import type { DatabaseTarget } from "../config/index.ts";
import { PostgresStore, type StoreOptions } from "./postgres.ts";
import { SqliteStore } from "./sqlite.ts";
import type { MigrationReport, Store } from "./store.ts";

/** Opens the configured backend for use; never creates or changes schema (the sqlite file must already exist). */
export function openStore(target: DatabaseTarget, options: StoreOptions = {}): Store {
  return target.backend === "sqlite" ? SqliteStore.open(target.path, { create: false }) : PostgresStore.open(target, options);
}

/** `database migrate`: the only path that creates or changes schema. */
export async function migrateDatabase(target: DatabaseTarget, now: number): Promise<MigrationReport> {
  if (target.backend === "sqlite") {
    const store = SqliteStore.open(target.path, { create: true });
    try {
      return store.migrate(now);
    } finally {
      await store.close();
    }
  }
  const store = PostgresStore.open(target, { max: 1 });
  try {
    return await store.migrate(now);
  } finally {
    await store.close();
  }
}
