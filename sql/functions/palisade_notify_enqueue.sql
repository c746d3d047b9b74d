-- palisade_notify_enqueue(job, version, event, key, data): the door of the
-- notification outbox for a state change (the other writer is the apply
-- that tells a receiver it adds of the job's failure: src/store/apply.c,
-- TELL_SQL).  Inserts one row per `notify:` entry of the
-- job's latest version (jobs.latest_version: what apply stored last) whose
-- `on` lists EVENT, and returns how many it inserted.  VERSION is the
-- version the event is of (a trigger's, a misfire row's): it goes into the
-- payload, not into the choice of receivers, so that an event of a trigger
-- planned before an apply removed or changed a receiver (a retry, a
-- `manual` trigger, an instant planned ahead of the switch) goes to the
-- receivers the job has now (docs/jobs.md, "Notify rules").  The webhook
-- id is msg_<key>_<entry index>: KEY names the state change (a trigger's
-- token and event, a misfire row, a quarantine row), so the row of a
-- replayed change is the same row (ON CONFLICT DO NOTHING) and a receiver
-- sees one id per event however often it is delivered.  The secret column
-- keeps the entry's ${NAME} reference; the delivering executor resolves
-- it.  Callers that know the job has no notify (the executor's result
-- commit of a version without it, when the job's latest version has none
-- either or the result is a success) never call it.
CREATE OR REPLACE FUNCTION palisade_notify_enqueue(p_job text, p_version integer, p_event text, p_key text, p_data jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_n integer;
BEGIN
	INSERT INTO notifications (webhook_id, job_id, event, url, secret, payload)
	SELECT 'msg_' || p_key || '_' || (e.ord - 1), p_job, p_event, e.entry->>'url', e.entry->>'secret',
	       jsonb_build_object('type', 'palisade.job.' || p_event,
	         'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	         'data', jsonb_build_object('event', p_event, 'job', p_job, 'version', p_version,
	           'console', '/console/job?id=' || p_job) || p_data)
	  FROM jobs j
	  JOIN job_versions v ON v.job_id = j.job_id AND v.version = j.latest_version
	 CROSS JOIN LATERAL jsonb_array_elements(v.spec->'notify') WITH ORDINALITY AS e(entry, ord)
	 WHERE j.job_id = p_job AND jsonb_typeof(v.spec->'notify') = 'array'
	   AND e.entry->'on' ? p_event
	ON CONFLICT (webhook_id) DO NOTHING;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	RETURN v_n;
END
$function$;
