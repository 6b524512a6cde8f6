-- 0009: the open-pull-request index's rows are rewritten in place (issue 26 item 8). Every pull_request delivery and every
-- reconciler listing that sees a pull request moves its seen_at_ms on; with seen_at_ms in an index, none of those rewrites
-- could be heap-only (HOT), so each wrote a new entry in all four indexes of the table, though head and base had not
-- changed (the webhook hot path's costliest write). Pruning, the only reader by age, now reads the hour a row was last seen
-- (a stored generated column, which changes once an hour at most) and checks seen_at_ms itself on the rows it finds, so an
-- unchanged pull request's row is rewritten without touching an index. Half-filled pages (as head_generations' in 0002)
-- leave room for a listing page's rewrite of every row of a page in one transaction, which HOT needs on the same page.
-- (Adding a stored generated column rewrites the table once, under its exclusive lock.)
ALTER TABLE open_pull_requests ADD COLUMN seen_hour bigint GENERATED ALWAYS AS (seen_at_ms / 3600000) STORED;
DROP INDEX open_pull_requests_seen;
CREATE INDEX open_pull_requests_seen_hour ON open_pull_requests (seen_hour);
ALTER TABLE open_pull_requests SET (fillfactor = 50);
