-- 008_quarantine.sql - jobs taken out of planning because their planning
-- failed (a refused insert, a schedule that no longer opens).
--
-- One row per quarantined job.  While the row exists the shard's leader
-- plans nothing for the job and records each of its instants as a misfire
-- with reason 'quarantined' (when its schedule still opens); the rest of
-- the shard is planned as usual.  `palisade release JOB` deletes the row,
-- resolves its ticket and writes an audit_log row (action job.release).
--
--   version    the job's active (else latest) version when it was quarantined
--   since      its first instant not planned (the shard watermark of the
--              failed tick), or the time of a failed load
--   error      the server's or the loader's message
--   ticket_id  the open ticket (allowed action: release)
CREATE TABLE quarantine (
	job_id      text PRIMARY KEY REFERENCES jobs (job_id),
	version     integer NOT NULL,
	shard       integer NOT NULL,
	epoch       bigint NOT NULL,
	since       timestamptz NOT NULL,
	error       text NOT NULL,
	ticket_id   bigint REFERENCES tickets (id),
	created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quarantine_shard ON quarantine (shard);
