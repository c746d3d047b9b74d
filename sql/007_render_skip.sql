-- 007_render_skip.sql - honest outcomes: an unresolved unknown outcome is
-- remembered across claims, and a node that cannot render a job's request
-- (a `${ENV}` secret absent on it) stops claiming that job for a while.
--
--   triggers.outcome_unknown  an attempt of this trigger sent its request
--       and nobody knows whether it was applied (a timeout, a reset, a lost
--       lease, an `in_progress` answer), and no status query has answered
--       "not applied" (404) since.  Written by every result commit
--       (src/store/exec.c); returned by the claim.  While it is set, a spent
--       retry budget ends in `manual` with a ticket, never in `failed`.
--   attempts.status_queries   the answers of the status queries an attempt
--       made ("404", "409", "503", or a transport class such as "connect"),
--       in order: the evidence of an unknown-outcome ticket.
--   render_skips              (node, job): NODE could not render JOB's
--       request until UNTIL (ERROR names the missing variable); the claim
--       of that node passes the job over meanwhile.
--   executor_nodes            every node that runs claims, with the last
--       time it did (written by the claim at most every 2 s).  A trigger
--       that no live executor (seen in the last minute) can render goes to
--       `manual` with a ticket instead of circling between nodes.
--
-- palisade_claim() (sql/functions/) reads them: step 0 (the node's row in
-- executor_nodes, its render skips), the jobs it skips left out of both
-- candidate scans, and one more column, `unknown` (the trigger's
-- outcome_unknown), which changed its result type: the claim of 005's
-- signature is dropped here where it exists, and the function file creates
-- the current one.

ALTER TABLE triggers ADD COLUMN outcome_unknown boolean NOT NULL DEFAULT false;
ALTER TABLE attempts ADD COLUMN status_queries text[];

CREATE TABLE render_skips (
	node    text NOT NULL,
	job_id  text NOT NULL,
	until   timestamptz NOT NULL,
	error   text,
	at      timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (node, job_id)
);
CREATE INDEX render_skips_job ON render_skips (job_id);

CREATE TABLE executor_nodes (
	node     text PRIMARY KEY,
	seen_at  timestamptz NOT NULL
);

DROP FUNCTION IF EXISTS palisade_claim(text, integer, integer, integer, text[], text[], integer[],
	integer[], text[], integer[], double precision[]);
