-- palisade_notify_quarantine(): the body of the quarantine_notify trigger.
-- A job taken out of planning sends quarantined, in the transaction that
-- quarantines it, when the job's latest version has `notify:`
-- (palisade_notify_enqueue inserts nothing otherwise).  The key is the row's job and creation time:
-- a job quarantined again after a release is a new event.
CREATE OR REPLACE FUNCTION palisade_notify_quarantine()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	PERFORM palisade_notify_enqueue(NEW.job_id, NEW.version, 'quarantined',
	  'quarantined' || md5(NEW.job_id || '/' || NEW.created_at::text),
	  jsonb_build_object('trigger', NULL, 'partition', NULL,
	    'scheduled_at', to_char(NEW.since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	    'state', 'quarantined', 'error_class', 'planning', 'error', NEW.error,
	    'ticket', NEW.ticket_id, 'attempts', 0));
	RETURN NULL;
END
$function$;
