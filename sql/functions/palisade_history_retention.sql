-- palisade_history_retention(table, keep, slice): delete at most SLICE rows
-- of TABLE ('misfires' or 'audit_log') older than now - KEEP, in the
-- caller's transaction (docs/schema.md, "misfires and audit_log").  A
-- misfire row goes only when its whole range ended before the cutoff, and
-- not while the dependency planner still reads it: a row (other than
-- excluded) of a dependent job or of one of its upstreams that ends above
-- that dependent job's watermark (palisade_after_readers()).  At
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
	v_last bigint;
	v_hash bytea;
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
			WITH rd AS MATERIALIZED (
				SELECT a.job_id, min(a.lo) AS lo FROM palisade_after_readers() a GROUP BY a.job_id)
			SELECT x.id FROM misfires x WHERE x.range_to < v_cut
			   AND NOT EXISTS (SELECT 1 FROM rd WHERE rd.job_id = x.job_id
				AND x.range_to > rd.lo AND x.reason <> 'excluded')
			 ORDER BY x.range_to LIMIT p_slice FOR UPDATE SKIP LOCKED));
		GET DIAGNOSTICS v_n = ROW_COUNT;
	ELSE
		-- audit_log loses a prefix of its chain only: the first rows in seq
		-- order, up to the first one not older than the cutoff.  Audit
		-- writers wait meanwhile (lock 7076/4, palisade_audit_seal), and
		-- audit_chain_start moves to the first seq kept and the hash of the
		-- last row deleted, so palisade_audit_verify stays clean.
		PERFORM pg_advisory_xact_lock(7076, 4);
		SELECT max(y.seq) INTO v_last FROM (
			SELECT x.seq, bool_and(x.at < v_cut) OVER (ORDER BY x.seq) AS old
			  FROM (SELECT a.seq, a.at FROM audit_log a WHERE a.seq IS NOT NULL
				 ORDER BY a.seq LIMIT p_slice) x) y
		 WHERE y.old;
		v_n := 0;
		IF v_last IS NOT NULL THEN
			SELECT a.hash INTO v_hash FROM audit_log a WHERE a.seq = v_last;
			DELETE FROM audit_log a WHERE a.seq <= v_last;
			GET DIAGNOSTICS v_n = ROW_COUNT;
			INSERT INTO audit_chain_start AS s (id, seq, prev_hash) VALUES (1, v_last + 1, v_hash)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, prev_hash = excluded.prev_hash,
				updated_at = clock_timestamp();
		END IF;
	END IF;
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
