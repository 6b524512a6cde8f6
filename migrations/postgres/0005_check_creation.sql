-- 0005: whether a managed check was ever created for a head (issue 18 item 4). A head row made by an acceptance starts with
-- check_untried = 1: the service never created a check on it, so the creation under the head publication guard needs no
-- listing of check runs first. Every creation sets it to 0 before its write (ingress/check-memory.ts), making the row when
-- the head has none, so a creation that did not finish (a crash between the write and its record) is listed next time.
-- Rows from before this migration say 0 (their heads may have checks); only rows made from now on default to 1.
-- Heads that have a remembered check but no row get one saying 0, so a later acceptance cannot call them untried.
ALTER TABLE head_generations ADD COLUMN check_untried integer NOT NULL DEFAULT 0 CHECK (check_untried IN (0, 1));
ALTER TABLE head_generations ALTER COLUMN check_untried SET DEFAULT 1;
INSERT INTO head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
  SELECT installation_id, repository_id, head_sha, 0, 0, updated_at_ms, 0 FROM head_checks WHERE true
  ON CONFLICT (repository_id, head_sha) DO NOTHING;
