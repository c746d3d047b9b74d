-- palisade_backfill(batch): one call of the data backfills of
-- palisade_backfills (041), in the caller's transaction: the first step
-- not finished (by ord) either fills at most BATCH rows from its cursor on
-- and moves the cursor past them, or, once its walk has reached the end of
-- the table (walked), checks the table.  Each call is meant to be a
-- transaction of its own (autocommit): row locks on at most BATCH rows,
-- for milliseconds; a lock it cannot take within 200 ms fails the call
-- (lock_timeout, 55P03), which the caller tries again later, so it never
-- holds up a claim or an apply for long.  One call runs at a time in the
-- cluster (advisory lock 7076/41; a second caller does nothing and gets
-- busy = true).
--
--   jobs.ref          BATCH jobs by primary key after the cursor; those
--                     without a ref get the next value of jobs_ref_seq.
--   triggers.job_ref  BATCH triggers by id after the cursor (the primary
--                     key of each partition); those without a job_ref get
--                     their job's ref.
--
-- The check is a call of its own, after the last batch committed: it
-- holds no row lock, only the scan's AccessShare locks, for one read of
-- the table.  It looks for a row still without its value (one written
-- meanwhile by a transaction that read the job before its ref was given):
-- the walk starts again at the first such row, else the step is finished
-- (finished = true in that call).  A trigger row whose job does not exist
-- (nothing deletes a job; a hand-made row) cannot get a ref and is not
-- waited for.
--
-- The fence: a 0.2.0 writer's row gets its ref from the fill trigger,
-- which reads the job in the writer's snapshot; a snapshot taken before
-- the jobs step finished may miss the ref, and the row may commit after
-- any check has looked.  So the call that finishes the jobs step records
-- its transaction id (fence), and the triggers step's check runs only once
-- no other session of the database runs a transaction older than the
-- fence (backend_xid) or holds a snapshot taken before it (backend_xmin):
-- this database's sessions only, since transaction ids are the server's
-- and another database's long transaction has no row of ours to write:
-- until then the call does nothing and returns busy = true ("not yet",
-- asked again by the caller: src/store/datafill.c).  A row committed after that check was written from
-- a snapshot that saw every job's ref.  Returns the step worked on (NULL
-- when none is left: done = true), the rows it filled and its cursor
-- after the call, and whether the call was a check (checked).
CREATE OR REPLACE FUNCTION palisade_backfill(p_batch integer)
 RETURNS TABLE(step text, filled bigint, cursor text, finished boolean, done boolean, busy boolean, checked boolean)
 LANGUAGE plpgsql
 SET lock_timeout TO '200ms'
AS $function$
DECLARE
	b palisade_backfills%ROWTYPE;
	v_n bigint := 0;
	v_seen integer := 0;
	v_last text;
	v_left text;
	v_fence bigint;
BEGIN
	IF p_batch < 1 THEN
		RAISE EXCEPTION 'palisade_backfill: batch must be at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, 41) THEN
		RETURN QUERY SELECT NULL::text, 0::bigint, NULL::text, false, false, true, false;
		RETURN;
	END IF;
	SELECT * INTO b FROM palisade_backfills f WHERE f.finished_at IS NULL ORDER BY f.ord LIMIT 1;
	IF NOT FOUND THEN
		RETURN QUERY SELECT NULL::text, 0::bigint, NULL::text, false, true, false, false;
		RETURN;
	END IF;
	IF b.step NOT IN ('jobs.ref', 'triggers.job_ref') THEN
		RAISE EXCEPTION 'palisade_backfill: unknown step %', b.step
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF b.walked THEN
		-- the check, in a call of its own
		IF b.step = 'jobs.ref' THEN
			SELECT '' INTO v_left FROM jobs j WHERE j.ref IS NULL LIMIT 1;
		ELSE
			SELECT max(f.fence) INTO v_fence FROM palisade_backfills f WHERE f.ord < b.ord;
			IF EXISTS (SELECT 1 FROM pg_stat_activity a
			           WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
			             AND (age(a.backend_xid) >= age((v_fence % 4294967296)::text::xid)
			                  OR age(a.backend_xmin) >= age((v_fence % 4294967296)::text::xid))) THEN
				RETURN QUERY SELECT b.step, 0::bigint, b.cursor, false, false, true, true;
				RETURN;
			END IF;
			SELECT (min(t.id) - 1)::text INTO v_left FROM triggers t JOIN jobs j ON j.job_id = t.job_id
			 WHERE t.job_ref IS NULL AND j.ref IS NOT NULL;
		END IF;
	ELSIF b.step = 'jobs.ref' THEN
		WITH c AS (SELECT j.job_id, j.ref FROM jobs j WHERE j.job_id > b.cursor
		           ORDER BY j.job_id LIMIT p_batch),
		     u AS (UPDATE jobs j SET ref = nextval('jobs_ref_seq') FROM c
		           WHERE j.job_id = c.job_id AND c.ref IS NULL AND j.ref IS NULL RETURNING 1)
		SELECT (SELECT count(*) FROM u), count(*), max(c.job_id) INTO v_n, v_seen, v_last FROM c;
	ELSE
		WITH c AS (SELECT t.id, t.scheduled_at, t.job_ref FROM triggers t
		           WHERE t.id > b.cursor::bigint ORDER BY t.id LIMIT p_batch),
		     u AS (UPDATE triggers t SET job_ref = j.ref FROM c, jobs j
		           WHERE t.id = c.id AND t.scheduled_at = c.scheduled_at AND c.job_ref IS NULL
		             AND t.job_ref IS NULL AND j.job_id = t.job_id RETURNING 1)
		SELECT (SELECT count(*) FROM u), count(*), max(c.id)::text INTO v_n, v_seen, v_last FROM c;
	END IF;
	UPDATE palisade_backfills f SET
		cursor = CASE WHEN b.walked THEN coalesce(v_left, f.cursor) ELSE coalesce(v_last, f.cursor) END,
		walked = NOT b.walked AND v_seen < p_batch,
		filled = f.filled + v_n,
		batches = f.batches + CASE WHEN b.walked THEN 0 ELSE 1 END,
		started_at = coalesce(f.started_at, clock_timestamp()), updated_at = clock_timestamp(),
		finished_at = CASE WHEN b.walked AND v_left IS NULL THEN clock_timestamp() END,
		fence = CASE WHEN b.walked AND v_left IS NULL THEN txid_current() END
	WHERE f.step = b.step
	RETURNING f.cursor, f.finished_at IS NOT NULL INTO v_last, finished;
	RETURN QUERY SELECT b.step, v_n, v_last, finished,
		finished AND NOT EXISTS (SELECT 1 FROM palisade_backfills f WHERE f.finished_at IS NULL),
		false, b.walked;
END
$function$;
