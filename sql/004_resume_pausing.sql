-- 004_resume_pausing.sql - one edge more in the trigger state machine:
-- pausing -> running.
--
-- A resume that arrives while a trigger is still `pausing` (its executor has
-- not reached a safe point yet) turns it back into `running`: the executor
-- keeps its lease and token and carries on, so one resume is enough.  Before
-- this edge the trigger reached `paused` after its gate was gone and stayed
-- there until a second resume (docs/operations.md, "pause / resume").
-- src/store/ops.c takes this edge only for a trigger no paused gate covers.
-- Everything else is as in 001_init.sql.
CREATE OR REPLACE FUNCTION palisade_trigger_edge_ok(old_state text, new_state text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE old_state
		WHEN 'pending'    THEN new_state IN ('running', 'cancelled', 'manual', 'skipped')
		WHEN 'running'    THEN new_state IN ('running', 'succeeded', 'retry_wait', 'failed', 'unknown',
		                                     'pausing', 'cancelling', 'manual', 'pending')
		WHEN 'retry_wait' THEN new_state IN ('pending', 'running', 'cancelled', 'manual', 'failed')
		WHEN 'unknown'    THEN new_state IN ('running', 'succeeded', 'retry_wait', 'manual', 'failed')
		WHEN 'pausing'    THEN new_state IN ('paused', 'succeeded', 'failed', 'retry_wait', 'manual', 'pausing',
		                                     'running')
		WHEN 'paused'     THEN new_state IN ('pending', 'cancelled', 'manual')
		WHEN 'cancelling' THEN new_state IN ('cancelled', 'succeeded')
		WHEN 'manual'     THEN new_state IN ('pending', 'succeeded', 'failed', 'cancelled')
		ELSE false  -- succeeded, failed, cancelled, skipped are terminal
	END
$$;
