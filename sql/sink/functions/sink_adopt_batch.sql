-- sink_adopt_batch(n): sink_adopt() for up to N keys still in the old
-- tables, first by key, each taken with its advisory lock (a try: a key an
-- apply holds is passed over; that apply adopts it).  One bounded
-- statement, hence one short transaction, per call (adopt() in
-- src/sink/retention.c, before each retention pass).
-- Returns the number of keys it found (keys_found: 0 once the old tables
-- hold no effect) and of those it moved (keys_moved).
CREATE OR REPLACE FUNCTION sink_adopt_batch(n integer, OUT keys_found integer, OUT keys_moved integer)
 RETURNS record
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
AS $function$
DECLARE
	v_keys text[];
BEGIN
	SELECT count(*), coalesce(array_agg(c.k) FILTER (WHERE c.got), '{}')
	INTO keys_found, v_keys
	FROM (SELECT c.k, pg_try_advisory_xact_lock(hashtextextended(c.k, 0)) AS got
	      FROM (SELECT idempotency_key AS k FROM sink_effects_v1 ORDER BY idempotency_key
		    LIMIT n) c
	      OFFSET 0) c;
	keys_moved := sink_adopt(v_keys);
END
$function$;
