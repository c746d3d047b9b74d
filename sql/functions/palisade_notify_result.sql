-- palisade_notify_result(...): the notifications of one committed result of
-- a job with `notify:`, called by the executor's result commit in its own
-- statement (so in the transaction that writes the state).  failed and
-- manual are sent as themselves; a notified one marks the job in
-- notify_state, and the job's next succeeded result clears the mark and
-- sends recovered, once.  Other states send nothing.  Returns the rows
-- inserted.
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
		END IF;
	ELSIF p_state = 'succeeded' THEN
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
