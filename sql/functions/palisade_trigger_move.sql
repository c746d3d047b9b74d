-- palisade_trigger_move(ids, ats, froms, to, error_class, claimer,
-- lease_ms, first_in_row): the door of the trigger state machine (G7).  Moves the triggers of keys (ids[i],
-- ats[i]) (the primary key: the instant prunes the partitions) that are
-- still in state froms[i] to state TO, and is the one place that knows the
-- side columns of an edge:
--   every move          updated_at
--   into a terminal     finished_at set; lease and next_attempt_at cleared
--   state (succeeded, failed, cancelled, skipped)
--   into any state but  the lease (lease_owner, lease_until) cleared:
--   running, pausing,   pausing -> running, running -> pausing and
--   cancelling          running -> cancelling keep their executor's lease
--   paused or manual    next_attempt_at cleared: the resumed or retried
--   -> pending          trigger is due at once (a resume's ramp writes it
--                       afterwards)
--   pausing -> paused,  the attempt in flight ends: the one its trigger
--   cancelling ->       row holds (first_ended_at, first_outcome,
--   cancelled           first_key) or the attempts row of the row's token
--                       (ended_at, outcome, idempotency_key); an attempt
--                       already ended is left as it is.  Its key is
--                       recorded (palisade_trigger_key): the request may
--                       have been sent.  With CLAIMER given (the holder,
--                       palisade_trigger_checkpoint) the executor stopped
--                       itself at a safe point and knows what it sent: the
--                       attempt ends as TO.  Without, the stop is made for
--                       a holder that lost its lease (cancel, resume, the
--                       executors' reaper): nobody knows what its request
--                       did, so the attempt ends `unknown` and the trigger
--                       gets outcome_unknown, as a claim taking over an
--                       expired running lease treats it (the next claim
--                       queries first; a spent budget goes to manual).
--                       Either way no result of that token is taken any
--                       more
--   a claim: -> running a new token (fence, from palisade_fence), the
--   with CLAIMER given  lease CLAIMER holds for LEASE_MS (from the
--                       statement's start, below), attempt_count
--                       + 1; the attempt kept in the row when it is the
--                       trigger's first and FIRST_IN_ROW (first_claimed_at,
--                       first_node), the row's other first_* cleared (the
--                       claim moves an attempt the row held into an
--                       attempts row in the same statement first)
--   ERROR_CLASS given   last_error_class (pending -> skipped 'paused' or
--                       'overlap', running -> cancelling 'replaced', a
--                       roll-back 'rolled_back'); NULL keeps it
-- Each row's edge is checked against palisade_trigger_edge_ok() (the
-- edges of include/palisade/tstate.def) as it is written: an illegal one
-- aborts the statement through palisade_trigger_refuse(), naming the
-- trigger, its state and TO.  The callers select their rows with their
-- own WHERE and pass each one's key and the state they read; a row no
-- longer in that state (moved by another transaction since; rechecked
-- under the row lock) is left alone and not returned, as a conditional
-- UPDATE would.  Returns the rows moved, each with the state it left and
-- its token (a claim's new one).
-- A claim's lease ends at statement_timestamp() + LEASE_MS, one end for
-- every row of the statement: the entries of one claim in triggers_live
-- are then equal keys, which the btree deduplicates into one posting list
-- (a per-row clock_timestamp() gave each its own key).  The statement
-- started after its claimer sent it, and the executor counts its own
-- deadline from that send, so the database's lease still ends after the
-- executor stops (docs/executor.md, "Leases"); it ends no later than a
-- per-row clock_timestamp() would have.
-- One UPDATE joined with the keys, no loop: each key one probe of the
-- primary key (joins by nested loop, whatever the size: a hash join read
-- every partition of triggers, measured 1.5 to 3 times slower for 50,000
-- keys among 1,000,000 rows); the attempts rows it ends are found by
-- trigger, token and instant (attempts_trigger, or attempts_fence until
-- 048 drops it after the roll; pruned by scheduled_at), and only for the two edges that
-- end an attempt.  The row check of every update
-- (triggers_state_edges) passes its rows by its WHEN clause alone: their
-- edges are legal, or the statement stopped before writing them.
DROP FUNCTION IF EXISTS palisade_trigger_move(bigint[], timestamp with time zone[], text, text);
DROP FUNCTION IF EXISTS palisade_trigger_move(bigint[], timestamp with time zone[], text[], text, text);
CREATE OR REPLACE FUNCTION palisade_trigger_move(p_ids bigint[], p_ats timestamp with time zone[], p_froms text[], p_to text, p_error_class text DEFAULT NULL::text, p_claimer text DEFAULT NULL::text, p_lease_ms integer DEFAULT NULL::integer, p_first_in_row boolean DEFAULT false)
 RETURNS TABLE(id bigint, scheduled_at timestamp with time zone, from_state text, job_id text, version integer, shard integer, epoch bigint, fence bigint)
 LANGUAGE plpgsql
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
	RETURN QUERY
	WITH mv AS (UPDATE triggers t SET
		state = CASE WHEN palisade_trigger_edge_ok(k.from_state, p_to) THEN p_to
		             ELSE palisade_trigger_refuse(k.id, k.from_state, p_to) END,
		updated_at = clock_timestamp(),
		finished_at = CASE WHEN p_to IN ('succeeded', 'failed', 'cancelled', 'skipped')
		                   THEN clock_timestamp() ELSE t.finished_at END,
		lease_owner = CASE WHEN k.claim THEN p_claimer
		                   WHEN p_to IN ('running', 'pausing', 'cancelling') THEN t.lease_owner END,
		lease_until = CASE WHEN k.claim THEN statement_timestamp() + p_lease_ms * interval '1 millisecond'
		                   WHEN p_to IN ('running', 'pausing', 'cancelling') THEN t.lease_until END,
		fence = CASE WHEN k.claim THEN nextval('palisade_fence') ELSE t.fence END,
		attempt_count = CASE WHEN k.claim THEN t.attempt_count + 1 ELSE t.attempt_count END,
		next_attempt_at = CASE WHEN p_to IN ('succeeded', 'failed', 'cancelled', 'skipped')
		                         OR (p_to = 'pending' AND k.from_state IN ('paused', 'manual')) THEN NULL
		                       ELSE t.next_attempt_at END,
		last_error_class = coalesce(p_error_class, t.last_error_class),
		outcome_unknown = t.outcome_unknown OR k.lost,
		-- a claim: a first attempt in the row, any other's left (moved by
		-- the claim into an attempts row)
		first_claimed_at = CASE WHEN k.claim THEN CASE WHEN t.attempt_count = 0 AND p_first_in_row
		                          THEN clock_timestamp() END ELSE t.first_claimed_at END,
		first_node = CASE WHEN k.claim THEN CASE WHEN t.attempt_count = 0 AND p_first_in_row
		                    THEN p_claimer END ELSE t.first_node END,
		first_ms = CASE WHEN k.claim THEN NULL ELSE t.first_ms END,
		first_http = CASE WHEN k.claim THEN NULL ELSE t.first_http END,
		first_error = CASE WHEN k.claim THEN NULL ELSE t.first_error END,
		first_queries = CASE WHEN k.claim THEN NULL ELSE t.first_queries END,
		-- the attempt the row holds, still open, ends with a stop
		first_ended_at = CASE WHEN k.claim THEN NULL
		                      WHEN k.stops AND t.first_claimed_at IS NOT NULL
		                        AND t.first_ended_at IS NULL THEN clock_timestamp()
		                      ELSE t.first_ended_at END,
		first_outcome = CASE WHEN k.claim THEN NULL
		                     WHEN k.stops AND t.first_claimed_at IS NOT NULL
		                       AND t.first_ended_at IS NULL
		                     THEN CASE WHEN k.lost THEN 'unknown' ELSE p_to END
		                     ELSE t.first_outcome END,
		-- NULL: the job's default key, as the result commit writes it
		first_key = CASE WHEN k.claim THEN NULL
		                 WHEN k.stops AND t.first_claimed_at IS NOT NULL
		                   AND t.first_ended_at IS NULL
		                 THEN nullif(palisade_trigger_key(t.job_id, t.version, t.scheduled_at,
		                        t.partition, t.id, t.request_id),
		                      palisade_default_key(t.job_id, t.scheduled_at, t.partition, t.request_id))
		                 ELSE t.first_key END
	  FROM (SELECT u.id, u.at, u.from_state, s.stops, s.stops AND p_claimer IS NULL AS lost,
	          p_to = 'running' AND p_claimer IS NOT NULL AS claim
	        FROM unnest(p_ids, p_ats, p_froms) AS u(id, at, from_state),
	          LATERAL (SELECT (u.from_state, p_to) IN (('pausing', 'paused'),
	            ('cancelling', 'cancelled')) AS stops) s) k
	 WHERE t.id = k.id AND t.scheduled_at = k.at AND t.state = k.from_state
	RETURNING t.id, t.scheduled_at, k.from_state, t.job_id, t.version, t.shard, t.epoch, t.fence,
	  k.stops, k.lost, t.partition, t.request_id),
	  -- any other attempt in flight ends in its attempts row, by its token
	  att AS (UPDATE attempts a SET ended_at = clock_timestamp(),
	      outcome = CASE WHEN mv.lost THEN 'unknown' ELSE p_to END,
	      idempotency_key = palisade_trigger_key(mv.job_id, mv.version, mv.scheduled_at,
	        mv.partition, mv.id, mv.request_id)
	    FROM mv WHERE mv.stops AND a.fence = mv.fence AND a.trigger_id = mv.id
	      AND a.scheduled_at = mv.scheduled_at AND a.ended_at IS NULL)
	SELECT mv.id, mv.scheduled_at, mv.from_state, mv.job_id, mv.version, mv.shard, mv.epoch, mv.fence
	FROM mv;
END
$function$;
