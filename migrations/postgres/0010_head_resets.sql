-- 0010: the last reset of a head's managed check (issue 33 item 2). A reset to in_progress is not a decision record, but it
-- withdraws the success the check showed: a merge judged by a success published before the head's last reset is an
-- unapproved merge. Written by the statements that already mark a reset (the fast path's and the invalidation's advance of
-- the invalidated generation, a fan-out's supersession, the worker's guarded in-progress write); null: never reset since
-- this migration. merge_records.reset_at_ms is that reset as the merge's judgement found it (null: none after its decision).
ALTER TABLE head_generations ADD COLUMN reset_at_ms bigint;
ALTER TABLE merge_records ADD COLUMN reset_at_ms bigint;
