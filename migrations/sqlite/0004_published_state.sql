-- 0004: as migrations/postgres/0004, in SQLite types: what the service last published, so that neither the reconciler
-- nor the check writer repeats work that changes nothing (issue 18). Both tables are memory, never a fence.

-- Per pull request, what its last evaluation that reached a decision saw on the forge: head and base commits and the pull
-- request's `updated_at` (null when the forge sent none), with the evaluation generation (a newer one is never overwritten
-- by an older one) and when it ran. A scan re-evaluates a pull request only when its listing differs from this row, or when
-- the row is older than the pull request's slot of the rolling full sweep (SERVICE_RECONCILE_FULL_SWEEP_HOURS).
-- authority_subjects: whom its result depends on beyond the pull request itself, one `user:<login>` or `team:<org>/<slug>`
-- per line, lower case (the owners its owner sets name and the authors of its reviews); null when unknown or over the
-- bound. A membership, collaborator or team event re-evaluates only the pull requests whose subjects it names (or null).
CREATE TABLE pull_evaluations (
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  pull_number INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  base_sha TEXT NOT NULL,
  pull_updated_at_ms INTEGER,
  evaluation_generation INTEGER NOT NULL,
  evaluated_at_ms INTEGER NOT NULL,
  authority_subjects TEXT,
  PRIMARY KEY (repository_id, pull_number)
);
CREATE INDEX pull_evaluations_evaluated ON pull_evaluations (evaluated_at_ms);
CREATE INDEX pull_evaluations_head ON pull_evaluations (repository_id, head_sha);

-- Per head, our managed check run's ID (recorded under the head publication guard when found or created) and a digest of
-- the completed status, conclusion and output last written with certainty, at the head's shared generation S then. The
-- digest is cleared by every reset and replaced by a pending token before every completing write; a write that changes
-- nothing (same digest, same S) is not sent.
CREATE TABLE head_checks (
  installation_id INTEGER NOT NULL,
  repository_id INTEGER NOT NULL,
  head_sha TEXT NOT NULL,
  check_run_id INTEGER NOT NULL,
  digest TEXT,
  digest_generation INTEGER,
  updated_at_ms INTEGER NOT NULL,
  PRIMARY KEY (repository_id, head_sha)
);
CREATE INDEX head_checks_updated ON head_checks (updated_at_ms);

-- An authority fan-out row scoped to the subjects its event names (same format; null: every open pull request, as before).
-- Work merged into a row unites the subjects; a wide row stays wide (server/store/ops/work-rows.ts).
ALTER TABLE jobs ADD COLUMN authority_subjects TEXT;
