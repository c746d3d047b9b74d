-- sink_target(m, p): the id of the request target (method M, request-target
-- P) in sink_targets, which keeps each once for every sink_keys row that
-- names it; inserted when new.  Concurrent callers for a new target agree
-- on one id: the loser of the insert waits for the winner and reads its
-- row (a later statement, a later snapshot).  By index, however many
-- targets there are (SET enable_seqscan: see sink_apply_group.sql).
CREATE OR REPLACE FUNCTION sink_target(m text, p text)
 RETURNS integer
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
	v_id integer;
BEGIN
	SELECT id INTO v_id FROM sink_targets WHERE method = m AND path = p;
	IF v_id IS NULL THEN
		INSERT INTO sink_targets (method, path) VALUES (m, p) ON CONFLICT DO NOTHING
		RETURNING id INTO v_id;
	END IF;
	IF v_id IS NULL THEN
		SELECT id INTO v_id FROM sink_targets WHERE method = m AND path = p;
	END IF;
	RETURN v_id;
END
$function$;
