-- palisade_claim_forbid_skips(): step 1 of the claim.  The due pending
-- instants of an `overlap: forbid` job that has a live run in the same
-- partition become `skipped` (last_error_class overlap) through the door
-- (palisade_trigger_move) and each is recorded in misfires; returns how
-- many.  Nothing at all unless a forbid
-- version exists (job_versions_forbid); otherwise driven from the few live
-- runs (triggers_live) to their job's pending instants
-- (triggers_pending_job), never from a scan of the day's partition, which
-- holds every trigger finished so far that day first (42 ms per claim
-- after 24,000 triggers before it was written this way).  Index-driven by
-- design: a generic plan cannot know that one job has few pending
-- instants.
CREATE OR REPLACE FUNCTION palisade_claim_forbid_skips()
 RETURNS integer
 LANGUAGE plpgsql
 SET enable_sort TO 'off'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
	v_skipped integer := 0;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM job_versions f WHERE f.overlap_policy = 'forbid') THEN
		RETURN 0;
	END IF;
	WITH live AS MATERIALIZED (SELECT l.id, l.job_id, l.partition FROM triggers l
	    WHERE l.state IN ('running', 'pausing', 'cancelling', 'unknown')
	      AND EXISTS (SELECT 1 FROM job_versions f WHERE f.job_id = l.job_id
	          AND f.overlap_policy = 'forbid')),
	  -- per live run, its job's pending instants (OFFSET 0: kept a
	  -- correlated subquery, so the plan cannot turn back into a scan of
	  -- every pending trigger)
	  victims AS (SELECT x.id, x.scheduled_at, x.partition FROM live l, LATERAL (
	      SELECT t.id, t.scheduled_at, t.partition FROM triggers t
	      JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version
	      WHERE t.job_id = l.job_id AND t.partition = l.partition AND t.id <> l.id
	        AND v.overlap_policy = 'forbid' AND t.state = 'pending' AND t.request_id IS NULL
	        AND t.due_at <= clock_timestamp()
	      OFFSET 0
	      FOR UPDATE OF t SKIP LOCKED) x),
	  -- through the door, which probes each victim by its key
	  w AS MATERIALIZED (SELECT DISTINCT v.id, v.scheduled_at, v.partition FROM victims v),
	  sk AS (SELECT m.job_id, m.version, m.scheduled_at, w.partition, m.shard, m.epoch
	    FROM (SELECT array_agg(w.id) AS ids, array_agg(w.scheduled_at) AS ats,
	            array_agg('pending'::text) AS froms FROM w HAVING count(*) > 0) door
	      CROSS JOIN LATERAL palisade_trigger_move(door.ids, door.ats, door.froms, 'skipped', 'overlap') m
	      JOIN w ON w.id = m.id)
	INSERT INTO misfires (job_id, version, partition, range_from, range_to, count, policy,
	    reason, shard, epoch)
	SELECT sk.job_id, sk.version, sk.partition, sk.scheduled_at, sk.scheduled_at, 1, 'forbid',
	    'overlap', sk.shard, sk.epoch FROM sk;
	GET DIAGNOSTICS v_skipped = ROW_COUNT;
	RETURN v_skipped;
END
$function$;
