-- palisade_trigger_edge_ok(old, new): is OLD -> NEW an edge of the trigger
-- state machine (G7)?  running -> running is the re-claim of an expired
-- lease (new token); pausing -> running is a resume that arrives before the
-- executor reached a safe point (it keeps its lease and carries on).
-- shadow (planned, never claimed) leaves for pending, when a cut-over
-- makes its instant live, or for cancelled, when a version that takes over
-- at its apply replaced the version that planned it (its instant no longer
-- that version's to run).  succeeded, failed, cancelled and skipped are
-- terminal.  Read by
-- palisade_trigger_edges_check() for every updated trigger.
CREATE OR REPLACE FUNCTION palisade_trigger_edge_ok(old_state text, new_state text)
 RETURNS boolean
 LANGUAGE sql
 IMMUTABLE
AS $function$
	SELECT CASE old_state
		WHEN 'pending'    THEN new_state IN ('running', 'cancelled', 'manual', 'skipped', 'shadow')
		WHEN 'running'    THEN new_state IN ('running', 'succeeded', 'retry_wait', 'failed', 'unknown',
		                                     'pausing', 'cancelling', 'manual', 'pending')
		WHEN 'retry_wait' THEN new_state IN ('pending', 'running', 'cancelled', 'manual', 'failed', 'shadow')
		WHEN 'unknown'    THEN new_state IN ('running', 'succeeded', 'retry_wait', 'manual', 'failed')
		WHEN 'pausing'    THEN new_state IN ('paused', 'succeeded', 'failed', 'retry_wait', 'manual', 'pausing',
		                                     'running')
		WHEN 'paused'     THEN new_state IN ('pending', 'cancelled', 'manual', 'shadow')
		WHEN 'cancelling' THEN new_state IN ('cancelled', 'succeeded')
		WHEN 'manual'     THEN new_state IN ('pending', 'succeeded', 'failed', 'cancelled')
		WHEN 'shadow'     THEN new_state IN ('pending', 'cancelled')
		ELSE false  -- succeeded, failed, cancelled, skipped are terminal
	END
$function$;
