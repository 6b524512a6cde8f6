-- 0010: the last reset of a head's managed check (issue 33 item 2). A reset to in_progress is not a decision record, but it
-- withdraws the success the check showed: a merge judged by a success published before the head's last reset is an
-- unapproved merge. Written by the statements that already mark a reset (the fast path's and the invalidation's advance of
-- the invalidated generation, a fan-out's supersession, the worker's guarded in-progress write); null: never reset since
-- this migration. merge_records.reset_at_ms is that reset as the merge's judgement found it (null: none after its decision).
ALTER TABLE head_generations ADD COLUMN reset_at_ms bigint;
ALTER TABLE merge_records ADD COLUMN reset_at_ms bigint;
-- Enrollment (issue 33 item 3): a merge in a repository whose policy at the merge's base commit does not enable the service
-- is `not_enrolled`, never unapproved. The acceptance cannot read the policy (no forge request there), so a merge is recorded
-- with enrollment null (not read yet) and its base commit; the worker or the reconciler reads the policy at that commit and
-- settles it (and only then counts an unapproved merge). Merges recorded before this migration were judged and counted
-- without it: they stay as they were ('enrolled').
ALTER TABLE merge_records ADD COLUMN base_sha text;
ALTER TABLE merge_records ADD COLUMN enrollment text;
UPDATE merge_records SET enrollment = 'enrolled';
CREATE INDEX merge_records_enrollment_pending ON merge_records (repository_id, pull_number) WHERE enrollment IS NULL;
