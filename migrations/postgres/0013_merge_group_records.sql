-- 0013: a merge group's judgement is a record in decision_records (pull_number 0, which no pull request has; its body of
-- kind merge_group). merge_group_verified names, for a group record of success, each pull request and head it verified,
-- kept as long as that record (the group's own members are deleted when the group leaves the queue); a merge record names
-- the newest of them for its pull request and head at merge (merge_group_id), whichever of the two was written first.
CREATE TABLE merge_group_verified (
  repository_id bigint NOT NULL,
  pull_number integer NOT NULL,
  head_sha text NOT NULL,
  record_id bigint NOT NULL,
  PRIMARY KEY (repository_id, pull_number, head_sha, record_id)
);
CREATE INDEX merge_group_verified_record ON merge_group_verified (record_id);
ALTER TABLE merge_records ADD COLUMN merge_group_id bigint;
