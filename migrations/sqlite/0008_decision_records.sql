-- 0008: as migrations/postgres/0008, in SQLite: decision records and merge records (DESIGN 3.10, issue 28).
CREATE TABLE decision_records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  repository_full_name TEXT NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  shared_generation INTEGER NOT NULL,
  digest TEXT NOT NULL,
  pending_token TEXT,
  conclusion TEXT NOT NULL,
  break_glass INTEGER NOT NULL DEFAULT 0,
  published_at_ms INTEGER NOT NULL,
  confirmed_at_ms INTEGER,
  body_bytes INTEGER NOT NULL,
  body BLOB NOT NULL,
  UNIQUE (repository_id, head_sha, shared_generation, digest)
);
CREATE INDEX decision_records_pull ON decision_records (repository_id, pull_number, id);
CREATE INDEX decision_records_head ON decision_records (repository_id, head_sha, id);
CREATE INDEX decision_records_published ON decision_records (published_at_ms, id);
-- The history's searches (server/store/ops/history-ops.ts) by name ignore letter case, as the forge does, and page by time.
CREATE INDEX decision_records_repository_name ON decision_records (lower(repository_full_name), published_at_ms, id);
CREATE INDEX decision_records_name_pull ON decision_records (lower(repository_full_name), pull_number, published_at_ms, id);
CREATE INDEX decision_records_head_only ON decision_records (head_sha, published_at_ms, id);

CREATE TABLE merge_records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  repository_full_name TEXT NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  merge_commit_sha TEXT,
  merged_by_id INTEGER,
  merged_by_login TEXT,
  merged_at_ms INTEGER,
  decision_id INTEGER,
  decision_conclusion TEXT,
  unapproved INTEGER NOT NULL,
  break_glass INTEGER NOT NULL DEFAULT 0,
  recovered INTEGER NOT NULL DEFAULT 0,
  recorded_at_ms INTEGER NOT NULL,
  UNIQUE (repository_id, pull_number, head_sha)
);
CREATE INDEX merge_records_commit ON merge_records (repository_id, merge_commit_sha);
CREATE INDEX merge_records_head ON merge_records (repository_id, head_sha);
CREATE INDEX merge_records_recorded ON merge_records (recorded_at_ms, id);
CREATE INDEX merge_records_repository_name ON merge_records (lower(repository_full_name), recorded_at_ms, id);
CREATE INDEX merge_records_head_only ON merge_records (head_sha);
CREATE INDEX merge_records_commit_only ON merge_records (merge_commit_sha);
