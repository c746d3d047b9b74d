-- palisade_trigger_edges_check(): the body of the triggers_state_edges
-- trigger.  Rejects the statement (check_violation) when any row changed
-- its state or its fence along no edge of palisade_trigger_edge_ok().
-- The two transition tables are joined by id: a hash join, whatever
-- planner settings the updating statement runs with (the claim turns
-- sorts off; a nested loop over two tuplestores would be quadratic in the
-- batch), hence its own settings.  A statement of the door
-- (palisade_trigger_move, which checks each edge as it writes it) runs
-- with palisade.trigger_move 'on' and is not checked twice; every other
-- update is, among them those of binaries that predate the door.
CREATE OR REPLACE FUNCTION palisade_trigger_edges_check()
 RETURNS trigger
 LANGUAGE plpgsql
 SET enable_nestloop TO 'off'
 SET enable_sort TO 'on'
AS $function$
DECLARE
	bad record;
BEGIN
	IF current_setting('palisade.trigger_move', true) = 'on' THEN
		RETURN NULL;
	END IF;
	SELECT o.id, o.state AS old_state, n.state AS new_state INTO bad
	  FROM old_rows o JOIN new_rows n ON n.id = o.id
	 WHERE (n.state IS DISTINCT FROM o.state OR n.fence IS DISTINCT FROM o.fence)
	   AND NOT palisade_trigger_edge_ok(o.state, n.state)
	 LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'illegal trigger state change % -> % (trigger %)',
			bad.old_state, bad.new_state, bad.id USING ERRCODE = 'check_violation';
	END IF;
	RETURN NULL;
END
$function$;
