-- 0014: as migrations/postgres/0014, in SQLite: tamper evidence of the decision and merge records. record_sha256 is the SHA-256 of the record's canonical bytes
-- (server/records/tamper-evidence.ts), written by every statement that writes the record's fields, in that statement. A
-- checkpoint (history_checkpoints, written by the elected reconciler) covers the records that were final when it was
-- written (a decision once confirmed, a merge once its enrollment is settled: neither changes again) and not covered yet: each
-- covered record names its checkpoint and its leaf, its place in that checkpoint's Merkle tree. Records written before this
-- migration have no digest: the first checkpoint computes it as it covers them. settled_at_ms is when a merge's enrollment
-- was settled (null: before this migration, or not yet).
ALTER TABLE decision_records ADD COLUMN record_sha256 TEXT;
ALTER TABLE decision_records ADD COLUMN checkpoint_id INTEGER;
ALTER TABLE decision_records ADD COLUMN checkpoint_leaf INTEGER;
ALTER TABLE merge_records ADD COLUMN record_sha256 TEXT;
ALTER TABLE merge_records ADD COLUMN settled_at_ms INTEGER;
ALTER TABLE merge_records ADD COLUMN checkpoint_id INTEGER;
ALTER TABLE merge_records ADD COLUMN checkpoint_leaf INTEGER;
CREATE INDEX decision_records_checkpoint ON decision_records (checkpoint_id, checkpoint_leaf) WHERE checkpoint_id IS NOT NULL;
CREATE INDEX decision_records_uncovered ON decision_records (id) WHERE checkpoint_id IS NULL;
CREATE INDEX merge_records_checkpoint ON merge_records (checkpoint_id, checkpoint_leaf) WHERE checkpoint_id IS NOT NULL;
CREATE INDEX merge_records_uncovered ON merge_records (id) WHERE checkpoint_id IS NULL;
-- One row per checkpoint, numbered 1, 2, … by the writer; never pruned (about 53,000 a year at most). previous is the hash of
-- checkpoint id - 1 (null for the first), hash this row's own (both over the canonical bytes, tamper-evidence.ts).
CREATE TABLE history_checkpoints (
  id INTEGER PRIMARY KEY,
  created_at_ms INTEGER NOT NULL,
  record_count INTEGER NOT NULL,
  root TEXT NOT NULL,
  previous TEXT,
  hash TEXT NOT NULL
);
