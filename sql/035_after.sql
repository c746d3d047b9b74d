-- 035_after.sql - dependencies between jobs: a job with `after:` runs at
-- its upstreams' instants once they reached the state it names
-- (docs/jobs.md, "after"; docs/controller.md, "Dependencies").
--
-- compatible_from: 1
--
-- Expand only.  Older binaries never read or write any of it:
--   after_watermarks  per dependent job, the latest instant up to which
--                     every instant of its upstreams is decided (a trigger
--                     or a misfire row); moved only by the fenced
--                     controller of the job's shard, in the transaction
--                     that writes those rows (palisade_plan_after)
--   misfires.upstream_job, misfires.upstream_trigger
--                     for the reasons upstream_failed and upstream_late:
--                     the upstream that failed or was late, and its
--                     trigger when it has one.  Nullable, no default: no
--                     rewrite, and older binaries go on inserting rows.
--   job_versions_after  the versions with `after:` (a partial index, a
--                     handful of rows), so finding a shard's dependent
--                     jobs never reads the others.
-- misfires.reason has no CHECK to widen: the two reasons need no step.
CREATE TABLE after_watermarks (
	job_id      text PRIMARY KEY,
	watermark   timestamptz NOT NULL,
	shard       integer NOT NULL,
	epoch       bigint NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE misfires ADD COLUMN IF NOT EXISTS upstream_job text,
	ADD COLUMN IF NOT EXISTS upstream_trigger bigint;
CREATE INDEX job_versions_after ON job_versions (job_id, version) WHERE spec ? 'after';
