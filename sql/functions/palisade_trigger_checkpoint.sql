-- palisade_trigger_checkpoint(id, fence, checkpoint): an executor's safe
-- point in a chunked call (docs/executor.md).  Stores CHECKPOINT in the
-- trigger ID if token FENCE still holds it in a live state (running,
-- pausing, cancelling), and a trigger asked to stop stops there, through
-- the door: pausing -> paused, cancelling -> cancelled, and the door ends
-- the attempt in flight as that state with the key it sent
-- (palisade_trigger_move, told that its holder stops itself: the executor
-- knows what it sent, the outcome is not unknown).  Returns the state the
-- trigger is in afterwards (running: carry on), NULL when the token no
-- longer holds it (nothing written).  One probe of the primary key per
-- partition (by id: the executor has the instant only to the second),
-- then the door's one probe of the row it already locked.
CREATE OR REPLACE FUNCTION palisade_trigger_checkpoint(p_id bigint, p_fence bigint, p_checkpoint jsonb)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_at timestamptz;
	v_state text;
	v_owner text;
BEGIN
	UPDATE triggers t SET checkpoint = p_checkpoint, updated_at = clock_timestamp()
	 WHERE t.id = p_id AND t.fence = p_fence AND t.state IN ('running', 'pausing', 'cancelling')
	RETURNING t.scheduled_at, t.state, coalesce(t.lease_owner, '') INTO v_at, v_state, v_owner;
	IF NOT FOUND OR v_state = 'running' THEN
		RETURN v_state;
	END IF;
	-- the row is this transaction's since the UPDATE: the door finds it
	-- in the state read
	PERFORM 1 FROM palisade_trigger_move(ARRAY[p_id], ARRAY[v_at], ARRAY[v_state],
	    CASE v_state WHEN 'pausing' THEN 'paused' ELSE 'cancelled' END, NULL, v_owner);
	RETURN CASE v_state WHEN 'pausing' THEN 'paused' ELSE 'cancelled' END;
END
$function$;
