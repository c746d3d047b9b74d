-- sql/sink/003_retention.sql - what the sink's key retention reads
-- (src/sink/retention.c, docs/sink.md "Key retention").
--
-- A key is forgotten once its last request (sink_fences.updated_at: every
-- apply, replay or stale request moves it) and its effect
-- (sink_effects.updated_at) are both older than --key-retention: its fence,
-- its effect and its ledger rows go together.  These indexes find the
-- oldest keys without scanning the tables.
CREATE INDEX sink_fences_updated_at ON sink_fences (updated_at);
CREATE INDEX sink_effects_updated_at ON sink_effects (updated_at);
