-- 0009: as migrations/postgres/0009: pruning reads the hour an open-pull-request index row was last seen, so the index by
-- seen_at_ms goes (the same schema and statements on both backends; SQLite computes the column when it is read).
ALTER TABLE open_pull_requests ADD COLUMN seen_hour INTEGER GENERATED ALWAYS AS (seen_at_ms / 3600000) VIRTUAL;
DROP INDEX open_pull_requests_seen;
CREATE INDEX open_pull_requests_seen_hour ON open_pull_requests (seen_hour);
