-- palisade_trigger_move(ids, ats, to, error_class): the door of the trigger
-- state machine (G7).  Moves the triggers of keys (ids[i], ats[i]) (the
-- primary key: the instant prunes the partitions) to state TO, and is the
-- one place that knows the side columns of an edge:
--   every move          updated_at
--   into a terminal     finished_at set; lease and next_attempt_at cleared
--   state (succeeded, failed, cancelled, skipped)
--   into any state but  the lease (lease_owner, lease_until) cleared:
--   running, pausing,   pausing -> running, running -> pausing and
--   cancelling          running -> cancelling keep their executor's lease
--   paused or manual    next_attempt_at cleared: the resumed or retried
--   -> pending          trigger is due at once (a resume's ramp writes it
--                       afterwards)
--   ERROR_CLASS given   last_error_class (pending -> skipped 'paused', a
--                       roll-back 'rolled_back'); NULL keeps it
-- Each row's edge is checked against palisade_trigger_edge_ok() (the
-- edges of include/palisade/tstate.def) as it is written: an illegal one
-- aborts the statement through palisade_trigger_refuse(), naming the
-- trigger, its state and TO.  The callers select (and lock, FOR UPDATE)
-- their rows with their own WHERE and pass the keys; a row whose state
-- changed between that read and the move (a caller that did not lock) is
-- left alone and not returned.  Returns the rows moved, each with the
-- state it left.  Set-based: one UPDATE joined with the keys, no loop.
-- While its UPDATE runs, the transaction-local setting
-- palisade.trigger_move is 'on', which tells the statement-level check
-- (palisade_trigger_edges_check) that these edges are checked already;
-- it is cleared right after (and with the (sub)transaction on an error).
-- Joins by nested loop only: the keys are a primary key's, so each is one
-- probe of one partition.  Left to itself, the planner of a call with many
-- keys (a cancel or resume of thousands of triggers) read the states by a
-- hash join over every partition of triggers, a cost that grew with the
-- table rather than with the move.
CREATE OR REPLACE FUNCTION palisade_trigger_move(p_ids bigint[], p_ats timestamp with time zone[], p_to text, p_error_class text DEFAULT NULL::text)
 RETURNS TABLE(id bigint, scheduled_at timestamp with time zone, from_state text, job_id text, version integer, shard integer, epoch bigint)
 LANGUAGE plpgsql
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
#variable_conflict use_column
BEGIN
	PERFORM set_config('palisade.trigger_move', 'on', true);
	RETURN QUERY
	WITH o AS (SELECT x.id, x.scheduled_at, x.state FROM unnest(p_ids, p_ats) AS k(id, at)
	             JOIN triggers x ON x.id = k.id AND x.scheduled_at = k.at)
	UPDATE triggers t SET
		state = CASE WHEN palisade_trigger_edge_ok(o.state, p_to) THEN p_to
		             ELSE palisade_trigger_refuse(o.id, o.state, p_to) END,
		updated_at = clock_timestamp(),
		finished_at = CASE WHEN p_to IN ('succeeded', 'failed', 'cancelled', 'skipped')
		                   THEN clock_timestamp() ELSE t.finished_at END,
		lease_owner = CASE WHEN p_to IN ('running', 'pausing', 'cancelling') THEN t.lease_owner END,
		lease_until = CASE WHEN p_to IN ('running', 'pausing', 'cancelling') THEN t.lease_until END,
		next_attempt_at = CASE WHEN p_to IN ('succeeded', 'failed', 'cancelled', 'skipped')
		                         OR (p_to = 'pending' AND o.state IN ('paused', 'manual')) THEN NULL
		                       ELSE t.next_attempt_at END,
		last_error_class = coalesce(p_error_class, t.last_error_class)
	  FROM o
	 WHERE t.id = o.id AND t.scheduled_at = o.scheduled_at AND t.state = o.state
	RETURNING t.id, t.scheduled_at, o.state, t.job_id, t.version, t.shard, t.epoch;
	PERFORM set_config('palisade.trigger_move', '', true);
END
$function$;
