-- 0013: as migrations/postgres/0013: the merge record names the merge-group record that verified it.
ALTER TABLE merge_records ADD COLUMN merge_group_id INTEGER;
