-- 0005: as migrations/postgres/0005, in SQLite: whether a managed check was ever created for a head (issue 18 item 4).
-- 0 (the default, and every row from before): the head may have a check; 1 only from an acceptance that makes the row.
ALTER TABLE head_generations ADD COLUMN check_untried INTEGER NOT NULL DEFAULT 0;
-- (SQLite needs the WHERE before ON CONFLICT in INSERT … SELECT.)
INSERT INTO head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
  SELECT installation_id, repository_id, head_sha, 0, 0, 0, 0 FROM (
    SELECT installation_id, repository_id, head_sha FROM head_checks
    UNION SELECT installation_id, repository_id, head_sha FROM pull_evaluations
    UNION SELECT installation_id, repository_id, head_sha FROM audit_events WHERE installation_id IS NOT NULL AND repository_id IS NOT NULL AND head_sha IS NOT NULL
    UNION SELECT installation_id, repository_id, head_sha FROM jobs WHERE repository_id IS NOT NULL AND head_sha IS NOT NULL
  ) worked WHERE true
  ON CONFLICT (repository_id, head_sha) DO NOTHING;
