-- 0012: as migrations/postgres/0012, in SQLite: merge groups of the forge's merge queue. SQLite cannot change a column's
-- CHECK in place, so the work table is rebuilt with the 'merge_group' kind (same columns, constraints, indexes and
-- id sequence; no table refers to it).
CREATE TABLE jobs_0012 (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('head_invalidation', 'installation_fanout', 'repository_fanout', 'base_ref', 'evaluation', 'merge_group')),
  priority INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'dead')),
  installation_id INTEGER NOT NULL,
  repository_id INTEGER,
  repository_owner TEXT,
  repository_name TEXT,
  pull_number INTEGER,
  head_sha TEXT,
  base_ref TEXT,
  shared_generation INTEGER,
  evaluation_generation INTEGER,
  authority_epoch INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  merges INTEGER NOT NULL DEFAULT 0,
  run_at_ms INTEGER NOT NULL,
  lease_owner TEXT,
  lease_expires_at_ms INTEGER,
  last_error TEXT,
  created_at_ms INTEGER NOT NULL,
  updated_at_ms INTEGER NOT NULL,
  background INTEGER NOT NULL DEFAULT 0 CHECK (background IN (0, 1)),
  authority_subjects TEXT,
  CHECK (priority = CASE kind WHEN 'head_invalidation' THEN 0 WHEN 'installation_fanout' THEN 1
                              WHEN 'repository_fanout' THEN 2 WHEN 'base_ref' THEN 3 ELSE 4 END),
  CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at_ms IS NOT NULL))
);
INSERT INTO jobs_0012 (id, kind, priority, state, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha,
    base_ref, shared_generation, evaluation_generation, authority_epoch, attempts, merges, run_at_ms, lease_owner, lease_expires_at_ms,
    last_error, created_at_ms, updated_at_ms, background, authority_subjects)
  SELECT id, kind, priority, state, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha,
    base_ref, shared_generation, evaluation_generation, authority_epoch, attempts, merges, run_at_ms, lease_owner, lease_expires_at_ms,
    last_error, created_at_ms, updated_at_ms, background, authority_subjects FROM jobs;
-- The id sequence goes on where it was (an id is never handed out twice).
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_0012', seq FROM sqlite_sequence WHERE name = 'jobs'
  AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'jobs_0012');
UPDATE sqlite_sequence SET seq = (SELECT max(seq) FROM sqlite_sequence WHERE name IN ('jobs', 'jobs_0012')) WHERE name = 'jobs_0012';
DROP TABLE jobs;
ALTER TABLE jobs_0012 RENAME TO jobs;
CREATE INDEX jobs_claim ON jobs (priority, background, run_at_ms, id) WHERE state = 'pending';
CREATE INDEX jobs_leased ON jobs (lease_expires_at_ms) WHERE state = 'leased';
CREATE UNIQUE INDEX jobs_one_evaluation ON jobs (repository_id, pull_number) WHERE kind = 'evaluation' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_head_invalidation ON jobs (repository_id, head_sha) WHERE kind = 'head_invalidation' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_base_ref ON jobs (repository_id, base_ref) WHERE kind = 'base_ref' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_repository_fanout ON jobs (repository_id) WHERE kind = 'repository_fanout' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_installation_fanout ON jobs (installation_id) WHERE kind = 'installation_fanout' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_merge_group ON jobs (repository_id, head_sha) WHERE kind = 'merge_group' AND state <> 'dead';

CREATE TABLE merge_groups (
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  head_ref TEXT NOT NULL,
  base_ref TEXT NOT NULL,
  base_sha TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'destroyed')),
  destroyed_reason TEXT,
  requested_at_ms INTEGER NOT NULL,
  judged_at_ms INTEGER,
  judged_success INTEGER NOT NULL DEFAULT 0 CHECK (judged_success IN (0, 1)),
  reset_pending INTEGER NOT NULL DEFAULT 0 CHECK (reset_pending IN (0, 1)),
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (repository_id, head_sha)
);
CREATE INDEX merge_groups_updated ON merge_groups (updated_at_ms);

CREATE TABLE merge_group_members (
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  group_head_sha TEXT NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  PRIMARY KEY (repository_id, group_head_sha, pull_number)
);
CREATE INDEX merge_group_members_pull ON merge_group_members (repository_id, pull_number);
