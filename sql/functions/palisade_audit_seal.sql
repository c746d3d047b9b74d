-- palisade_audit_seal(): seal an audit row as it is inserted (trigger
-- audit_log_seal): seq is the chain's last seq + 1 and hash chains over
-- the last row's hash (or over audit_chain_start when retention has
-- emptied the table, or the empty hash at the very start).
--
-- The chain's tail is read once per transaction, not once per row.  The
-- first row a transaction seals takes the transaction-scoped advisory
-- lock 7076/4 (audit writers one at a time, so the row after the last
-- committed one is well defined) and reads the last row; every row it
-- seals leaves its seq and hash in the transaction-local setting
-- palisade.audit_tail, marked with the transaction's id (a value of
-- another transaction, or one set for the session, is not believed), and
-- the next row chains on from there: while the lock is held nobody else
-- appends, so the tail is the one this transaction wrote.  A many-row
-- INSERT or COPY (apply writes one row per changed job) thus pays one
-- lock and one read.  The setting goes with the transaction, and a
-- subtransaction's with the subtransaction, as do the rows it inserted
-- and a lock it took.  The setting is assigned (not PERFORMed) and parsed
-- with string functions: a query per row cost as much as the hash.
--
-- Only operator actions, apply and rare automatic decisions write
-- audit_log; the claim and commit paths never do, so the lock is never on
-- the hot path.  A writer whose snapshot missed the last row (REPEATABLE
-- READ) gets a seq already taken and fails on the unique index rather
-- than forking the chain.  The same body seals the inserts of older
-- binaries, which name neither seq nor hash.
CREATE OR REPLACE FUNCTION palisade_audit_seal()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
	v_xid text := pg_current_xact_id()::text || ':';
	v_tail text := current_setting('palisade.audit_tail', true);
	v_seq bigint;
	v_prev bytea;
BEGIN
	IF starts_with(v_tail, v_xid) THEN
		v_seq := split_part(v_tail, ':', 2)::bigint;
		v_prev := decode(split_part(v_tail, ':', 3), 'hex');
	ELSE
		PERFORM pg_advisory_xact_lock(7076, 4);
		SELECT a.seq, a.hash INTO v_seq, v_prev FROM audit_log a
		 WHERE a.seq IS NOT NULL ORDER BY a.seq DESC LIMIT 1;
		IF NOT FOUND THEN
			SELECT s.seq - 1, s.prev_hash INTO v_seq, v_prev FROM audit_chain_start s;
			v_seq := coalesce(v_seq, 0);
			v_prev := coalesce(v_prev, ''::bytea);
		END IF;
	END IF;
	NEW.seq := v_seq + 1;
	NEW.hash := palisade_audit_link(v_prev, NEW);
	v_tail := set_config('palisade.audit_tail', v_xid || NEW.seq || ':' || encode(NEW.hash, 'hex'), true);
	RETURN NEW;
END
$function$;
