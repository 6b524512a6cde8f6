-- 0001_init: the durable records of DESIGN 4 and the spec's "Durable records". Never edit once landed; add 0002_… instead.
-- Times are Unix epoch milliseconds (bigint) on both backends so that the store seam and injected clocks behave identically.

-- Which migrations ran, with the checksum of the embedded file that ran.
CREATE TABLE service_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  checksum text NOT NULL,
  applied_at_ms bigint NOT NULL
);

-- The schema identity the binary compares against: migration head and release contract (DESIGN 3.5). One row.
CREATE TABLE service_schema (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  migration_head text NOT NULL,
  release_contract text NOT NULL,
  updated_at_ms bigint NOT NULL
);

-- Retained webhook deliveries, for replay-safe deduplication; pruned after SERVICE_WEBHOOK_DELIVERY_RETENTION_DAYS.
-- head_sha and shared_generation are the head identity and generation token of a direct trigger (null otherwise).
CREATE TABLE webhook_deliveries (
  delivery_id text PRIMARY KEY,
  event text NOT NULL,
  action text,
  installation_id bigint,
  repository_id bigint,
  pull_number integer,
  head_sha text,
  shared_generation bigint,
  received_at_ms bigint NOT NULL
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (received_at_ms);

-- Per-head fences: S (shared generation) advances on every accepted trigger for the head; I (invalidated generation) catches
-- up when the managed check on that head was reset (fast path or invalidation job). A head may publish only when S = I.
CREATE TABLE head_generations (
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  head_sha text NOT NULL,
  shared_generation bigint NOT NULL DEFAULT 0,
  invalidated_generation bigint NOT NULL DEFAULT 0,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (repository_id, head_sha),
  CHECK (invalidated_generation <= shared_generation)
);
CREATE INDEX head_generations_uninvalidated ON head_generations (installation_id) WHERE invalidated_generation < shared_generation;

-- Per-pull-request fence E: superseded by every new trigger, fan-out or base push for the pull request.
CREATE TABLE pull_generations (
  installation_id bigint NOT NULL,
  repository_id bigint NOT NULL,
  pull_number integer NOT NULL,
  evaluation_generation bigint NOT NULL DEFAULT 0,
  updated_at_ms bigint NOT NULL,
  PRIMARY KEY (repository_id, pull_number)
);

-- Per-installation authority epoch A: advanced by every accepted authority event; evaluation rows remember A at enqueue.
CREATE TABLE installation_epochs (
  installation_id bigint PRIMARY KEY,
  authority_epoch bigint NOT NULL DEFAULT 0,
  updated_at_ms bigint NOT NULL
);

-- Work queue. States: pending -> leased -> (deleted when done | pending again with run_at in the future).
-- 'dead' exists only for legacy or manual rows (service_dead_jobs should be 0). Claim order is global:
-- priority (0 exact-head invalidation, 1 installation-wide, 2 repository-wide, 3 base-specific, 4 evaluation), run_at, id.
CREATE TABLE jobs (
  id bigserial PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('head_invalidation', 'installation_fanout', 'repository_fanout', 'base_ref', 'evaluation')),
  priority smallint NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'leased', 'dead')),
  installation_id bigint NOT NULL,
  repository_id bigint,
  repository_owner text,
  repository_name text,
  pull_number integer,
  head_sha text,
  base_ref text,
  shared_generation bigint,
  evaluation_generation bigint,
  authority_epoch bigint,
  attempts integer NOT NULL DEFAULT 0,
  -- Bumped whenever new work merges into this live row; a worker that claimed the row re-runs it (back to pending) instead
  -- of deleting it when the count moved while it held the lease, so work merged into a leased row is never lost.
  merges integer NOT NULL DEFAULT 0,
  run_at_ms bigint NOT NULL,
  lease_owner text,
  lease_expires_at_ms bigint,
  last_error text,
  created_at_ms bigint NOT NULL,
  updated_at_ms bigint NOT NULL,
  CHECK (priority = CASE kind WHEN 'head_invalidation' THEN 0 WHEN 'installation_fanout' THEN 1
                              WHEN 'repository_fanout' THEN 2 WHEN 'base_ref' THEN 3 ELSE 4 END),
  CHECK ((state = 'leased') = (lease_owner IS NOT NULL AND lease_expires_at_ms IS NOT NULL))
);
CREATE INDEX jobs_claim ON jobs (priority, run_at_ms, id) WHERE state = 'pending';
CREATE INDEX jobs_leased ON jobs (lease_expires_at_ms) WHERE state = 'leased';
-- At most one live row per unit of work: new triggers merge into it (the fences, not the row, carry the newest generation).
CREATE UNIQUE INDEX jobs_one_evaluation ON jobs (repository_id, pull_number) WHERE kind = 'evaluation' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_head_invalidation ON jobs (repository_id, head_sha) WHERE kind = 'head_invalidation' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_base_ref ON jobs (repository_id, base_ref) WHERE kind = 'base_ref' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_repository_fanout ON jobs (repository_id) WHERE kind = 'repository_fanout' AND state <> 'dead';
CREATE UNIQUE INDEX jobs_one_installation_fanout ON jobs (installation_id) WHERE kind = 'installation_fanout' AND state <> 'dead';

-- Named renewable leases (the reconciler election).
CREATE TABLE leases (
  name text PRIMARY KEY,
  owner text NOT NULL,
  expires_at_ms bigint NOT NULL,
  acquired_at_ms bigint NOT NULL
);

-- Audit rows for every published conclusion and every authority fan-out: identifiers and outcome only, never payloads or secrets.
CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  at_ms bigint NOT NULL,
  kind text NOT NULL,
  installation_id bigint,
  repository_id bigint,
  pull_number integer,
  head_sha text,
  outcome text NOT NULL,
  detail jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_at ON audit_events (at_ms);
