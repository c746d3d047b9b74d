-- 042_notify_parts.sql - the parts of a job whose notified failure has not
-- been followed by a success (docs/jobs.md, "notify"; docs/protocol.md,
-- "Notifications").
--
-- compatible_from: 10
--
-- Expand only: one new table, read and written by palisade_notify_result()
-- (sql/functions/), the one function every release's result commit calls,
-- so that `recovered` is sent once every partition that failed has
-- succeeded since, not at the first success of any partition.  A job
-- marked in notify_state with no row here (marked before this step) is
-- judged as before: its next success sends `recovered`.

-- notify_parts: per job and partition, the latest instant (scheduled_at)
-- whose failed or manual result was notified while the job is marked in
-- notify_state.  A succeeded result of that partition at or after it
-- deletes the row; `recovered` is sent when the job has none left.
CREATE TABLE notify_parts (
	job_id        text NOT NULL,
	partition     integer NOT NULL,
	failed_at     timestamptz NOT NULL,   -- the failed instant's scheduled_at
	PRIMARY KEY (job_id, partition)
);
