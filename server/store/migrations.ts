import { StoreError } from "./store.ts";
import pg0001 from "../../migrations/postgres/0001_init.sql" with { type: "text" };
import lite0001 from "../../migrations/sqlite/0001_init.sql" with { type: "text" };
import pg0002 from "../../migrations/postgres/0002_hot_head_fences.sql" with { type: "text" };
import lite0002 from "../../migrations/sqlite/0002_hot_head_fences.sql" with { type: "text" };
import pg0003 from "../../migrations/postgres/0003_background_work.sql" with { type: "text" };
import lite0003 from "../../migrations/sqlite/0003_background_work.sql" with { type: "text" };
import pg0004 from "../../migrations/postgres/0004_published_state.sql" with { type: "text" };
import lite0004 from "../../migrations/sqlite/0004_published_state.sql" with { type: "text" };
import pg0005 from "../../migrations/postgres/0005_check_creation.sql" with { type: "text" };
import lite0005 from "../../migrations/sqlite/0005_check_creation.sql" with { type: "text" };
import pg0006 from "../../migrations/postgres/0006_open_pull_index.sql" with { type: "text" };
import lite0006 from "../../migrations/sqlite/0006_open_pull_index.sql" with { type: "text" };
import pg0007 from "../../migrations/postgres/0007_open_pull_base.sql" with { type: "text" };
import lite0007 from "../../migrations/sqlite/0007_open_pull_base.sql" with { type: "text" };
import pg0008 from "../../migrations/postgres/0008_decision_records.sql" with { type: "text" };
import lite0008 from "../../migrations/sqlite/0008_decision_records.sql" with { type: "text" };
import pg0009 from "../../migrations/postgres/0009_open_pull_seen_hour.sql" with { type: "text" };
import lite0009 from "../../migrations/sqlite/0009_open_pull_seen_hour.sql" with { type: "text" };
import pg0010 from "../../migrations/postgres/0010_resets_and_enrollment.sql" with { type: "text" };
import lite0010 from "../../migrations/sqlite/0010_resets_and_enrollment.sql" with { type: "text" };
import pg0011 from "../../migrations/postgres/0011_open_pull_tombstones.sql" with { type: "text" };
import lite0011 from "../../migrations/sqlite/0011_open_pull_tombstones.sql" with { type: "text" };
import pg0012 from "../../migrations/postgres/0012_merge_groups.sql" with { type: "text" };
import lite0012 from "../../migrations/sqlite/0012_merge_groups.sql" with { type: "text" };
import pg0013 from "../../migrations/postgres/0013_merge_group_records.sql" with { type: "text" };
import lite0013 from "../../migrations/sqlite/0013_merge_group_records.sql" with { type: "text" };
import pg0014 from "../../migrations/postgres/0014_record_digests.sql" with { type: "text" };
import lite0014 from "../../migrations/sqlite/0014_record_digests.sql" with { type: "text" };
import pg0015 from "../../migrations/postgres/0015_attestations.sql" with { type: "text" };
import lite0015 from "../../migrations/sqlite/0015_attestations.sql" with { type: "text" };

/**
 * The embedded migrations, in order. Files are never edited once landed: the runner stores each file's checksum and refuses
 * a database whose applied migration differs from the embedded one. A new migration is a new numbered file in both folders,
 * added here, and moves MIGRATION_HEAD.
 */
export type Migration = { readonly version: number; readonly name: string; readonly postgres: string; readonly sqlite: string };

export const MIGRATIONS: readonly Migration[] = [
  { version: 1, name: "0001_init", postgres: pg0001, sqlite: lite0001 },
  { version: 2, name: "0002_hot_head_fences", postgres: pg0002, sqlite: lite0002 },
  { version: 3, name: "0003_background_work", postgres: pg0003, sqlite: lite0003 },
  { version: 4, name: "0004_published_state", postgres: pg0004, sqlite: lite0004 },
  { version: 5, name: "0005_check_creation", postgres: pg0005, sqlite: lite0005 },
  { version: 6, name: "0006_open_pull_index", postgres: pg0006, sqlite: lite0006 },
  { version: 7, name: "0007_open_pull_base", postgres: pg0007, sqlite: lite0007 },
  { version: 8, name: "0008_decision_records", postgres: pg0008, sqlite: lite0008 },
  { version: 9, name: "0009_open_pull_seen_hour", postgres: pg0009, sqlite: lite0009 },
  { version: 10, name: "0010_resets_and_enrollment", postgres: pg0010, sqlite: lite0010 },
  { version: 11, name: "0011_open_pull_tombstones", postgres: pg0011, sqlite: lite0011 },
  { version: 12, name: "0012_merge_groups", postgres: pg0012, sqlite: lite0012 },
  { version: 13, name: "0013_merge_group_records", postgres: pg0013, sqlite: lite0013 },
  { version: 14, name: "0014_record_digests", postgres: pg0014, sqlite: lite0014 },
  { version: 15, name: "0015_attestations", postgres: pg0015, sqlite: lite0015 },
];

export const MIGRATION_HEAD = MIGRATIONS[MIGRATIONS.length - 1]!.name;

/**
 * The release contract: what this binary expects of the data beyond its shape (queue semantics, fence meanings). Bumped when a
 * release changes those meanings, even without a schema change; recorded by `database migrate`.
 */
export const RELEASE_CONTRACT = "codeowner-approval-store/1";

/**
 * The embedded migrations a database still needs, in order, with the checksum of the file each will record. `applied` maps
 * the versions the database ran to their recorded checksums; a version this binary does not know, or an applied migration
 * whose file changed, is refused.
 */
export function pendingMigrations(applied: ReadonlyMap<number, string>, dialect: "postgres" | "sqlite"): { migration: Migration; sum: string }[] {
  const known = new Set(MIGRATIONS.map((m) => m.version));
  for (const version of applied.keys()) {
    if (!known.has(version)) {
      throw new StoreError("incompatible", "the database has migrations newer than this binary; use the release that migrated it");
    }
  }
  const pending: { migration: Migration; sum: string }[] = [];
  for (const migration of MIGRATIONS) {
    const sum = checksum(migration[dialect]);
    const recorded = applied.get(migration.version);
    if (recorded === undefined) pending.push({ migration, sum });
    else if (recorded !== sum) throw new StoreError("incompatible", `migration ${migration.name} was applied from a different file; restore a backup made by this release`);
  }
  return pending;
}

export function checksum(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}
