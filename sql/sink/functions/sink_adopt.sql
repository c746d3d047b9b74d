-- sink_adopt(keys): move the rows the sink wrote before sql/sink/006_keys.sql
-- for KEYS (sink_effects_v1 with its sink_fences_v1 and sink_ledger_v1
-- rows) into sink_keys and sink_applies, in the caller's transaction.  The
-- caller holds the advisory lock of every key (step 0 of the apply path,
-- docs/sink.md), so no request for one of them is under way.  Every apply
-- path adopts its keys before it reads them, so a key applied before the
-- upgrade is replayed, never applied again; sink_adopt_batch() adopts the
-- rest in the background.  A key keeps its fence, times, trigger, attempt,
-- progress, digest (a digest that is not 64 hex digits, written by hand,
-- is kept as its bytes: it matches no request), and its stored status and
-- body when they differ from what the sink writes again.  A fence or
-- ledger row without an effect row (the sink never writes one) stays
-- behind.  Returns the number of keys moved.
CREATE OR REPLACE FUNCTION sink_adopt(keys text[])
 RETURNS integer
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
	v_n integer;
BEGIN
	-- the common case, once the old tables are drained: one index probe
	IF NOT EXISTS (SELECT 1 FROM sink_effects_v1 WHERE idempotency_key = ANY (keys)) THEN
		RETURN 0;
	END IF;
	WITH e AS (DELETE FROM sink_effects_v1 WHERE idempotency_key = ANY (keys) RETURNING *),
	f AS (DELETE FROM sink_fences_v1 WHERE resource IN (SELECT idempotency_key FROM e)
		RETURNING resource, fence, updated_at),
	l AS (DELETE FROM sink_ledger_v1 WHERE idempotency_key IN (SELECT idempotency_key FROM e)
		RETURNING idempotency_key, chunk, fence, applied_at),
	k AS (INSERT INTO sink_keys (fence, highest, seen_at, applied_at, updated_at, scheduled_at,
		trigger_id, attempt, target, chunks_done, chunks_total, status, digest,
		idempotency_key, body)
		SELECT e.fence, greatest(e.fence, f.fence), greatest(f.updated_at, e.updated_at),
		       e.applied_at, nullif(e.updated_at, e.applied_at), e.scheduled_at, e.trigger_id,
		       e.attempt,
		       CASE WHEN e.method IS NOT NULL AND e.path IS NOT NULL
			    THEN sink_target(e.method, e.path) END,
		       e.chunks_done, e.chunks_total,
		       nullif(e.status, CASE WHEN e.chunks_total > 1 THEN 200 ELSE 201 END)::smallint,
		       CASE WHEN e.payload_digest ~ '^[0-9a-f]{64}$' THEN decode(e.payload_digest, 'hex')
			    ELSE convert_to(e.payload_digest, 'UTF8') END,
		       e.idempotency_key, e.body
		FROM e LEFT JOIN f ON f.resource = e.idempotency_key
		RETURNING id, idempotency_key),
	a AS (INSERT INTO sink_applies (key_id, fence, applied_at, chunk)
		SELECT k.id, l.fence, l.applied_at, l.chunk FROM l JOIN k USING (idempotency_key)
		RETURNING 1)
	SELECT count(*) INTO v_n FROM k;
	RETURN v_n;
END
$function$;
