-- palisade_plan_after: plan the dependent jobs (`after:`) of one shard, as
-- its controller under epoch p_epoch; one call per tick and shard
-- (src/controller/depends.c, docs/controller.md "Dependencies").
--
-- Fenced like every planning write (G6): the shard row is locked at its
-- epoch first, so a newer leader's claim waits for this call and an older
-- leader's call writes nothing and returns fenced.  Everything it writes
-- (triggers, misfire rows, the job's watermark) is one statement's work,
-- so it commits or vanishes whole.
--
-- Per dependent job B (a job of the shard with a version whose spec has
-- "after", while its watermark is below the end of its time with it), an
-- instant t belongs to the version of B that owns it: the version active
-- at t (the newest activated at or before it: effective_from < t, as the
-- planner hands over), unless t is at or after the `end` of that version
-- or of a newer one (a retirement).  t is decided with that version's
-- `after` list, partitions and priority, whichever version is active now
-- (B re-applied with another upstream or with a schedule, or deleted),
-- and its trigger or misfire row carries that version.  Per version
-- window, its candidate instants are the instants t of its first
-- upstream's scheduled triggers after B's watermark and at or before the
-- watermark of every upstream's shard (below which an active upstream's
-- instants are all committed; while an upstream is stored but not
-- activated yet, the window waits), or, for a first upstream that is itself
-- dependent (in its time with `after`), its own watermark here (below
-- which its instants are all decided: a chain follows what is decided up
-- the chain, never the shard's planning watermark, above its upstream's
-- triggers still to come), and of B's own shard (where a new version of B
-- is activated).  Each (t, partition) of B is decided once:
--   * every upstream reached the state named (succeeded; finished: any
--     end, an end other than succeeded counted once t came: see below)
--     -> B's trigger at t, source 'schedule', inserted on the plan
--     key, so a replay, a takeover or a second controller adds nothing;
--     'cancelled' when B is deleted (an instant before the deletion
--     decided after it: the deletion cancels B's triggers not claimed),
--     'pending', or 'shadow' when palisade_trigger_live says so for B
--     (as the planner decides it, on the nominal instant B's trigger
--     carries: its first upstream's nominal_at at t, NULL when neither
--     spread nor jitter moved t) or when an upstream's trigger at t is
--     shadow instead (the old system ran that instant, and runs B's:
--     B follows its upstream into shadow once t is 5 s past);
--   * an upstream failed, was cancelled or skipped (when `on` is
--     succeeded), or has no trigger but a misfire row at t -> a misfire
--     with reason 'upstream_failed' naming it (and its trigger);
--     an upstream row that ended other than succeeded before t (a row
--     cancelled while planned, by `palisade cancel` or a retirement)
--     counts, for either `on`, only once t came: until then t is
--     undecided, so B never gets its trigger for t before t, and a
--     re-apply of a retired upstream in between plans t anew;
--   * neither, and t + within is past -> 'upstream_late', naming the
--     first upstream still waiting;
--   * an upstream has no trigger at t and t is not after its first
--     activation (it did not exist yet: a fan-in whose upstreams were
--     activated by their controllers around t) -> t is not an instant
--     of B: nothing is written and the watermark passes it;
--   * t falls in a retirement of B (at or after the end of the version
--     active at t or of a newer one: B was deleted, and perhaps applied
--     again later) -> in no window, not an instant of B;
--   * otherwise undecided: looked at again next tick.
-- A decision is never taken twice: a (t, partition) that already has a
-- trigger or an upstream_* misfire is left alone.  Partitions: an upstream
-- with as many partitions as B maps partition p to p; any other count
-- makes every partition of B wait for all of the upstream's.  The first
-- upstream's instants with no trigger in its misfire ranges (other than
-- excluded dates; ranges may cover instants that have triggers and
-- overlap each other) become B's upstream_failed rows, each instant in
-- exactly one (below).  B's watermark moves up to just
-- below its earliest undecided instant, never past a window's cap, and at
-- most to the end of its last window with "after".
--
-- Returns fenced (nothing written), the number of dependent jobs of the
-- shard, triggers inserted and misfire rows written.
CREATE OR REPLACE FUNCTION palisade_plan_after(p_shard integer, p_epoch bigint, OUT fenced boolean, OUT jobs integer, OUT planned integer, OUT misfired integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
	b record;
	v record;
	ur record;
	lo timestamptz;
	wlo timestamptz;
	cap timestamptz;
	undecided timestamptz;
	hold timestamptz;
	top timestamptz;
	n integer;
	n2 integer;
	any_shadow boolean;
	own timestamptz;
	gone_ids bigint[];
	gone_ats timestamptz[];
BEGIN
	fenced := false;
	jobs := 0;
	planned := 0;
	misfired := 0;
	SELECT watermark INTO own FROM shards WHERE shard_id = p_shard AND epoch = p_epoch FOR UPDATE;
	IF NOT FOUND THEN
		fenced := true;
		RETURN;
	END IF;
	-- The shadow rules, read once (as the planner's insert does); the read
	-- holds shadow_scopes for the transaction, so `shadow`, `cutover` and
	-- `rollback` (which lock it exclusively) wait for this call's commit.
	SELECT EXISTS (SELECT 1 FROM shadow_scopes) INTO any_shadow;
	-- From the versions with `after` (the partial index job_versions_after,
	-- a handful of rows) to their jobs by key: never the shard's other jobs.
	-- A job is looked at while its watermark is below the end of its time
	-- with `after`: the activation of a newer version without it (a
	-- `schedule`), or a retirement (the `end` of the version that retired
	-- it); the job's active version itself may have no `after` any more,
	-- or the job may be retired, while instants of an older version are
	-- still undecided.
	FOR b IN
		WITH dv AS MATERIALIZED (
			SELECT job_id, max(version) AS la, min(effective_from) AS since
			  FROM job_versions
			 WHERE spec ? 'after' AND effective_from IS NOT NULL
			 GROUP BY job_id)
		SELECT dv.job_id, dv.since, j.tenant, j.resource_group, j.ref, j.retired_at,
		       w.watermark
		  FROM dv
		  JOIN jobs j ON j.job_id = dv.job_id
		  LEFT JOIN after_watermarks w ON w.job_id = dv.job_id
		 WHERE j.shard = p_shard
		   AND coalesce(w.watermark, '-infinity') < least(
			coalesce((SELECT min(nv.effective_from) FROM job_versions nv
				   WHERE nv.job_id = dv.job_id AND nv.version > dv.la), 'infinity'),
			coalesce((SELECT min((ev.spec -> 'schedule' ->> 'end')::timestamptz)
				    FROM job_versions ev
				   WHERE ev.job_id = dv.job_id AND ev.version >= dv.la), 'infinity'))
		 ORDER BY dv.job_id
	LOOP
		jobs := jobs + 1;
		lo := coalesce(b.watermark, b.since);
		-- the watermark stays at or below hold (an undecided instant, a cap),
		-- and at or below top, the end of the last window looked at
		hold := 'infinity';
		top := NULL;
		-- B's version windows above lo: version V owns the instants t with
		-- V.effective_from < t <= the next activated version's
		-- effective_from, and t before the `end` of V or of any newer
		-- version (a retirement: B was deleted at that end; t at or after
		-- it is not an instant of B).  Each instant is decided with the
		-- `after` list, partitions and priority of the version that owns
		-- it; a window of a version without `after` has no instants here.
		-- Read from the version that owns lo upwards (an index range of
		-- B's newest versions, a handful of rows).
		FOR v IN
			WITH vs AS (
				SELECT x.version, x.partitions, x.priority, x.spec, x.effective_from
				  FROM job_versions x
				 WHERE x.job_id = b.job_id
				   AND x.version >= coalesce((SELECT o.version FROM job_versions o
					WHERE o.job_id = b.job_id AND o.effective_from <= lo
					ORDER BY o.version DESC LIMIT 1), 0))
			SELECT a.* FROM (
				SELECT x.version, x.partitions, x.priority, x.spec -> 'after' AS deps,
				       x.effective_from AS wfrom,
				       coalesce(lead(x.effective_from) OVER (ORDER BY x.version),
						'infinity') AS wto,
				       coalesce((SELECT min((y.spec -> 'schedule' ->> 'end')::timestamptz)
						   FROM vs y WHERE y.version >= x.version),
						'infinity') AS wend
				  FROM vs x
				 WHERE x.effective_from IS NOT NULL) a
			 WHERE a.deps IS NOT NULL AND a.wto > lo AND a.wend > lo
			   AND a.wend > a.wfrom
			 ORDER BY a.version
		LOOP
			wlo := greatest(lo, v.wfrom);
			top := least(v.wto, v.wend);
			-- every upstream's instants are committed up to its shard's
			-- watermark, once it is active: a job stored but not activated
			-- yet is activated at its controller's tick's now, below that
			-- watermark, and plans from there in the same transaction; until
			-- then the window waits (no cap); so does it while an
			-- upstream whose active version has an `end` (a retired job)
			-- has a newer version awaiting activation: that version takes
			-- over below the watermark, at its apply, and plans the
			-- instants after it in its activating tick (the apply
			-- deleted the rows its retirement cancelled there)
			-- A dependent first upstream (one in its time with `after`, as
			-- the loop above picks B) has its triggers written by this
			-- function once its own upstreams ended, below its shard's
			-- watermark: its instants, B's candidates, are all there only
			-- up to its own dependency watermark (from its first version
			-- with `after` until it has one), which caps B's window
			-- instead; once that time is over (a version with a schedule
			-- took over, or a retirement), its shard's watermark does
			-- again.  Not so for a later upstream: its trigger at a
			-- candidate t is only looked up, and one not written yet
			-- leaves t waiting, then upstream_late once t + within is
			-- past (a held upstream never freezes B's other instants);
			-- a dependent upstream's upstream_* misfire at t counts as
			-- failed, as any upstream's misfire row does.
			SELECT CASE WHEN bool_and(s.watermark IS NOT NULL AND u.active_version IS NOT NULL
						  AND NOT (u.latest_version > u.active_version
							   AND EXISTS (SELECT 1 FROM job_versions av
								WHERE av.job_id = u.job_id
								  AND av.version = u.active_version
								  AND av.spec -> 'schedule' ? 'end')))
				    THEN min(least(s.watermark, coalesce(CASE WHEN d.ord = 1
						THEN ud.decided END, 'infinity'))) END
			  INTO cap
			  FROM jsonb_array_elements(v.deps) WITH ORDINALITY d(x, ord)
			  LEFT JOIN jobs u ON u.job_id = d.x ->> 'job'
			  LEFT JOIN shards s ON s.shard_id = u.shard
			  LEFT JOIN LATERAL (
				SELECT coalesce(uw.watermark, ua.since) AS decided
				  FROM (SELECT max(av.version) AS la, min(av.effective_from) AS since
					  FROM job_versions av
					 WHERE av.job_id = u.job_id AND av.spec ? 'after'
					   AND av.effective_from IS NOT NULL) ua
				  LEFT JOIN after_watermarks uw ON uw.job_id = u.job_id
				 WHERE ua.la IS NOT NULL
				   AND coalesce(uw.watermark, '-infinity') < least(
					coalesce((SELECT min(nv.effective_from) FROM job_versions nv
						   WHERE nv.job_id = u.job_id AND nv.version > ua.la),
						 'infinity'),
					coalesce((SELECT min((ev.spec -> 'schedule' ->> 'end')::timestamptz)
						    FROM job_versions ev
						   WHERE ev.job_id = u.job_id AND ev.version >= ua.la),
						 'infinity'))) ud ON true;
			-- and never past B's own shard's watermark: a version of B
			-- applied now is activated there, so an instant it will own is
			-- never decided by the version before it (least() skips a
			-- null: no cap stays no cap)
			IF cap IS NOT NULL THEN
				cap := least(cap, own);
			END IF;
			IF cap IS NULL OR cap <= wlo THEN
				hold := least(hold, wlo);
				CONTINUE;
			END IF;

			WITH deps AS (
				SELECT d.ord, d.x ->> 'job' AS up, d.x ->> 'on' AS on_state,
				       (d.x ->> 'within_ms')::bigint AS within_ms,
				       (SELECT min(fv.effective_from) FROM job_versions fv
					 WHERE fv.job_id = d.x ->> 'job') AS up_from,
				       (SELECT uv.partitions FROM jobs uj
					  JOIN job_versions uv ON uv.job_id = uj.job_id
					   AND uv.version = uj.active_version
					 WHERE uj.job_id = d.x ->> 'job') AS up_parts
				  FROM jsonb_array_elements(v.deps) WITH ORDINALITY d(x, ord)
			), cand AS (
				-- the window's instants: above lo and the version's
				-- activation, up to the cap and the next activation,
				-- before a retirement
				SELECT i.at, g.p
				  FROM (SELECT DISTINCT t.scheduled_at AS at FROM triggers t
					 WHERE t.job_id = (SELECT up FROM deps WHERE ord = 1)
					   AND t.request_id IS NULL
					   AND t.scheduled_at > wlo AND t.scheduled_at <= least(cap, v.wto)
					   AND t.scheduled_at < v.wend) i
				 CROSS JOIN generate_series(0, v.partitions - 1) g(p)
			), per_up AS (
				SELECT c.at, c.p, d.ord, d.up, d.within_ms, d.up_from,
				       CASE WHEN d.up_parts = v.partitions THEN 1
					    ELSE coalesce(d.up_parts, 1) END AS needed,
				       count(t.id) AS present,
				       -- an upstream row that ended other than succeeded
				       -- before its instant (cancelled while planned: by
				       -- `palisade cancel`, or by a retirement, whose rows
				       -- the job applied again deletes to plan the instant
				       -- anew) decides nothing until the instant came,
				       -- whichever `on`: B's instant is never decided before t
				       count(t.id) FILTER (WHERE t.state = 'succeeded' OR (d.on_state = 'finished'
					   AND t.state IN ('failed', 'cancelled', 'skipped')
					   AND t.scheduled_at <= clock_timestamp())) AS met,
				       min(t.id) FILTER (WHERE d.on_state = 'succeeded'
					   AND t.state IN ('failed', 'cancelled', 'skipped')
					   AND t.scheduled_at <= clock_timestamp()) AS failed_id,
				       min(t.id) FILTER (WHERE t.state NOT IN ('succeeded', 'failed',
					   'cancelled', 'skipped')) AS waiting_id,
				       count(t.id) FILTER (WHERE t.state = 'shadow') AS shadowed,
				       -- its nominal instant (045: NULL unless its spread or
				       -- jitter moved t; a 0.3.0 node's rows: NULL), read
				       -- from the rows the join reads anyway
				       max(t.nominal_at) AS nom
				  FROM cand c CROSS JOIN deps d
				  LEFT JOIN triggers t ON t.job_id = d.up AND t.request_id IS NULL
				       AND t.scheduled_at = c.at
				       AND (d.up_parts IS DISTINCT FROM v.partitions OR t.partition = c.p)
				 GROUP BY c.at, c.p, d.ord, d.up, d.within_ms, d.up_from, d.up_parts, d.on_state
			), judged AS (
				SELECT u.*,
				       CASE WHEN u.present = 0 AND u.at <= u.up_from THEN 'absent'
					    WHEN u.failed_id IS NOT NULL THEN 'failed'
					    WHEN u.present < u.needed AND EXISTS (
						SELECT 1 FROM misfires m
						 WHERE m.job_id = u.up AND m.range_from <= u.at
						   AND m.range_to >= u.at AND m.reason <> 'excluded'
						   AND (m.partition IS NULL OR u.needed > 1 OR m.partition = u.p))
					    THEN 'failed'
					    -- the old system's instant (shadow, never called
					    -- here): settled once a cut-over can no longer make
					    -- it live (its `at` is at most 1 s in the past)
					    WHEN u.shadowed > 0 AND u.met + u.shadowed >= u.needed
					    THEN CASE WHEN clock_timestamp() >= u.at + interval '5 seconds'
						      THEN 'shadow' ELSE 'waiting' END
					    WHEN u.met >= u.needed THEN 'met'
					    WHEN clock_timestamp() > u.at + u.within_ms * interval '1 ms'
					    THEN 'late'
					    ELSE 'waiting' END AS st
				  FROM per_up u
			), decided AS (
				SELECT j.at, j.p,
				       CASE WHEN bool_or(j.st = 'absent') THEN 'absent'
					    WHEN bool_or(j.st = 'failed') THEN 'upstream_failed'
					    WHEN bool_and(j.st IN ('met', 'shadow')) THEN 'ready'
					    WHEN bool_or(j.st = 'late') THEN 'upstream_late'
					    ELSE 'undecided' END AS verdict,
				       coalesce((array_agg(j.up ORDER BY j.ord) FILTER (WHERE j.st = 'failed'))[1],
						(array_agg(j.up ORDER BY j.ord) FILTER (WHERE j.st = 'late'))[1])
					   AS up_job,
				       bool_or(j.st = 'shadow') AS follows,
				       -- the first upstream's nominal instant: the old system
				       -- runs B's instant after that one
				       max(j.nom) FILTER (WHERE j.ord = 1) AS nom,
				       coalesce((array_agg(j.failed_id ORDER BY j.ord)
						     FILTER (WHERE j.st = 'failed'))[1],
						(array_agg(j.waiting_id ORDER BY j.ord)
						     FILTER (WHERE j.st = 'late'))[1]) AS up_trigger
				  FROM judged j
				 GROUP BY j.at, j.p
			), taken AS (
				-- decided earlier: a trigger or an upstream_* misfire already there
				SELECT d.*,
				       EXISTS (SELECT 1 FROM triggers t
						WHERE t.job_id = b.job_id AND t.request_id IS NULL
						  AND t.scheduled_at = d.at AND t.partition = d.p)
				       -- B's rows covering a partition are disjoint: only the
				       -- last one starting at or before the instant can hold it
				       OR EXISTS (SELECT 1 FROM (SELECT m.range_to FROM misfires m
						   WHERE m.job_id = b.job_id AND m.range_from <= d.at
						     AND m.reason IN ('upstream_failed', 'upstream_late')
						     AND (m.partition IS NULL OR m.partition = d.p)
						   ORDER BY m.range_from DESC LIMIT 1) m
						 WHERE m.range_to >= d.at) AS done
				  FROM decided d
			), ins AS (
				-- B deleted since (its instant before the deletion,
				-- decided after it): born pending and moved to
				-- cancelled through the door below, in this transaction,
				-- as the deletion cancels B's triggers not claimed yet;
				-- shadow as the planner decides it for B's own scopes,
				-- and after an upstream instant that the old system ran;
				-- with the first upstream's nominal instant, on which
				-- its liveness is judged (NULL: t itself)
				INSERT INTO triggers (job_id, version, scheduled_at, partition, source, priority,
						      due_at, shard, epoch, tenant, resource_group, job_ref, state,
						      nominal_at)
				SELECT b.job_id, v.version, d.at, d.p, 'schedule', v.priority, d.at, p_shard,
				       p_epoch, b.tenant, b.resource_group, b.ref,
				       CASE WHEN b.retired_at IS NOT NULL THEN 'pending'
					    WHEN d.follows THEN 'shadow'
					    WHEN NOT any_shadow THEN 'pending'
					    WHEN palisade_trigger_live(b.job_id, b.tenant, b.resource_group,
								       coalesce(d.nom, d.at))
					    THEN 'pending' ELSE 'shadow' END,
				       d.nom
				  FROM taken d
				 WHERE d.verdict = 'ready' AND NOT d.done
				ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING
				RETURNING id, scheduled_at
			), mis AS (
				INSERT INTO misfires (job_id, version, partition, range_from, range_to, count,
						      policy, reason, shard, epoch, upstream_job, upstream_trigger)
				SELECT b.job_id, v.version, d.p, d.at, d.at, 1, 'after', d.verdict, p_shard,
				       p_epoch, d.up_job, d.up_trigger
				  FROM taken d
				 WHERE d.verdict IN ('upstream_failed', 'upstream_late') AND NOT d.done
				RETURNING 1
			)
			SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM mis),
			       (SELECT min(at) FROM decided WHERE verdict = 'undecided'),
			       (SELECT array_agg(ins.id) FROM ins), (SELECT array_agg(ins.scheduled_at) FROM ins)
			  INTO n, n2, undecided, gone_ids, gone_ats;
			IF b.retired_at IS NOT NULL AND gone_ids IS NOT NULL THEN
				PERFORM palisade_trigger_move(gone_ids, gone_ats,
					array_fill('pending'::text, ARRAY[cardinality(gone_ids)]), 'cancelled');
			END IF;
			planned := planned + n;
			misfired := misfired + n2;
			IF undecided IS NOT NULL THEN
				hold := least(hold, undecided - interval '1 microsecond');
			ELSIF cap < top THEN
				hold := least(hold, cap);
			END IF;

			-- The window's first upstream's instants that have no trigger but
			-- lie in one of its planner's misfire ranges (any reason but
			-- excluded), decided per instant: a range may hold instants with
			-- triggers (a quarantined job re-records from below its shard's
			-- watermark, over its planned instants and its own earlier
			-- ranges; a resume's 'paused' and a forbid's 'overlap' lie wholly
			-- over triggers) and overlap ranges B has decided.  Each range is
			-- cut to the window (rf..rt: after the version's activation, up
			-- to the next one, before a retirement; not at B's watermark: a
			-- range that ends above the cap is taken whole once the cap
			-- passes it, though the watermark moved into it; what B decided
			-- below blocks).  Per range (oldest first, so a range recorded
			-- again meets B's rows for the older ones) and partition of B it
			-- maps to (the upstream's when the counts match, all of B's
			-- otherwise), what is already decided blocks: the upstream's
			-- trigger instants (the statement above decides those) and B's
			-- upstream_* rows.  The instants below the first and above the
			-- last block become B's upstream_failed rows; between blocks
			-- there is nothing left (decided in the order recorded), so a
			-- long range costs a few rows, not one per instant.  Instants are
			-- whole seconds: a part's ends are the cut range's own or one
			-- second inside a block.  Its count is the range's minus the
			-- instants known blocked, at most one per second of the part
			-- (exact when the range lies in the window and every block lies
			-- inside the range).
			FOR ur IN
				SELECT c.* FROM (
					SELECT um.id, um.count,
					       greatest(um.range_from, date_trunc('second', v.wfrom)
							+ interval '1 second') AS rf,
					       least(um.range_to, date_trunc('second', v.wto),
						     date_trunc('second', v.wend - interval '1 microsecond')) AS rt,
					       CASE WHEN um.partition IS NOT NULL AND (SELECT uv.partitions
						      FROM jobs uj JOIN job_versions uv ON uv.job_id = uj.job_id
						       AND uv.version = uj.active_version
						     WHERE uj.job_id = um.job_id) = v.partitions
						    THEN um.partition END AS bp
					  FROM misfires um
					 WHERE um.job_id = v.deps -> 0 ->> 'job' AND um.reason <> 'excluded'
					   AND um.count > 0 AND um.range_to > lo AND um.range_from <= top) c
				 WHERE c.rf <= c.rt AND c.rt > lo AND c.rt <= cap
				 ORDER BY c.id
			LOOP
				WITH tgt AS (
					SELECT coalesce(ur.bp, g.p) AS p
					  FROM generate_series(0, CASE WHEN ur.bp IS NULL THEN v.partitions - 1
								       ELSE 0 END) g(p)
				), ups AS (
					SELECT DISTINCT t.scheduled_at AS at FROM triggers t
					 WHERE t.job_id = v.deps -> 0 ->> 'job' AND t.request_id IS NULL
					   AND t.scheduled_at >= ur.rf AND t.scheduled_at <= ur.rt
				), blk AS (
					-- inner: the block lies inside the range and holds a known
					-- number of its instants (n)
					SELECT g.p, u.at AS bs, u.at AS be, 1 AS n FROM tgt g CROSS JOIN ups u
					UNION ALL
					-- B's rows covering a partition are disjoint: those that
					-- start in the range and the last one that starts before it
					-- (an index range, not every older row of B)
					SELECT g.p, o.range_from, o.range_to,
					       CASE WHEN o.range_from >= ur.rf AND o.range_to <= ur.rt
						     AND NOT EXISTS (SELECT 1 FROM ups u
							WHERE u.at BETWEEN o.range_from AND o.range_to)
						    THEN o.count ELSE 0 END
					  FROM tgt g CROSS JOIN LATERAL (
						SELECT o.range_from, o.range_to, o.count FROM misfires o
						 WHERE o.job_id = b.job_id
						   AND o.reason IN ('upstream_failed', 'upstream_late')
						   AND o.range_from >= ur.rf AND o.range_from <= ur.rt
						   AND (o.partition IS NULL OR o.partition = g.p)
						UNION ALL
						(SELECT o.range_from, o.range_to, o.count FROM misfires o
						  WHERE o.job_id = b.job_id
						    AND o.reason IN ('upstream_failed', 'upstream_late')
						    AND o.range_from < ur.rf
						    AND (o.partition IS NULL OR o.partition = g.p)
						  ORDER BY o.range_from DESC LIMIT 1)) o
					 WHERE o.range_to >= ur.rf
				), hull AS (
					SELECT g.p, min(k.bs) AS hs, max(k.be) AS he,
					       ur.count - coalesce(sum(k.n), 0) AS left_n
					  FROM tgt g LEFT JOIN blk k ON k.p = g.p
					   AND k.bs <= ur.rt AND k.be >= ur.rf
					 GROUP BY g.p
				), part AS (
					-- the part below the first block, the part above the last
					SELECT h.p, h.left_n, 1 AS side, ur.rf AS pf,
					       coalesce(date_trunc('second', h.hs - interval '1 microsecond'),
							ur.rt) AS pt
					  FROM hull h
					 WHERE h.hs IS NULL OR h.hs > ur.rf
					UNION ALL
					SELECT h.p, h.left_n, 2, date_trunc('second', h.he) + interval '1 second',
					       ur.rt
					  FROM hull h
					 WHERE h.he IS NOT NULL AND h.he < ur.rt
				), sized AS (
					SELECT x.*, extract(epoch FROM x.pt - x.pf)::bigint + 1 AS secs,
					       count(*) OVER (PARTITION BY x.p) AS parts
					  FROM part x
					 WHERE x.pf <= x.pt
				), lower_n AS (
					-- the lower part leaves at least one instant to the upper
					SELECT s.*, greatest(1, least(s.secs, s.left_n - (s.parts - 1))) AS n
					  FROM sized s
				), counted AS (
					SELECT s.p, s.pf, s.pt,
					       CASE WHEN s.side = 1 THEN s.n
						    ELSE greatest(1, least(s.secs, s.left_n - coalesce(lag(s.n)
							OVER (PARTITION BY s.p ORDER BY s.side), 0))) END AS n
					  FROM lower_n s
				), shared AS (
					-- a part alike in every partition of B is one row for all
					SELECT c.*, ur.bp IS NULL AND count(*) OVER (PARTITION BY c.pf, c.pt, c.n)
						= v.partitions AS all_p
					  FROM counted c
				)
				INSERT INTO misfires (job_id, version, partition, range_from, range_to, count,
						      policy, reason, shard, epoch, upstream_job)
				SELECT b.job_id, v.version, CASE WHEN s.all_p THEN NULL ELSE s.p END, s.pf,
				       s.pt, s.n, 'after', 'upstream_failed', p_shard, p_epoch,
				       v.deps -> 0 ->> 'job'
				  FROM shared s
				 WHERE NOT s.all_p OR s.p = 0;
				GET DIAGNOSTICS n = ROW_COUNT;
				misfired := misfired + n;
			END LOOP;
		END LOOP;

		-- B's watermark: just below its earliest undecided instant, never
		-- past a window's cap, at most the end of its last window with
		-- `after` (a window with no cap yet keeps it at that window's start)
		IF top IS NOT NULL AND least(hold, top) < 'infinity' THEN
			INSERT INTO after_watermarks AS w (job_id, watermark, shard, epoch)
			VALUES (b.job_id, greatest(lo, least(hold, top)), p_shard, p_epoch)
			ON CONFLICT (job_id) DO UPDATE
			   SET watermark = greatest(w.watermark, excluded.watermark), shard = excluded.shard,
			       epoch = excluded.epoch, updated_at = clock_timestamp();
		END IF;
	END LOOP;
END
$function$;
