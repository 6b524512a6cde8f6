-- 0003: a work row remembers whether only background work asked for it (a reconciler scan or an authority fan-out; 1) or a
-- webhook did (0). Its forge requests then yield to webhook-driven ones (server/forge/governor.ts), and within its kind it is
-- claimed after webhook-driven rows, so a large scan never queues ahead of an approval. New work that a webhook merges into a
-- background row makes it webhook-driven (the merge keeps the lower value).
ALTER TABLE jobs ADD COLUMN background integer NOT NULL DEFAULT 0 CHECK (background IN (0, 1));
DROP INDEX jobs_claim;
CREATE INDEX jobs_claim ON jobs (priority, background, run_at_ms, id) WHERE state = 'pending';
