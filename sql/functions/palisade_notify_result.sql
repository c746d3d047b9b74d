-- palisade_notify_result(...): the notifications of one committed result of
-- a trigger whose version has `notify:` (or, failed or manual, of a job
-- whose latest version has; succeeded, of a job marked failing), called
-- by the executor's result commit in its
-- own statement (so in the transaction that writes the
-- state); the receivers are those of the job's latest version
-- (palisade_notify_enqueue), and an apply of a version without failed or
-- manual entries ends the mark (src/store/apply.c, VERSIONS_META_SQL).  failed and
-- manual are sent as themselves; a notified one marks the job in
-- notify_state and its partition in notify_parts (with the latest failed
-- instant of that partition).  A succeeded result clears its partition's
-- mark when its instant is not earlier than the marked one; once no
-- partition of the job is marked, it clears the job's mark and sends
-- recovered, once.  So a job whose partition 1 keeps failing while
-- partition 0 succeeds sends no recovered, nor does an earlier instant's
-- success committed after a later one's failure.  A job marked before
-- notify_parts existed (no row there) recovers at its next success.  Other
-- states send nothing.  Locks: the job's notify_state row first, then its
-- notify_parts rows, in every branch.  Returns the rows inserted.
CREATE OR REPLACE FUNCTION palisade_notify_result(p_job text, p_version integer, p_trigger bigint, p_fence bigint, p_scheduled_at timestamp with time zone, p_partition integer, p_state text, p_error_class text, p_attempts integer)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_data jsonb := jsonb_build_object('trigger', p_trigger, 'partition', p_partition,
	  'scheduled_at', to_char(p_scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	  'state', p_state, 'error_class', p_error_class, 'attempts', p_attempts);
	v_n integer := 0;
BEGIN
	IF p_state IN ('failed', 'manual') THEN
		v_n := palisade_notify_enqueue(p_job, p_version, p_state,
		         't' || p_trigger || '_f' || p_fence || '_' || p_state, v_data);
		IF v_n > 0 THEN
			INSERT INTO notify_state AS s (job_id, failed_since) VALUES (p_job, clock_timestamp())
			ON CONFLICT (job_id) DO UPDATE SET failed_since = coalesce(s.failed_since, excluded.failed_since),
			  updated_at = clock_timestamp();
			INSERT INTO notify_parts AS s (job_id, partition, failed_at)
			VALUES (p_job, p_partition, p_scheduled_at)
			ON CONFLICT (job_id, partition) DO UPDATE
			  SET failed_at = greatest(s.failed_at, excluded.failed_at);
		END IF;
	ELSIF p_state = 'succeeded' THEN
		PERFORM 1 FROM notify_state WHERE job_id = p_job AND failed_since IS NOT NULL FOR UPDATE;
		IF NOT FOUND THEN
			RETURN 0;
		END IF;
		DELETE FROM notify_parts
		 WHERE job_id = p_job AND partition = p_partition AND failed_at <= p_scheduled_at;
		IF EXISTS (SELECT 1 FROM notify_parts WHERE job_id = p_job) THEN
			RETURN 0;
		END IF;
		UPDATE notify_state SET failed_since = NULL, updated_at = clock_timestamp()
		 WHERE job_id = p_job AND failed_since IS NOT NULL;
		IF FOUND THEN
			v_n := palisade_notify_enqueue(p_job, p_version, 'recovered',
			         't' || p_trigger || '_f' || p_fence || '_recovered', v_data);
		END IF;
	END IF;
	RETURN v_n;
END
$function$;
