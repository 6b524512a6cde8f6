-- 0007: as migrations/postgres/0007, in SQLite: the open-pull-request index by base ref (DESIGN 3.9, issue 26 item 3).
CREATE INDEX open_pull_requests_base ON open_pull_requests (repository_id, base_ref, pull_number, head_sha);
