-- palisade_notify_misfire(): the body of the misfires_notify trigger.  A
-- misfire row of a job version with `notify:` gets its misfire
-- notification in the transaction that records it, whichever writer
-- inserted it (the planner, a resume, a claim's overlap skip; older
-- binaries' inserts too).  A row of a job without notify costs one lookup
-- of its version (in palisade_notify_enqueue), which inserts nothing.
CREATE OR REPLACE FUNCTION palisade_notify_misfire()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	PERFORM palisade_notify_enqueue(NEW.job_id, NEW.version, 'misfire', 'misfire' || NEW.id,
	  jsonb_build_object('trigger', NULL, 'partition', NEW.partition,
	    'scheduled_at', to_char(NEW.range_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	    'range_to', to_char(NEW.range_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	    'count', NEW.count, 'reason', NEW.reason, 'policy', NEW.policy, 'state', 'misfire',
	    'error_class', NULL, 'attempts', 0));
	RETURN NULL;
END
$function$;
