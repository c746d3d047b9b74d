-- palisade_trigger_key(job, version, scheduled_at, partition, id,
-- request_id): the idempotency key the executor sends for the trigger
-- (src/util/template.c, pal_tpl_render_key): its version's key template
-- with {job}, {scheduled_at} (RFC 3339 UTC to the second),
-- {scheduled_date} (in the version's zone), {partition}, {trigger} and
-- {request_id} replaced, and "/" with the request id appended for a manual
-- run or a backfill unless the template uses {request_id}.  The door
-- (palisade_trigger_move) records it for an attempt it stops, which may
-- have sent its request: the executor's commit, which knows the key it
-- sent, is not there to write it.  None of the values holds a "{", so
-- replacing one placeholder after the other renders what the executor's
-- single pass does.  A zone PostgreSQL does not know leaves
-- {scheduled_date} as it is rather than fail the stop.  NULL when the
-- version does not exist.
CREATE OR REPLACE FUNCTION palisade_trigger_key(p_job text, p_version integer, p_at timestamp with time zone, p_partition integer, p_id bigint, p_request text)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
	v_tpl text;
	v_zone text;
	v_key text;
BEGIN
	SELECT v.idempotency_key, v.timezone INTO v_tpl, v_zone
	  FROM job_versions v WHERE v.job_id = p_job AND v.version = p_version;
	IF v_tpl IS NULL THEN
		RETURN NULL;
	END IF;
	v_key := replace(replace(replace(replace(replace(v_tpl,
	    '{job}', p_job),
	    '{scheduled_at}', to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
	    '{partition}', p_partition::text),
	    '{trigger}', p_id::text),
	    '{request_id}', coalesce(p_request, ''));
	IF strpos(v_key, '{scheduled_date}') > 0 THEN
		BEGIN
			v_key := replace(v_key, '{scheduled_date}',
			    to_char(p_at AT TIME ZONE coalesce(v_zone, 'UTC'), 'YYYY-MM-DD'));
		EXCEPTION WHEN invalid_parameter_value THEN
			NULL;
		END;
	END IF;
	IF coalesce(p_request, '') <> '' AND strpos(v_tpl, '{request_id}') = 0 THEN
		v_key := v_key || '/' || p_request;
	END IF;
	RETURN v_key;
END
$function$;
