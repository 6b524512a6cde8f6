-- 0005: as migrations/postgres/0005, in SQLite: whether a managed check was ever created for a head (issue 18 item 4).
-- SQLite cannot change a column's default, so the column is added defaulting to 1 and every row from before is set to 0.
ALTER TABLE head_generations ADD COLUMN check_untried INTEGER NOT NULL DEFAULT 1 CHECK (check_untried IN (0, 1));
UPDATE head_generations SET check_untried = 0;
INSERT INTO head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
  SELECT installation_id, repository_id, head_sha, 0, 0, updated_at_ms, 0 FROM head_checks WHERE true -- (SQLite needs a WHERE before ON CONFLICT in INSERT … SELECT)
  ON CONFLICT (repository_id, head_sha) DO NOTHING;
