-- palisade_claim_batch(node, lease_ms, limit, ahead_ms, open_hosts,
-- groups..., tenants..., first_in_row): one executor's claim, one round
-- trip, with no cluster-wide lock (docs/executor.md, "Claiming").  Every
-- claim runs this body: 0.3.0 executors call it with first_in_row true,
-- older ones through palisade_claim(), which passes false.
--  0. the node's row in executor_nodes, its render skips;
--  1. forbid-skips (palisade_claim_forbid_skips());
--  2. candidates: each tenant's oldest ready triggers in index order,
--     locked FOR UPDATE SKIP LOCKED while they are read, so concurrent
--     claims take disjoint rows; expired leases are re-claimed;
--  3. a transaction-level advisory lock per group, tenant or job that a
--     cluster-wide limit covers, taken with pg_try_advisory_xact_lock
--     (never waited for: a claim without a key leaves its candidates to
--     the claim that holds it);
--  4. the claim itself in a statement of its own, so with a snapshot taken
--     after the keys: counts of live runs, ranks, limits, the move to
--     running through the door (palisade_trigger_move with the claimer: a
--     new token and lease), the attempt rows (with their trigger's
--     scheduled_at, the partition key); then, in a statement of its own,
--     `overlap: replace` cancellations through the door.
-- The attempt ledger (docs/schema.md): with first_in_row, a trigger's
-- first claim (attempt_count 0) keeps its attempt in the trigger row
-- (first_claimed_at, first_node; the result commit adds the rest) and
-- inserts no attempts row; every other claim inserts one, as older
-- executors' commits expect.  A claim of a trigger whose row holds an
-- attempt (a retry, a deferral, a takeover) first moves that attempt
-- into an attempts row of its own and clears the row's first_* columns,
-- in the same statement, so no attempt is ever in both places.
-- VOLATILE: in READ COMMITTED each statement takes a fresh snapshot, which
-- step 4 relies on.  Rows: one per claimed trigger, ordered by id, then one
-- summary row with id NULL (the forbid-skip count, the earliest ready
-- instant after the horizon in ms since the epoch).
--
-- Settings (docs/performance.md has the measurements):
--   enable_sort, enable_bitmapscan off: step 2 must walk
--     triggers_tenant_ready in order and stop at the limit; estimating one
--     row, the planner preferred a scan plus a sort of every ready row
--     (66-80 ms over 20,000 ready triggers instead of ~1 ms);
--   plan_cache_mode force_generic_plan: over a partitioned table a custom
--     plan covers every partition and index, 27 ms of planning per claim;
--     no statement here needs its parameter values to plan well;
--   enable_seqscan off: a generic plan made while a partition was nearly
--     empty read it sequentially for ever after (295-411 ms per claim
--     after 100,000 instants were planned into it); every statement has an
--     index for what it reads.
-- A candidate's job version is a LATERAL lookup with LIMIT 1, and expired
-- leases are those before statement_timestamp(): both keep a claim's cost
-- independent of the number of jobs and of running triggers.
CREATE OR REPLACE FUNCTION palisade_claim_batch(p_node text, p_lease_ms integer, p_limit integer, p_ahead_ms integer, p_open_hosts text[], p_groups text[], p_group_node integer[], p_group_cluster integer[], p_tenants text[], p_tenant_cap integer[], p_tenant_weight double precision[], p_first_in_row boolean)
 RETURNS TABLE(id bigint, fence bigint, job_id text, version integer, at bigint, part integer, request_id text, attempt integer, prev_state text, prev_err text, checkpoint text, tenant text, resource_group text, ready_ms bigint, skipped integer, next_ms bigint, unknown boolean)
 LANGUAGE plpgsql
 SET enable_sort TO 'off'
 SET enable_bitmapscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_seqscan TO 'off'
AS $function$
#variable_conflict use_column
DECLARE
	v_skipped integer := 0;
	v_cand palisade_claim_cand[];
	v_lo timestamptz;
	v_hi timestamptz;
	v_held text[];
	v_horizon timestamptz := clock_timestamp() + p_ahead_ms * interval '1 millisecond';
	v_next timestamptz;
	v_simple boolean;
	v_pick bigint[];
	v_skip text[];
	v_skipv integer[];
BEGIN
	-- 0. this node is a live executor (seen_at, written at most every 2 s),
	-- and the jobs it cannot render for now: each skip with the version it
	-- was recorded against (v_skipv; NULL, written by a 0.3.0 node: every
	-- version), read once.  A candidate is passed over when a skip of its
	-- job counts for its version (047).
	IF NOT EXISTS (SELECT 1 FROM executor_nodes n WHERE n.node = p_node
	    AND n.seen_at > clock_timestamp() - interval '2 s') THEN
		INSERT INTO executor_nodes AS n (node, seen_at) VALUES (p_node, clock_timestamp())
		ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at;
	END IF;
	SELECT coalesce(array_agg(s.job_id), '{}'), coalesce(array_agg(s.version), '{}')
	  INTO v_skip, v_skipv FROM render_skips s WHERE s.node = p_node
	    AND s.until > clock_timestamp();

	-- 1. forbid-skips, driven from the few live runs.
	v_skipped := palisade_claim_forbid_skips();

	-- 2. candidates, locked as they are read (SKIP LOCKED: a concurrent
	-- claim's rows are passed over, not waited for).
	WITH gated AS (SELECT
	      coalesce(array_agg(substr(g.scope, 5)) FILTER (WHERE g.scope LIKE 'job:%'), '{}') AS jobs,
	      coalesce(array_agg(substr(g.scope, 7)) FILTER (WHERE g.scope LIKE 'group:%'), '{}') AS grps,
	      coalesce(array_agg(substr(g.scope, 8)) FILTER (WHERE g.scope LIKE 'tenant:%'), '{}') AS tens,
	      coalesce(bool_or(g.scope = 'global'), false) AS glob
	    FROM gates g WHERE g.paused),
	  -- Groups and tenants that cannot take another call now (a node or
	  -- cluster limit reached): their triggers are passed over while the
	  -- window is read, so a saturated group's backlog never fills the
	  -- window and starves the rest of its tenant.  A pre-filter only:
	  -- step 4 counts again under the keys.
	  sat AS (SELECT coalesce(array_agg(lg.name), '{}') AS grps
	    FROM unnest(p_groups, p_group_node, p_group_cluster) AS lg(name, nr, cl)
	    WHERE lg.nr <= 0 OR (lg.cl > 0 AND (SELECT count(*) FROM triggers l
	      WHERE l.resource_group = lg.name AND l.state IN ('running', 'pausing', 'cancelling')
	        AND (l.state <> 'running' OR l.lease_until >= clock_timestamp())) >= lg.cl)),
	  satt AS (SELECT coalesce(array_agg(tl.name), '{}') AS tens
	    FROM unnest(p_tenants, p_tenant_cap) AS tl(name, cap)
	    WHERE tl.cap > 0 AND (SELECT count(*) FROM triggers l
	      WHERE l.tenant = tl.name AND l.state IN ('running', 'pausing', 'cancelling')
	        AND (l.state <> 'running' OR l.lease_until >= clock_timestamp())) >= tl.cap),
	  -- Tenants with waiting work: a loose index scan, one probe per tenant.
	  ten AS MATERIALIZED (SELECT r.tenant FROM (WITH RECURSIVE s AS (
	        SELECT min(x.tenant) AS tenant FROM triggers x
	          WHERE x.state IN ('pending', 'retry_wait', 'unknown')
	        UNION ALL SELECT (SELECT min(x.tenant) FROM triggers x
	          WHERE x.state IN ('pending', 'retry_wait', 'unknown') AND x.tenant > s.tenant)
	        FROM s WHERE s.tenant IS NOT NULL)
	      SELECT s.tenant FROM s WHERE s.tenant IS NOT NULL) r, gated, satt
	    WHERE r.tenant <> ALL (gated.tens) AND r.tenant <> ALL (satt.tens) AND NOT gated.glob)
	-- With their instants' range (v_lo, v_hi): the partitions step 4 reads
	-- the picked rows from.
	SELECT coalesce(array_agg(k.cand), '{}'), min(k.at), max(k.at)
	  INTO v_cand, v_lo, v_hi FROM (
	    SELECT ROW(c.id, c.tenant, c.resource_group, c.job_id, c.partition, c.overlap_policy,
	        c.max_in_flight, c.ready_at,
	        c.priority + floor(extract(epoch FROM clock_timestamp() - c.ready_at) / 10), false
	      )::palisade_claim_cand AS cand, c.scheduled_at AS at
	    FROM ten, gated, sat, LATERAL (
	        SELECT x.id, x.scheduled_at, x.tenant, x.resource_group, x.job_id, x.partition,
	          v.overlap_policy, v.max_in_flight, coalesce(x.next_attempt_at, x.due_at) AS ready_at,
	          x.priority
	        FROM triggers x CROSS JOIN LATERAL (SELECT v.overlap_policy, v.max_in_flight, v.target_host FROM job_versions v WHERE v.job_id = x.job_id AND v.version = x.version LIMIT 1) v
	        WHERE x.tenant = ten.tenant AND x.state IN ('pending', 'retry_wait', 'unknown')
	          AND coalesce(x.next_attempt_at, x.due_at) <= v_horizon
	          AND x.job_id <> ALL (gated.jobs) AND x.resource_group <> ALL (gated.grps)
	          AND (x.job_id <> ALL (v_skip) OR NOT EXISTS (SELECT 1 FROM unnest(v_skip, v_skipv)
	            AS k(job_id, version) WHERE k.job_id = x.job_id
	              AND (k.version IS NULL OR k.version = x.version)))
	          AND x.resource_group <> ALL (sat.grps)
	          AND v.target_host <> ALL (p_open_hosts)
	          AND (v.max_in_flight = 0 OR (SELECT count(*) FROM triggers l
	            WHERE l.job_id = x.job_id AND l.state IN ('running', 'pausing', 'cancelling')
	              AND (l.state <> 'running' OR l.lease_until >= clock_timestamp())) < v.max_in_flight)
	          -- a cheap pre-filter; step 4 decides exactly
	          AND (v.overlap_policy IN ('allow', 'replace') OR NOT EXISTS (SELECT 1 FROM triggers l
	            WHERE l.job_id = x.job_id AND l.partition = x.partition AND l.id <> x.id
	              AND l.state IN ('running', 'pausing', 'cancelling', 'unknown')))
	        ORDER BY coalesce(x.next_attempt_at, x.due_at)
	        LIMIT p_limit
	        FOR UPDATE OF x SKIP LOCKED) c
	  UNION ALL
	  SELECT e.* FROM (
	    SELECT ROW(t.id, t.tenant, t.resource_group, t.job_id, t.partition, v.overlap_policy,
	        v.max_in_flight, t.lease_until, t.priority::double precision, true
	      )::palisade_claim_cand AS cand, t.scheduled_at AS at
	    FROM triggers t CROSS JOIN LATERAL (SELECT v.overlap_policy, v.max_in_flight, v.target_host FROM job_versions v WHERE v.job_id = t.job_id AND v.version = t.version LIMIT 1) v
	    WHERE t.state = 'running' AND t.lease_until < statement_timestamp()
	      AND NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
	        'job:' || t.job_id, 'group:' || t.resource_group, 'tenant:' || t.tenant))
	      AND v.target_host <> ALL (p_open_hosts)
	      AND (t.job_id <> ALL (v_skip) OR NOT EXISTS (SELECT 1 FROM unnest(v_skip, v_skipv)
	        AS k(job_id, version) WHERE k.job_id = t.job_id
	          AND (k.version IS NULL OR k.version = t.version)))
	    LIMIT p_limit
	    FOR UPDATE OF t SKIP LOCKED) e) k;

	-- 3. keys of the cluster-wide limits the candidates fall under.
	SELECT coalesce(array_agg(k.key), '{}') INTO v_held FROM (
	    SELECT ks.key, pg_try_advisory_xact_lock(7075, hashtext(ks.key)) AS ok
	    FROM (SELECT DISTINCT x.key FROM (
	        SELECT 'g:' || c.resource_group AS key FROM unnest(v_cand) c
	          JOIN unnest(p_groups, p_group_cluster) AS gl(name, cl) ON gl.name = c.resource_group
	          WHERE gl.cl > 0
	        UNION ALL SELECT 't:' || c.tenant FROM unnest(v_cand) c
	          JOIN unnest(p_tenants, p_tenant_cap) AS tl(name, cap) ON tl.name = c.tenant
	          WHERE tl.cap > 0
	        UNION ALL SELECT 'j:' || c.job_id FROM unnest(v_cand) c
	          WHERE c.ov <> 'allow' OR c.mif > 0) x
	      ORDER BY 1) ks
	    OFFSET 0) k
	  WHERE k.ok;

	-- 4. the claim, with a snapshot taken after the keys were acquired.
	-- The common case first: one tenant, and no candidate under a limit
	-- (group, tenant, job, overlap, this node's group concurrency) - the
	-- order of the candidates is the claim order, nothing to count or rank.
	SELECT count(DISTINCT c.tenant) <= 1 AND NOT bool_or(c.ov <> 'allow' OR c.mif > 0
	    OR coalesce(gl.cl, 0) > 0 OR coalesce(gl.nr, p_limit) < p_limit OR coalesce(tl.cap, 0) > 0)
	  INTO v_simple
	  FROM unnest(v_cand) c
	  LEFT JOIN unnest(p_groups, p_group_node, p_group_cluster) AS gl(name, nr, cl)
	    ON gl.name = c.resource_group
	  LEFT JOIN unnest(p_tenants, p_tenant_cap) AS tl(name, cap) ON tl.name = c.tenant;
	-- A pause committed since step 2 still stops its candidates; with no
	-- gate paused at all (one probe of gates, once: an initplan) no
	-- candidate looks up its four scopes.
	IF coalesce(v_simple, true) THEN
	WITH pick AS (SELECT c.id FROM unnest(v_cand) c
	    WHERE NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused)
	      OR NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
	        'job:' || c.job_id, 'group:' || c.resource_group, 'tenant:' || c.tenant))
	    ORDER BY c.running DESC, c.eff_prio DESC, c.ready_at
	    LIMIT p_limit)
	SELECT coalesce(array_agg(pick.id), '{}') INTO v_pick FROM pick;
	ELSE
	WITH lg AS (SELECT gl.name, gl.nr, gl.cl FROM unnest(p_groups, p_group_node, p_group_cluster)
	      AS gl(name, nr, cl)),
	  lt AS (SELECT tl.name, tl.cap, tl.w FROM unnest(p_tenants, p_tenant_cap, p_tenant_weight)
	      AS tl(name, cap, w)),
	  c AS (SELECT c.* FROM unnest(v_cand) c
	    LEFT JOIN lg ON lg.name = c.resource_group LEFT JOIN lt ON lt.name = c.tenant
	    WHERE (coalesce(lg.cl, 0) = 0 OR ('g:' || c.resource_group) = ANY (v_held))
	      AND (coalesce(lt.cap, 0) = 0 OR ('t:' || c.tenant) = ANY (v_held))
	      AND ((c.ov = 'allow' AND c.mif = 0) OR ('j:' || c.job_id) = ANY (v_held))
	      AND (NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused)
	        OR NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
	          'job:' || c.job_id, 'group:' || c.resource_group, 'tenant:' || c.tenant)))),
	  -- Live runs of the candidates' tenants; `holds` is a run that occupies
	  -- a slot (a running trigger whose lease expired does not: it is being
	  -- re-claimed, or will be).
	  lv AS MATERIALIZED (SELECT l.id, l.job_id, l.partition, l.tenant, l.resource_group,
	      (l.state IN ('pausing', 'cancelling')
	        OR (l.state = 'running' AND l.lease_until >= clock_timestamp())) AS holds
	    FROM triggers l WHERE l.state IN ('running', 'pausing', 'cancelling', 'unknown')
	      AND l.tenant IN (SELECT c.tenant FROM c)
	      -- needed only for a limit, an exclusive job or a fair share
	      -- between tenants: one tenant's unlimited work skips the scan
	      AND ((SELECT count(DISTINCT c.tenant) FROM c) > 1 OR EXISTS (SELECT 1 FROM c
	        LEFT JOIN lg ON lg.name = c.resource_group LEFT JOIN lt ON lt.name = c.tenant
	        WHERE c.ov <> 'allow' OR c.mif > 0 OR coalesce(lg.cl, 0) > 0
	          OR coalesce(lt.cap, 0) > 0))),
	  grun AS (SELECT lv.resource_group AS name, count(*)::int AS n FROM lv WHERE lv.holds GROUP BY 1),
	  trun AS (SELECT lv.tenant AS name, count(*)::int AS n FROM lv WHERE lv.holds GROUP BY 1),
	  jrun AS (SELECT lv.job_id AS name, count(*)::int AS n FROM lv WHERE lv.holds GROUP BY 1),
	  ranked AS (SELECT c.*,
	      row_number() OVER (PARTITION BY c.tenant ORDER BY c.eff_prio DESC, c.ready_at) AS trank,
	      row_number() OVER (PARTITION BY c.resource_group ORDER BY c.eff_prio DESC, c.ready_at) AS grank,
	      row_number() OVER (PARTITION BY c.job_id ORDER BY c.ready_at) AS jrank,
	      row_number() OVER (PARTITION BY c.job_id, c.part ORDER BY c.running DESC, c.ready_at) AS prank
	    FROM c
	    WHERE c.ov IN ('allow', 'replace') OR NOT EXISTS (SELECT 1 FROM lv
	      WHERE lv.job_id = c.job_id AND lv.partition = c.part AND lv.id <> c.id)),
	  pick AS (SELECT r.id, r.ov FROM ranked r
	    LEFT JOIN lg ON lg.name = r.resource_group LEFT JOIN grun ON grun.name = r.resource_group
	    LEFT JOIN lt ON lt.name = r.tenant LEFT JOIN trun ON trun.name = r.tenant
	    LEFT JOIN jrun ON jrun.name = r.job_id
	    WHERE (lg.name IS NULL OR (r.grank <= lg.nr
	        AND (lg.cl = 0 OR r.grank <= lg.cl - coalesce(grun.n, 0))))
	      AND (lt.name IS NULL OR lt.cap = 0 OR r.trank <= lt.cap - coalesce(trun.n, 0))
	      AND (r.mif = 0 OR r.jrank <= r.mif - coalesce(jrun.n, 0))
	      AND (r.ov = 'allow' OR r.prank = 1)
	    -- Fair share: a tenant's next slot ranks after the calls it already
	    -- has in flight, scaled by its weight; then aged priority.
	    ORDER BY (r.trank + coalesce(trun.n, 0))::double precision / coalesce(nullif(lt.w, 0), 1),
	      r.eff_prio DESC, r.ready_at
	    LIMIT p_limit)
	SELECT coalesce(array_agg(pick.id), '{}') INTO v_pick FROM pick;
	END IF;

	-- The picked candidates become running through the door, with a new
	-- token and lease, and get their attempt rows (or keep a first attempt
	-- in their own row).  prev reads the rows as the claim found them
	-- (locked since step 2; the door's update, a later command, is not in
	-- this statement's snapshot): what the claim returns besides the new
	-- token, and an attempt the row still holds, which leaves it for an
	-- attempts row (moved), under its own token, in this statement.  Both
	-- reads are bounded by the candidates' instants (v_lo, v_hi from step
	-- 2), which prunes the partitions at executor start-up, as the result
	-- commit's bound does: by id alone, prev probed the primary key of
	-- every partition once per picked trigger (18 partitions under the
	-- default retention; docs/performance.md, "Where a fire's database work
	-- goes").
	RETURN QUERY
	WITH prev AS MATERIALIZED (SELECT t.id, t.scheduled_at, t.state AS prev_state,
	      coalesce(t.last_error_class, '') AS prev_err,
	      t.attempt_count = 0 AND p_first_in_row AS in_row, t.job_id, t.version,
	      floor(extract(epoch FROM t.scheduled_at))::bigint AS at, t.partition,
	      coalesce(t.request_id, '') AS request_id, t.attempt_count + 1 AS attempt_count,
	      t.checkpoint::text AS checkpoint, t.tenant, t.resource_group,
	      floor(extract(epoch FROM coalesce(t.next_attempt_at, t.due_at)) * 1000)::bigint AS ready_ms,
	      t.outcome_unknown, t.first_claimed_at IS NOT NULL AS holds
	    FROM triggers t WHERE t.id = ANY (v_pick)
	      AND t.scheduled_at >= v_lo AND t.scheduled_at <= v_hi),
	  -- through the ledger, the one decoder of the row's compact form; read
	  -- for the rows that hold an attempt only (an array computed once from
	  -- prev: a first claim probes no partition here, where v_pick probed
	  -- the primary key of every partition once per trigger)
	  moved AS (INSERT INTO attempts (trigger_id, fence, node, scheduled_at, claimed_at, ended_at,
	      idempotency_key, outcome, error_class, http_status, duration_ms, status_queries)
	    SELECT l.trigger_id, l.fence, l.node, l.scheduled_at, l.claimed_at, l.ended_at,
	      l.idempotency_key, l.outcome, l.error_class, l.http_status, l.duration_ms, l.status_queries
	    FROM attempt_ledger l
	    WHERE l.in_row AND l.trigger_id = ANY (ARRAY(SELECT prev.id FROM prev WHERE prev.holds))
	      AND l.scheduled_at >= v_lo AND l.scheduled_at <= v_hi),
	  -- the claim through the door: new token, lease, attempt
	  upd AS (SELECT prev.*, m.fence FROM (SELECT array_agg(p.id) AS ids,
	        array_agg(p.scheduled_at) AS ats, array_agg(p.prev_state) AS froms FROM prev p
	        HAVING count(*) > 0) door
	      CROSS JOIN LATERAL palisade_trigger_move(door.ids, door.ats, door.froms, 'running', NULL,
	        p_node, p_lease_ms, p_first_in_row) m
	      JOIN prev ON prev.id = m.id),
	  att AS (INSERT INTO attempts (trigger_id, fence, node, scheduled_at)
	    SELECT upd.id, upd.fence, p_node, upd.scheduled_at FROM upd WHERE NOT upd.in_row)
	SELECT upd.id, upd.fence, upd.job_id, upd.version, upd.at, upd.partition, upd.request_id,
	  upd.attempt_count, upd.prev_state, upd.prev_err, upd.checkpoint, upd.tenant,
	  upd.resource_group, upd.ready_ms, NULL::integer, NULL::bigint, upd.outcome_unknown
	FROM upd ORDER BY upd.id;

	-- `overlap: replace`: the other running triggers of a picked
	-- candidate's job and partition are asked to stop (running ->
	-- cancelling, error class replaced; they keep their lease and stop at
	-- their safe point), through the door.  A statement of its own, run
	-- only when such a candidate was picked; the job's key (step 3) keeps
	-- other claims of the job out meanwhile.
	IF EXISTS (SELECT 1 FROM unnest(v_cand) c WHERE c.ov = 'replace' AND c.id = ANY (v_pick)) THEN
		PERFORM 1 FROM (SELECT array_agg(l.id) AS ids, array_agg(l.scheduled_at) AS ats,
		      array_agg(l.state) AS froms
		    FROM (SELECT DISTINCT c.job_id, c.part FROM unnest(v_cand) c
		        WHERE c.ov = 'replace' AND c.id = ANY (v_pick)) r
		    JOIN triggers l ON l.job_id = r.job_id AND l.partition = r.part
		    WHERE l.state = 'running' AND l.id <> ALL (v_pick)
		    HAVING count(*) > 0) door
		  CROSS JOIN LATERAL palisade_trigger_move(door.ids, door.ats, door.froms, 'cancelling',
		    'replaced') m;
		-- one of them may be claimed ahead of its instant, its call not
		-- made yet: its executor learns of it now (at its next renewal,
		-- which may come after the instant, the call would go out)
		IF FOUND THEN
			PERFORM pg_notify('palisade_handback', '');
		END IF;
	END IF;

	-- The summary: when the next trigger becomes ready after the horizon.
	WITH RECURSIVE s AS (
	    SELECT min(x.tenant) AS tenant FROM triggers x
	      WHERE x.state IN ('pending', 'retry_wait', 'unknown')
	    UNION ALL SELECT (SELECT min(x.tenant) FROM triggers x
	      WHERE x.state IN ('pending', 'retry_wait', 'unknown') AND x.tenant > s.tenant)
	    FROM s WHERE s.tenant IS NOT NULL)
	SELECT min((SELECT coalesce(x.next_attempt_at, x.due_at) FROM triggers x
	      WHERE x.tenant = s.tenant AND x.state IN ('pending', 'retry_wait', 'unknown')
	        AND coalesce(x.next_attempt_at, x.due_at) > v_horizon
	      ORDER BY coalesce(x.next_attempt_at, x.due_at) LIMIT 1))
	  INTO v_next FROM s WHERE s.tenant IS NOT NULL;
	RETURN QUERY SELECT NULL::bigint, NULL::bigint, NULL::text, NULL::integer, NULL::bigint,
	  NULL::integer, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text, NULL::text,
	  NULL::text, NULL::bigint, v_skipped,
	  floor(extract(epoch FROM v_next) * 1000)::bigint, NULL::boolean;
END
$function$;
