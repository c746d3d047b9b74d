-- palisade_history_retention(table, keep, slice): delete at most SLICE rows
-- of TABLE ('misfires' or 'audit_log') older than now - KEEP, in the
-- caller's transaction (docs/schema.md, "misfires and audit_log").  A
-- misfire row goes only when its whole range ended before the cutoff.  At
-- most one such slice runs at a time per table in the cluster (advisory
-- lock 7076/2 or 7076/3; a second caller deletes nothing and gets busy =
-- true).  Returns the rows deleted, whether the slice was full (more may
-- be left) and the cutoff.
CREATE OR REPLACE FUNCTION palisade_history_retention(p_table text, p_keep interval, p_slice integer)
 RETURNS TABLE(deleted bigint, more boolean, busy boolean, cutoff timestamp with time zone)
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_cut timestamptz := clock_timestamp() - p_keep;
	v_n bigint;
BEGIN
	IF p_keep < interval '1 second' OR p_slice < 1 THEN
		RAISE EXCEPTION 'palisade_history_retention: keep must be at least 1 s, slice at least 1'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF p_table NOT IN ('misfires', 'audit_log') THEN
		RAISE EXCEPTION 'palisade_history_retention: unknown table %', p_table
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, CASE p_table WHEN 'misfires' THEN 2 ELSE 3 END) THEN
		RETURN QUERY SELECT 0::bigint, false, true, v_cut;
		RETURN;
	END IF;
	IF p_table = 'misfires' THEN
		DELETE FROM misfires m WHERE m.id = ANY (ARRAY(
			SELECT x.id FROM misfires x WHERE x.range_to < v_cut
			 ORDER BY x.range_to LIMIT p_slice FOR UPDATE SKIP LOCKED));
	ELSE
		DELETE FROM audit_log a WHERE a.id = ANY (ARRAY(
			SELECT x.id FROM audit_log x WHERE x.at < v_cut
			 ORDER BY x.at LIMIT p_slice FOR UPDATE SKIP LOCKED));
	END IF;
	GET DIAGNOSTICS v_n = ROW_COUNT;
	IF v_n > 0 THEN
		-- the horizon moves in the transaction that deletes the rows
		INSERT INTO palisade_retention_state AS s (name, horizon, deleted)
		VALUES (p_table, v_cut, v_n)
		ON CONFLICT (name) DO UPDATE SET horizon = greatest(s.horizon, excluded.horizon),
			deleted = s.deleted + excluded.deleted, updated_at = clock_timestamp();
	END IF;
	RETURN QUERY SELECT v_n, v_n >= p_slice, false, v_cut;
END
$function$;
