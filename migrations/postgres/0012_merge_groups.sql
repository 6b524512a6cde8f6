-- 0012: merge groups of the forge's merge queue. A `merge_group` `checks_requested` delivery records its group here and queues
-- one `merge_group` work row keyed by repository and the group's head commit; `destroyed` marks the group and cancels that
-- row. The group's head is fenced like a pull request's head (head_generations S and I).

-- Work rows of kind 'merge_group' (priority 4: claimed among the evaluations, in arrival order).
ALTER TABLE jobs DROP CONSTRAINT jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check
  CHECK (kind IN ('head_invalidation', 'installation_fanout', 'repository_fanout', 'base_ref', 'evaluation', 'merge_group'));
CREATE UNIQUE INDEX jobs_one_merge_group ON jobs (repository_id, head_sha) WHERE kind = 'merge_group' AND state <> 'dead';

-- One row per group head. base_ref is the branch name (without refs/heads/), base_sha the group's parent commit; state
-- 'destroyed' once the forge said so (destroyed_reason: merged, invalidated, dequeued; null when the delivery named none).
CREATE TABLE merge_groups (
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  head_sha text NOT NULL,
  head_ref text NOT NULL,
  base_ref text NOT NULL,
  base_sha text NOT NULL,
  state text NOT NULL CHECK (state IN ('queued', 'destroyed')),
  destroyed_reason text,
  requested_at_ms bigint NOT NULL,
  -- When the group's check was last completed (null: never), whether as success, and whether a reset of one of its pull
  -- requests asks for its check to go back to in_progress before it is judged again.
  judged_at_ms bigint,
  judged_success boolean NOT NULL DEFAULT false,
  reset_pending boolean NOT NULL DEFAULT false,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (repository_id, head_sha)
);
CREATE INDEX merge_groups_updated ON merge_groups (updated_at_ms);

-- The pull requests (and their heads) of a group whose check was completed as success: a reset of one of them, or a new head,
-- before the group merges sends the group back to in_progress and queues its judgement again.
CREATE TABLE merge_group_members (
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  group_head_sha text NOT NULL,
  pull_number integer NOT NULL,
  head_sha text NOT NULL,
  PRIMARY KEY (repository_id, group_head_sha, pull_number)
);
CREATE INDEX merge_group_members_pull ON merge_group_members (repository_id, pull_number);
