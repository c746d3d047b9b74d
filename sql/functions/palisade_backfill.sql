-- palisade_backfill(batch): one batch of the data backfills of
-- palisade_backfills (041), in the caller's transaction: the first step
-- not finished (by ord) fills at most BATCH rows from its cursor on and
-- moves the cursor past them.  Each call is meant to be a transaction of
-- its own (autocommit): row locks on at most BATCH rows, for milliseconds;
-- a lock it cannot take within 200 ms fails the batch (lock_timeout,
-- 55P03), which the caller tries again later, so it never holds up a claim
-- or an apply for long.  One batch runs at a time in the cluster (advisory
-- lock 7076/41; a second caller fills nothing and gets busy = true).
--
--   jobs.ref          BATCH jobs by primary key after the cursor; those
--                     without a ref get the next value of jobs_ref_seq.
--   triggers.job_ref  BATCH triggers by id after the cursor (the primary
--                     key of each partition); those without a job_ref get
--                     their job's ref.
--
-- A step whose walk reaches the end checks its whole table once for a row
-- still without its value (one written meanwhile by a transaction that
-- read the job before its ref was given): it starts again at the first
-- such row, else it is finished (finished = true in that call).  A trigger
-- row whose job does not exist (nothing deletes a job; a hand-made row)
-- cannot get a ref and is not waited for.  The check is one read of the
-- table, without locks beyond the batch's.  Returns
-- the step worked on (NULL when none is left: done = true), the rows it
-- filled and its cursor after the batch.
CREATE OR REPLACE FUNCTION palisade_backfill(p_batch integer)
 RETURNS TABLE(step text, filled bigint, cursor text, finished boolean, done boolean, busy boolean)
 LANGUAGE plpgsql
 SET lock_timeout TO '200ms'
AS $function$
DECLARE
	b palisade_backfills%ROWTYPE;
	v_n bigint := 0;
	v_seen integer := 0;
	v_last text;
	v_left text;
BEGIN
	IF p_batch < 1 THEN
		RAISE EXCEPTION 'palisade_backfill: batch must be at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, 41) THEN
		RETURN QUERY SELECT NULL::text, 0::bigint, NULL::text, false, false, true;
		RETURN;
	END IF;
	SELECT * INTO b FROM palisade_backfills f WHERE f.finished_at IS NULL ORDER BY f.ord LIMIT 1;
	IF NOT FOUND THEN
		RETURN QUERY SELECT NULL::text, 0::bigint, NULL::text, false, true, false;
		RETURN;
	END IF;
	IF b.step = 'jobs.ref' THEN
		WITH c AS (SELECT j.job_id, j.ref FROM jobs j WHERE j.job_id > b.cursor
		           ORDER BY j.job_id LIMIT p_batch),
		     u AS (UPDATE jobs j SET ref = nextval('jobs_ref_seq') FROM c
		           WHERE j.job_id = c.job_id AND c.ref IS NULL AND j.ref IS NULL RETURNING 1)
		SELECT (SELECT count(*) FROM u), count(*), max(c.job_id) INTO v_n, v_seen, v_last FROM c;
		IF v_seen < p_batch THEN
			SELECT '' INTO v_left FROM jobs j WHERE j.ref IS NULL LIMIT 1;
		END IF;
	ELSIF b.step = 'triggers.job_ref' THEN
		WITH c AS (SELECT t.id, t.scheduled_at, t.job_ref FROM triggers t
		           WHERE t.id > b.cursor::bigint ORDER BY t.id LIMIT p_batch),
		     u AS (UPDATE triggers t SET job_ref = j.ref FROM c, jobs j
		           WHERE t.id = c.id AND t.scheduled_at = c.scheduled_at AND c.job_ref IS NULL
		             AND t.job_ref IS NULL AND j.job_id = t.job_id RETURNING 1)
		SELECT (SELECT count(*) FROM u), count(*), max(c.id)::text INTO v_n, v_seen, v_last FROM c;
		IF v_seen < p_batch THEN
			SELECT (min(t.id) - 1)::text INTO v_left FROM triggers t JOIN jobs j ON j.job_id = t.job_id
			 WHERE t.job_ref IS NULL AND j.ref IS NOT NULL;
		END IF;
	ELSE
		RAISE EXCEPTION 'palisade_backfill: unknown step %', b.step
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	UPDATE palisade_backfills f SET
		cursor = CASE WHEN v_seen < p_batch AND v_left IS NOT NULL THEN v_left
		              ELSE coalesce(v_last, f.cursor) END,
		filled = f.filled + v_n, batches = f.batches + 1,
		started_at = coalesce(f.started_at, clock_timestamp()), updated_at = clock_timestamp(),
		finished_at = CASE WHEN v_seen < p_batch AND v_left IS NULL THEN clock_timestamp() END
	WHERE f.step = b.step
	RETURNING f.cursor, f.finished_at IS NOT NULL INTO v_last, finished;
	RETURN QUERY SELECT b.step, v_n, v_last, finished,
		finished AND NOT EXISTS (SELECT 1 FROM palisade_backfills f WHERE f.finished_at IS NULL),
		false;
END
$function$;
