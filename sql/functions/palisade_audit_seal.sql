-- palisade_audit_seal(): seal an audit row as it is inserted (trigger
-- audit_log_seal).  Audit writers take the transaction-scoped advisory
-- lock 7076/4 one at a time, so the row after the last committed one is
-- well defined: seq is the last seq + 1 and hash chains over the last
-- row's hash (or over audit_chain_start when retention has emptied the
-- table, or the empty hash at the very start).  Only operator actions and
-- rare automatic decisions write audit_log; the claim and commit paths
-- never do, so the lock is never on the hot path.  A writer whose
-- snapshot missed the last row (REPEATABLE READ) gets a seq already taken
-- and fails on the unique index rather than forking the chain.
CREATE OR REPLACE FUNCTION palisade_audit_seal()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_seq bigint;
	v_prev bytea;
BEGIN
	PERFORM pg_advisory_xact_lock(7076, 4);
	SELECT a.seq, a.hash INTO v_seq, v_prev FROM audit_log a
	 WHERE a.seq IS NOT NULL ORDER BY a.seq DESC LIMIT 1;
	IF FOUND THEN
		NEW.seq := v_seq + 1;
	ELSE
		SELECT s.seq, s.prev_hash INTO v_seq, v_prev FROM audit_chain_start s;
		NEW.seq := coalesce(v_seq, 1);
		v_prev := coalesce(v_prev, ''::bytea);
	END IF;
	NEW.hash := palisade_audit_link(v_prev, NEW);
	RETURN NEW;
END
$function$;
