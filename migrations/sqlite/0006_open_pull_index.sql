-- 0006: as migrations/postgres/0006, in SQLite: the open-pull-request index (DESIGN 3.9, issue 26 item 1).
CREATE TABLE open_pull_requests (
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  base_ref TEXT,
  seen_at_ms INTEGER NOT NULL,
  listing_id TEXT,
  PRIMARY KEY (repository_id, pull_number)
);
CREATE INDEX open_pull_requests_head ON open_pull_requests (repository_id, head_sha, pull_number);
CREATE INDEX open_pull_requests_seen ON open_pull_requests (seen_at_ms);
