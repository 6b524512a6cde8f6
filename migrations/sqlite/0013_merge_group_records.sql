-- 0013: as migrations/postgres/0013: merge-group records, the pull requests each verified, and the merge record's link.
CREATE TABLE merge_group_verified (
  repository_id INTEGER NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  record_id INTEGER NOT NULL,
  PRIMARY KEY (repository_id, pull_number, head_sha, record_id)
);
CREATE INDEX merge_group_verified_record ON merge_group_verified (record_id);
ALTER TABLE merge_records ADD COLUMN merge_group_id INTEGER;
