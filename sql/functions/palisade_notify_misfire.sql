-- palisade_notify_misfire(): the body of the misfires_notify trigger.  A
-- misfire row of a job whose latest version has `notify:` gets its misfire
-- notification in the transaction that records it, whichever writer
-- inserted it (the planner, a resume, a claim's overlap skip; older
-- binaries' inserts too).  A row of a job without notify costs one lookup
-- of its latest version (in palisade_notify_enqueue), which inserts
-- nothing.  A
-- range whose first instant is shadow (palisade_trigger_live: a job in
-- shadow, or not yet cut over) sends nothing: its instants are the old
-- scheduler's to run (docs/migrating.md), and palisade would report runs
-- it was never to make.  The check costs one probe of shadow_scopes while
-- no scope is in shadow.
CREATE OR REPLACE FUNCTION palisade_notify_misfire()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	IF EXISTS (SELECT 1 FROM shadow_scopes)
	   AND EXISTS (SELECT 1 FROM jobs j WHERE j.job_id = NEW.job_id
	               AND NOT palisade_trigger_live(j.job_id, j.tenant, j.resource_group, NEW.range_from)) THEN
		RETURN NULL;
	END IF;
	PERFORM palisade_notify_enqueue(NEW.job_id, NEW.version, 'misfire', 'misfire' || NEW.id,
	  jsonb_build_object('trigger', NULL, 'partition', NEW.partition,
	    'scheduled_at', to_char(NEW.range_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	    'range_to', to_char(NEW.range_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
	    'count', NEW.count, 'reason', NEW.reason, 'policy', NEW.policy, 'state', 'misfire',
	    'error_class', NULL, 'attempts', 0));
	RETURN NULL;
END
$function$;
