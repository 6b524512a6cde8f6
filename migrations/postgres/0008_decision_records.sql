-- 0008: decision records and merge records (DESIGN 3.10, issue 28). A decision record is written for every completing check
-- write (success or failure) before the write, carrying the publication's pending token, and confirmed after it: a row whose
-- confirmed_at_ms is null says the write may not have reached the forge. A republication with the same digest on the same
-- head and shared generation writes no second row (the unique key). `body` is the record's JSON (server/records/schema.ts,
-- schema_version 1), gzip-compressed; the columns beside it are what the history routes and commands filter and sort by.
-- A merge record is written for a merged `closed` delivery (or its recovery by the reconciler) and names the decision that was
-- current for the head at merge (null: none). Both are pruned by published_at_ms / recorded_at_ms after
-- SERVICE_DECISION_RETENTION_DAYS.
CREATE TABLE decision_records (
  id bigserial PRIMARY KEY,
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  repository_full_name text NOT NULL,
  pull_number integer NOT NULL,
  head_sha text NOT NULL,
  shared_generation bigint NOT NULL,
  digest text NOT NULL,
  pending_token text,
  conclusion text NOT NULL,
  break_glass boolean NOT NULL DEFAULT false,
  published_at_ms bigint NOT NULL,
  confirmed_at_ms bigint,
  body_bytes integer NOT NULL,
  body bytea NOT NULL,
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
  id bigserial PRIMARY KEY,
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  repository_full_name text NOT NULL,
  pull_number integer NOT NULL,
  head_sha text NOT NULL,
  merge_commit_sha text,
  merged_by_id bigint,
  merged_by_login text,
  merged_at_ms bigint,
  decision_id bigint,
  decision_conclusion text,
  unapproved boolean NOT NULL,
  break_glass boolean NOT NULL DEFAULT false,
  recovered boolean NOT NULL DEFAULT false,
  recorded_at_ms bigint NOT NULL,
  UNIQUE (repository_id, pull_number, head_sha)
);
CREATE INDEX merge_records_commit ON merge_records (repository_id, merge_commit_sha);
CREATE INDEX merge_records_head ON merge_records (repository_id, head_sha);
CREATE INDEX merge_records_recorded ON merge_records (recorded_at_ms, id);
CREATE INDEX merge_records_repository_name ON merge_records (lower(repository_full_name), recorded_at_ms, id);
CREATE INDEX merge_records_head_only ON merge_records (head_sha);
CREATE INDEX merge_records_commit_only ON merge_records (merge_commit_sha);
