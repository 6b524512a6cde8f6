-- 0007: base-ref work reads the open-pull-request index by base ref (DESIGN 3.9, issue 26 item 3): a push to a branch
-- re-queues the index's pull requests on that base, page by page in number order, without reading the repository's other
-- rows. The index covers that order (repository, base ref, number) and carries the head the work queues.
CREATE INDEX open_pull_requests_base ON open_pull_requests (repository_id, base_ref, pull_number, head_sha);
