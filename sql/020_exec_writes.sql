-- 020_exec_writes.sql - an executed trigger writes fewer index entries and
-- checks no foreign key (docs/schema.md; docs/performance.md, "Where a
-- fire's database work goes").
--
-- compatible_from: 1
--
-- Why: a profile of the PostgreSQL backends under the execution bench
-- (perf, cpu-clock) put 32 % of their CPU in index insertion and 8 % in
-- the foreign-key check of each new attempt.  A state change of a trigger
-- is never a HOT update (state is in the predicates of the partial
-- indexes), so every full index of `triggers` gets a new entry at the
-- claim (pending -> running) and again at the result (running ->
-- succeeded): the claim wrote 5 entries on `triggers`, the result 3, the
-- planning insert 6.  Now 3, 2 and 4:
--
-- 1. attempts loses its foreign key to triggers.  The key was checked once
--    per attempt: a lookup of the trigger and a FOR KEY SHARE lock of the
--    row that the same statement had just updated.  Attempts are written
--    only by palisade_claim(), from the rows it claims in that statement
--    (and moved between partitions of the same range by the maintenance,
--    with their trigger); a trigger and its attempts live in partitions of
--    the same range and are dropped together; nothing deletes a trigger
--    otherwise.  The default partition's routing trigger keeps its own
--    check.
-- 2. triggers_job_at (job_id, scheduled_at) goes.  It duplicated the plan
--    key (job_id, scheduled_at, partition) WHERE request_id IS NULL for
--    every scheduled trigger; a job's manual triggers are reached through
--    the request key (job_id, request_id, ...), and a job has few.
--    palisade_job_triggers() below reads a job's latest triggers through
--    both; the console, `palisade triggers --job`, the exporter's last
--    success and `palisade trigger`'s check of an instant use it or the
--    same two branches.
-- 3. triggers_open (scheduled_at) WHERE the state is not terminal held
--    every pending and running trigger; the maintenance used it to see
--    whether an old range still holds a live trigger.  It now holds the
--    rare live states only (retry_wait, unknown, pausing, paused,
--    cancelling, manual): a pending trigger is in triggers_pending_job and
--    a running one in triggers_live already, so palisade_partition_live()
--    counts a range's live triggers through those three.
--
-- Expand style: no column, argument or result changes; a binary of an
-- earlier schema runs on it (its reads of a job's triggers by time lose
-- their index, nothing else).

ALTER TABLE attempts DROP CONSTRAINT attempts_trigger_fkey;
DROP INDEX triggers_job_at;
DROP INDEX triggers_open;
CREATE INDEX triggers_open_rare ON triggers (scheduled_at)
	WHERE state IN ('retry_wait', 'unknown', 'pausing', 'paused', 'cancelling', 'manual');

-- A job's latest triggers (of one state, scheduled within [p_since,
-- p_until], where given), newest first, at most p_limit (NULL: all): the scheduled ones backwards along the plan key, the
-- manual ones through the request key.  STABLE and a single SELECT, so
-- the planner inlines it.
CREATE FUNCTION palisade_job_triggers(p_job text, p_limit integer,
	p_state text DEFAULT NULL, p_since timestamptz DEFAULT NULL,
	p_until timestamptz DEFAULT NULL)
RETURNS SETOF triggers LANGUAGE sql STABLE AS $fn$
	SELECT u.* FROM (
	    (SELECT t.* FROM triggers t WHERE t.job_id = p_job AND t.request_id IS NULL
	       AND (p_state IS NULL OR t.state = p_state)
	       AND (p_since IS NULL OR t.scheduled_at >= p_since)
	       AND (p_until IS NULL OR t.scheduled_at <= p_until)
	     ORDER BY t.scheduled_at DESC, t.partition, t.id LIMIT p_limit)
	    UNION ALL
	    (SELECT t.* FROM triggers t WHERE t.job_id = p_job AND t.request_id IS NOT NULL
	       AND (p_state IS NULL OR t.state = p_state)
	       AND (p_since IS NULL OR t.scheduled_at >= p_since)
	       AND (p_until IS NULL OR t.scheduled_at <= p_until)
	     ORDER BY t.scheduled_at DESC, t.partition, t.id LIMIT p_limit)) u
	ORDER BY u.scheduled_at DESC, u.partition, u.id LIMIT p_limit
$fn$;

-- The live (non-terminal) triggers of one partition of `triggers`: with
-- p_any, 1 as soon as one exists, else 0; otherwise their number.  Each
-- probe is implied by one partial index's predicate.
CREATE FUNCTION palisade_partition_live(p_part text, p_any boolean) RETURNS bigint
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
	v bigint;
BEGIN
	IF p_any THEN
		EXECUTE format('SELECT (EXISTS (SELECT 1 FROM %1$I WHERE state = ''pending'')'
			' OR EXISTS (SELECT 1 FROM %1$I WHERE state = ''running'')'
			' OR EXISTS (SELECT 1 FROM %1$I WHERE state IN (''retry_wait'', ''unknown'','
			' ''pausing'', ''paused'', ''cancelling'', ''manual'')))::int', p_part) INTO v;
	ELSE
		EXECUTE format('SELECT (SELECT count(*) FROM %1$I WHERE state = ''pending'')'
			' + (SELECT count(*) FROM %1$I WHERE state = ''running'')'
			' + (SELECT count(*) FROM %1$I WHERE state IN (''retry_wait'', ''unknown'','
			' ''pausing'', ''paused'', ''cancelling'', ''manual''))', p_part) INTO v;
	END IF;
	RETURN v;
END
$fn$;

-- palisade_retention() asks it in place of its three scans of a range
-- for a non-terminal state (whose index is gone).  Its body is otherwise
-- unchanged: edited in place, each statement checked to occur as often as
-- expected (`\sf palisade_retention` shows the whole function).
DO $do$
DECLARE
	v_any_old constant text := $old$EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I WHERE state NOT IN'
				' (''succeeded'', ''failed'', ''cancelled'', ''skipped''))', r.triggers_part)
				INTO v_work;$old$;
	v_cnt_old constant text := $old$EXECUTE format('SELECT count(*) FROM %I WHERE state NOT IN'$old$;
	v_def text := pg_get_functiondef('palisade_retention'::regproc);
	v_n integer;
BEGIN
	v_n := (length(v_def) - length(replace(v_def, v_any_old, ''))) / length(v_any_old);
	IF v_n <> 1 THEN
		RAISE EXCEPTION 'palisade_retention: expected the liveness probe of 010 once, found it % times', v_n;
	END IF;
	v_def := replace(v_def, v_any_old,
		'v_work := palisade_partition_live(r.triggers_part, true) = 0;');
	-- the two counts: "EXECUTE format('SELECT count(*) ... NOT IN' / ' (...)', part) INTO v_live;"
	v_n := (length(v_def) - length(replace(v_def, v_cnt_old, ''))) / length(v_cnt_old);
	IF v_n <> 2 THEN
		RAISE EXCEPTION 'palisade_retention: expected the live count of 010 twice, found it % times', v_n;
	END IF;
	v_def := regexp_replace(v_def,
		'EXECUTE format\(''SELECT count\(\*\) FROM %I WHERE state NOT IN''\s*'' \(''''succeeded'''', ''''failed'''', ''''cancelled'''', ''''skipped''''\)'', r\.triggers_part\)\s*INTO v_live;',
		'v_live := palisade_partition_live(r.triggers_part, false);', 'g');
	IF position('NOT IN' IN v_def) > 0 THEN
		RAISE EXCEPTION 'palisade_retention: a scan for a non-terminal state is left after the edit';
	END IF;
	EXECUTE v_def;
END
$do$;
