-- palisade_trigger_refuse(id, from, to): the door's answer to an illegal
-- edge (palisade_trigger_move): raises check_violation naming the trigger,
-- the state it is in and the one asked for.  Called only for a row whose
-- edge palisade_trigger_edge_ok() refused; never returns.
CREATE OR REPLACE FUNCTION palisade_trigger_refuse(p_id bigint, p_from text, p_to text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
BEGIN
	RAISE EXCEPTION 'illegal trigger state change % -> % (trigger %)', p_from, p_to, p_id
		USING ERRCODE = 'check_violation',
		      HINT = 'palisade_trigger_edge_ok() lists the edges of the state machine';
END
$function$;
