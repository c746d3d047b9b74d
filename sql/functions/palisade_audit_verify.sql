-- palisade_audit_verify(): walk the audit chain in seq order from where it
-- starts (audit_chain_start, or seq 1 after the empty hash) and recompute
-- every row's hash.  Returns one row: how many rows were checked, and the
-- first broken link if any: problem 'edited' (the row's hash is not the
-- one its text and the previous hash give: the row, or one before it that
-- verified, was changed), 'missing' (seqs missing_from..missing_to are gone:
-- rows deleted in the middle or at the start), or 'unsealed' (a row
-- without seq or hash).  problem NULL: the chain is whole.  Rows deleted
-- at the end of the chain leave no gap and are not seen.
CREATE OR REPLACE FUNCTION palisade_audit_verify()
 RETURNS TABLE(checked bigint, problem text, seq bigint, id bigint, missing_from bigint, missing_to bigint, first_seq bigint, last_seq bigint)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
	r audit_log;
	v_prev bytea := ''::bytea;
	v_next bigint := 1;
	v_n bigint := 0;
	v_first bigint;
BEGIN
	SELECT s.seq, s.prev_hash INTO v_next, v_prev FROM audit_chain_start s;
	IF NOT FOUND THEN
		v_next := 1;
		v_prev := ''::bytea;
	END IF;
	v_first := v_next;
	FOR r IN SELECT * FROM audit_log a ORDER BY a.seq NULLS FIRST, a.id LOOP
		IF r.seq IS NULL OR r.hash IS NULL THEN
			RETURN QUERY SELECT v_n, 'unsealed'::text, r.seq, r.id, NULL::bigint, NULL::bigint, v_first, v_next - 1;
			RETURN;
		END IF;
		IF r.seq <> v_next THEN
			RETURN QUERY SELECT v_n, 'missing'::text, r.seq, r.id, v_next, r.seq - 1, v_first, v_next - 1;
			RETURN;
		END IF;
		IF r.hash <> palisade_audit_link(v_prev, r) THEN
			RETURN QUERY SELECT v_n, 'edited'::text, r.seq, r.id, NULL::bigint, NULL::bigint, v_first, v_next - 1;
			RETURN;
		END IF;
		v_n := v_n + 1;
		v_prev := r.hash;
		v_next := r.seq + 1;
	END LOOP;
	RETURN QUERY SELECT v_n, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, v_first, v_next - 1;
END
$function$;
