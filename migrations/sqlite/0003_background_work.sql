-- 0003: as migrations/postgres/0003: a work row remembers whether only background work asked for it (a reconciler scan or an
-- authority fan-out; 1) or a webhook did (0); within its kind it is claimed after webhook-driven rows.
ALTER TABLE jobs ADD COLUMN background INTEGER NOT NULL DEFAULT 0 CHECK (background IN (0, 1));
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs (priority, background, run_at_ms, id) WHERE state = 'pending';
