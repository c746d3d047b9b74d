-- palisade_trigger_edges_check(): the body of the triggers_state_edges
-- trigger, called only for a row whose change its WHEN clause found to be
-- no edge of palisade_trigger_edge_ok(): rejects the statement
-- (check_violation), naming the trigger, the state it left and the one it
-- was given.  Never returns normally.
CREATE OR REPLACE FUNCTION palisade_trigger_edges_check()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	RAISE EXCEPTION 'illegal trigger state change % -> % (trigger %)',
		OLD.state, NEW.state, OLD.id USING ERRCODE = 'check_violation';
END
$function$;
