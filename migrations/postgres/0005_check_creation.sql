-- 0005: whether a managed check was ever created for a head (issue 18 item 4). check_untried = 1 says the service never
-- tried to create a check on the head, so the creation under the head publication guard needs no listing of check runs
-- first. Only an acceptance that makes the head's row says 1 (server/store/ops/work-rows.ts, ingress-ops.ts); the column's
-- default, and so every row from before, says 0: a head that may have a check. Every creation sets it to 0 before its write
-- (ingress/check-memory.ts), making the row when the head has none, so a creation whose ID is lost after the write is
-- listed next time, never created twice.
-- A head the service may have created a check on without a row (a worker evaluating a pull request that no delivery
-- brought) gets a row saying 0 from every table that names heads it worked on, so a later acceptance cannot call it untried.
-- Adding a column with a constant default and no CHECK changes no existing row (no table rewrite or scan).
ALTER TABLE head_generations ADD COLUMN check_untried integer NOT NULL DEFAULT 0;
INSERT INTO head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
  SELECT installation_id, repository_id, head_sha, 0, 0, 0, 0 FROM (
    SELECT installation_id, repository_id, head_sha FROM head_checks
    UNION SELECT installation_id, repository_id, head_sha FROM pull_evaluations
    UNION SELECT installation_id, repository_id, head_sha FROM audit_events WHERE installation_id IS NOT NULL AND repository_id IS NOT NULL AND head_sha IS NOT NULL
    UNION SELECT installation_id, repository_id, head_sha FROM jobs WHERE repository_id IS NOT NULL AND head_sha IS NOT NULL
  ) worked WHERE true
  ON CONFLICT (repository_id, head_sha) DO NOTHING;
