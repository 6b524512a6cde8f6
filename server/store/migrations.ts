import { StoreError } from "./store.ts";
import pg0001 from "../../migrations/postgres/0001_init.sql" with { type: "text" };
import lite0001 from "../../migrations/sqlite/0001_init.sql" with { type: "text" };
import pg0002 from "../../migrations/postgres/0002_hot_head_fences.sql" with { type: "text" };
import lite0002 from "../../migrations/sqlite/0002_hot_head_fences.sql" with { type: "text" };

/**
 * The embedded migrations, in order. Files are never edited once landed: the runner stores each file's checksum and refuses
 * a database whose applied migration differs from the embedded one. A new migration is a new numbered file in both folders,
 * added here, and moves MIGRATION_HEAD.
 */
export type Migration = { readonly version: number; readonly name: string; readonly postgres: string; readonly sqlite: string };

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "0001_init", postgres: pg0001, sqlite: lite0001 },
  { version: 2, name: "0002_hot_head_fences", postgres: pg0002, sqlite: lite0002 },
];

export const MIGRATION_HEAD = MIGRATIONS[MIGRATIONS.length - 1]!.name;

/**
 * The release contract: what this binary expects of the data beyond its shape (queue semantics, fence meanings). Bumped when a
 * release changes those meanings, even without a schema change; recorded by `database migrate`.
 */
export const RELEASE_CONTRACT = "codeowner-approval-store/1";

export function assertNoUnknownMigrations(applied: Iterable<number>): void {
  const known = new Set(MIGRATIONS.map((m) => m.version));
  for (const version of applied) {
    if (!known.has(version)) {
      throw new StoreError("incompatible", "the database has migrations newer than this binary; use the release that migrated it");
    }
  }
}

export function checksum(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
