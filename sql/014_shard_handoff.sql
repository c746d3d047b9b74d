-- 014_shard_handoff.sql - what a draining controller hands its successor
-- (docs/controller.md, "Graceful handoff").
--
-- compatible_from: 10
--
-- A controller that stops while leading a shard writes one row for it, in
-- a statement fenced by its epoch and the shard's committed watermark: the
-- ids of the jobs that have an instant in (watermark, horizon] in its
-- planner (and of those with a version awaiting activation).  Every other
-- job of the shard has none there.  The next leader, when the shard's
-- watermark is still the row's, loads those jobs first and plans up to the
-- horizon at once, and loads the rest of the shard after its first tick;
-- until that load is done it plans nothing beyond the horizon.  A row whose
-- watermark is not the shard's (someone planned since) is ignored, and the
-- successor loads the whole shard before planning, as without a row.
CREATE TABLE shard_handoffs (
	shard_id    integer PRIMARY KEY REFERENCES shards (shard_id),
	epoch       bigint NOT NULL,      -- of the controller that wrote it
	leader      text NOT NULL,
	watermark   timestamptz NOT NULL, -- the shard's, when written
	horizon     timestamptz NOT NULL,
	job_ids     text[] NOT NULL,
	written_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
