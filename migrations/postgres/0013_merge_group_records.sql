-- 0013: a merge group's judgement is a record in decision_records (pull_number 0, which no pull request has; its body of
-- kind merge_group), and the merge record of a pull request merged through the queue names the newest group record that
-- verified it at its head at merge (read through merge_group_members, which hold the pull requests of a group judged success).
ALTER TABLE merge_records ADD COLUMN merge_group_id bigint;
