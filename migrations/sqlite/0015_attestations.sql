-- 0015: signed attestations. A checkpoint written while a signing key is configured keeps its DSSE envelope (JSON text);
-- an approved merge, once a checkpoint covers it, gets an in-toto statement in a DSSE envelope, written by the elected
-- reconciler (never on the publication path) and kept as long as its merge record (pruned with it).
ALTER TABLE history_checkpoints ADD COLUMN envelope text;
CREATE TABLE merge_attestations (
  merge_id bigint PRIMARY KEY,
  key_id text NOT NULL,
  envelope text NOT NULL,
  created_at_ms bigint NOT NULL
);
