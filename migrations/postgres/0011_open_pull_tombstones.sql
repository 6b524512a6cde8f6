-- 0011: a `closed` delivery leaves a tombstone in the open-pull-request index instead of deleting the row (DESIGN 3.12, issue
-- 33 item 5). A reconciler listing streams its pages; a page fetched before a pull request closed, written after the
-- closing's delete, used to insert the row again, and the closed pull request then counted as a sharer of its head until the
-- next listing. The tombstone (closed = true, listing_id null, seen_at_ms the closing's time) is a row a delivery wrote after
-- that listing started, which its pages neither overwrite nor its completion deletes (the rule of 0006); the primary key makes
-- a page and a closing that race meet on the same row. A later listing (started after the closing) overwrites or removes it
-- as it does any row, and pruning by seen_hour removes old ones. Readers never see tombstones: the indexes by head and by
-- base hold only open rows (partial), so lookups stay index-only and every read adds `closed = false`. A closing or
-- reopening changes `closed` and so is not a heap-only update; the rewrites of an unchanged open row still are (0009).
ALTER TABLE open_pull_requests ADD COLUMN closed boolean NOT NULL DEFAULT false;
DROP INDEX open_pull_requests_head;
CREATE INDEX open_pull_requests_head ON open_pull_requests (repository_id, head_sha, pull_number) WHERE closed = false;
DROP INDEX open_pull_requests_base;
CREATE INDEX open_pull_requests_base ON open_pull_requests (repository_id, base_ref, pull_number, head_sha) WHERE closed = false;
