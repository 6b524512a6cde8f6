-- 0006: the open-pull-request index (DESIGN 3.9, issue 26 item 1): per repository, each open pull request's number, head
-- commit and base ref, and when the service last saw it. Written in the acceptance of every pull_request delivery (opened,
-- reopened, synchronize, edited: upsert with listing_id null; closed: delete) and replaced by every complete reconciler
-- listing (each page upserts with the listing's ID; completion deletes the rows that listing did not see, except those a
-- delivery wrote after it started). A source of sharers of a head, never of absence. base_ref is null when the listing's
-- item named none. Rows not seen for the reconciler's retention are pruned (a repository no longer listed).
CREATE TABLE open_pull_requests (
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  pull_number integer NOT NULL,
  head_sha text NOT NULL,
  base_ref text,
  seen_at_ms bigint NOT NULL,
  listing_id text,
  PRIMARY KEY (repository_id, pull_number)
);
CREATE INDEX open_pull_requests_head ON open_pull_requests (repository_id, head_sha, pull_number);
CREATE INDEX open_pull_requests_seen ON open_pull_requests (seen_at_ms);
