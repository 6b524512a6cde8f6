-- 0011: as migrations/postgres/0011: a `closed` delivery leaves a tombstone in the open-pull-request index, which a listing
-- page fetched before it cannot overwrite; the indexes by head and by base hold only open rows (the same predicate text as
-- the queries, so SQLite uses them, still covering).
ALTER TABLE open_pull_requests ADD COLUMN closed INTEGER NOT NULL DEFAULT false;
DROP INDEX open_pull_requests_head;
CREATE INDEX open_pull_requests_head ON open_pull_requests (repository_id, head_sha, pull_number) WHERE closed = false;
DROP INDEX open_pull_requests_base;
CREATE INDEX open_pull_requests_base ON open_pull_requests (repository_id, base_ref, pull_number, head_sha) WHERE closed = false;
