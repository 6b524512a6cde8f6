-- 0002: the per-head fence row is the most updated row of the service (S on every accepted trigger, I after every fast
-- path). The partial index on "I < S" made each of those updates write new index entries (an indexed column changed), so
-- they could never be heap-only (HOT). It only served the invalidation-depth gauge, which now counts live exact-head
-- invalidation rows (their partial unique index). Half-filled pages leave room for HOT updates of fence rows.
DROP INDEX head_generations_uninvalidated;
ALTER TABLE head_generations SET (fillfactor = 50);
