-- palisade_partition_live(part, any): the live (non-terminal) triggers of
-- one partition of `triggers`: with ANY, 1 as soon as one exists, else 0;
-- otherwise their number.  Each probe is implied by one partial index's
-- predicate (triggers_pending_job, triggers_live, triggers_open_rare), so
-- an old range is never read whole to learn that it may go.
CREATE OR REPLACE FUNCTION palisade_partition_live(p_part text, p_any boolean)
 RETURNS bigint
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
	v bigint;
BEGIN
	IF p_any THEN
		EXECUTE format('SELECT (EXISTS (SELECT 1 FROM %1$I WHERE state = ''pending'')'
			' OR EXISTS (SELECT 1 FROM %1$I WHERE state = ''running'')'
			' OR EXISTS (SELECT 1 FROM %1$I WHERE state IN (''retry_wait'', ''unknown'','
			' ''pausing'', ''paused'', ''cancelling'', ''manual'')))::int', p_part) INTO v;
	ELSE
		EXECUTE format('SELECT (SELECT count(*) FROM %1$I WHERE state = ''pending'')'
			' + (SELECT count(*) FROM %1$I WHERE state = ''running'')'
			' + (SELECT count(*) FROM %1$I WHERE state IN (''retry_wait'', ''unknown'','
			' ''pausing'', ''paused'', ''cancelling'', ''manual''))', p_part) INTO v;
	END IF;
	RETURN v;
END
$function$;
