import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { type DatabaseTarget, parseDatabaseUrl } from "../../server/config/index.ts";
import { migrateDatabase, openStore, type Store } from "../../server/store/index.ts";

/**
 * Throwaway databases for tests: a temp SQLite file, or a fresh database in the test PostgreSQL cluster that `npm test`
 * (scripts/test.sh) starts. Each test owns its database. PostgreSQL tests never skip silently: without the cluster they fail
 * and say how to get one.
 */
export type BackendName = "sqlite" | "postgresql";
export const BACKENDS: readonly BackendName[] = ["sqlite", "postgresql"];

export type TestDatabase = { readonly target: DatabaseTarget; readonly url: string; drop(): Promise<void> };

export function testPostgresUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url) throw new Error("PostgreSQL tests need TEST_POSTGRES_URL: run `npm test` (it starts a throwaway cluster), or point it at a disposable server");
  return url;
}

let counter = 0;

/** `postgresUrl`: another cluster than the suite's (a test that stops and starts its own server: pg-cluster.ts). */
export async function createTestDatabase(backend: BackendName, postgresUrl?: string): Promise<TestDatabase> {
  if (backend === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "svc-sqlite-"));
    const url = `sqlite:${join(dir, "service.db")}`;
    return { target: parseDatabaseUrl(url, false), url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const adminUrl = postgresUrl ?? testPostgresUrl();
  const name = `t_${process.pid}_${Date.now().toString(36)}_${++counter}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = adminUrl.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  return {
    target: parseDatabaseUrl(url, false),
    url,
    drop: async () => {
      const cleanup = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await cleanup.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await cleanup.end();
      }
    },
  };
}

/** A fresh database migrated to the binary's head, and a store on it: how most store tests begin. */
export async function openMigratedStore(backend: BackendName): Promise<{ database: TestDatabase; store: Store }> {
  const database = await createTestDatabase(backend);
  await migrateDatabase(database.target, 1);
  return { database, store: openStore(database.target) };
}
