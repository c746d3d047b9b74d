-- 015_forbid_skips.sql - the claim's forbid-skips no longer read the
-- triggers table from its start; the completion of an attempt can be a
-- HOT update.
--
-- compatible_from: 10
--
-- Why (docs/performance.md, "Plans on queue tables"):
-- step 1 of palisade_claim() (skip the pending instants of a `forbid` job
-- while one of its runs is live) was meant to be driven from the few live
-- runs, but its generic plan scanned the pending triggers of the current
-- partition sequentially and joined them to the forbid versions.  A
-- partition's heap holds every trigger of its day in planning order, the
-- finished ones first, so each claim read every trigger finished so far
-- that day before it reached a pending one: 42 ms per claim after 24,000
-- triggers (auto_explain, "Rows Removed by Filter: 23878"), growing all
-- day, whether or not any job was `forbid`.
--
-- Now:
--   * job_versions_forbid, a partial index of the versions whose overlap
--     policy is forbid (few, usually none);
--   * triggers_pending_job (job_id, partition) WHERE state = 'pending':
--     a job's pending instants without reading its history (one entry per
--     planned trigger, removed by the next vacuum once it is claimed).
--     Building it reads every partition once and holds off writes to
--     triggers meanwhile: seconds per million triggers;
--   * palisade_claim_forbid_skips(): nothing at all unless such a version
--     exists; else from each live run of a job that has one (the live
--     partial index, then the small index) to that job's pending
--     triggers (the new index); the rows it skips and the misfires it
--     records are those of the old statement;
--   * palisade_claim() calls it in place of the old statement.  Its body
--     is otherwise unchanged: it is edited in place (the statement replaced
--     by the call, checked to occur exactly once) rather than copied here a
--     fourth time; `\sf palisade_claim` shows the whole function.
--     pg_get_functiondef keeps the function's settings (enable_sort,
--     enable_bitmapscan, plan_cache_mode).
--   * attempts partitions get fillfactor 70, existing ones for their new
--     pages, new ones from palisade_partition_create(): the update that
--     ends an attempt (outcome, status, duration, key) changes no indexed
--     column, so with room on its page it is a HOT update and writes no
--     index entry (three per attempt before).
--
-- Expand style: the claim's arguments and result are unchanged; a binary
-- of schema 10 calls it as before.

CREATE INDEX job_versions_forbid ON job_versions (job_id) WHERE overlap_policy = 'forbid';
CREATE INDEX triggers_pending_job ON triggers (job_id, partition) WHERE state = 'pending';

CREATE FUNCTION palisade_claim_forbid_skips() RETURNS integer
LANGUAGE plpgsql VOLATILE AS $fn$
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
	  victims AS (SELECT x.id FROM live l, LATERAL (SELECT t.id FROM triggers t
	      JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version
	      WHERE t.job_id = l.job_id AND t.partition = l.partition AND t.id <> l.id
	        AND v.overlap_policy = 'forbid' AND t.state = 'pending' AND t.request_id IS NULL
	        AND t.due_at <= clock_timestamp()
	      OFFSET 0
	      FOR UPDATE OF t SKIP LOCKED) x),
	  sk AS (UPDATE triggers t SET state = 'skipped', finished_at = clock_timestamp(),
	      last_error_class = 'overlap'
	    FROM (SELECT DISTINCT victims.id FROM victims) w
	    WHERE t.id = w.id AND t.state = 'pending'
	      AND t.id = ANY (ARRAY(SELECT v.id FROM victims v))
	    RETURNING t.job_id, t.version, t.scheduled_at, t.partition, t.shard, t.epoch)
	INSERT INTO misfires (job_id, version, partition, range_from, range_to, count, policy,
	    reason, shard, epoch)
	SELECT sk.job_id, sk.version, sk.partition, sk.scheduled_at, sk.scheduled_at, 1, 'forbid',
	    'overlap', sk.shard, sk.epoch FROM sk;
	GET DIAGNOSTICS v_skipped = ROW_COUNT;
	RETURN v_skipped;
END
$fn$;
ALTER FUNCTION palisade_claim_forbid_skips SET enable_sort = off;
-- Index-driven by design: a generic plan cannot know that one job has few
-- pending instants, and with statistics that say "mostly pending" it chose
-- to read the partition for them.
ALTER FUNCTION palisade_claim_forbid_skips SET enable_seqscan = off;
ALTER FUNCTION palisade_claim_forbid_skips SET plan_cache_mode = force_generic_plan;

DO $do$
DECLARE
	v_old constant text := $old$WITH live AS (SELECT l.id, l.job_id, l.partition FROM triggers l
	    WHERE l.state IN ('running', 'pausing', 'cancelling', 'unknown')),
	  victims AS (SELECT t.id FROM triggers t JOIN live l
	      ON t.job_id = l.job_id AND t.partition = l.partition AND t.id <> l.id
	    JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version
	    WHERE v.overlap_policy = 'forbid' AND t.state = 'pending' AND t.request_id IS NULL
	      AND t.due_at <= clock_timestamp()
	    FOR UPDATE OF t SKIP LOCKED),
	  sk AS (UPDATE triggers t SET state = 'skipped', finished_at = clock_timestamp(),
	      last_error_class = 'overlap'
	    FROM victims WHERE t.id = victims.id AND t.state = 'pending'
	      AND t.id = ANY (ARRAY(SELECT v.id FROM victims v))
	    RETURNING t.job_id, t.version, t.scheduled_at, t.partition, t.shard, t.epoch)
	INSERT INTO misfires (job_id, version, partition, range_from, range_to, count, policy,
	    reason, shard, epoch)
	SELECT sk.job_id, sk.version, sk.partition, sk.scheduled_at, sk.scheduled_at, 1, 'forbid',
	    'overlap', sk.shard, sk.epoch FROM sk;
	GET DIAGNOSTICS v_skipped = ROW_COUNT;$old$;
	v_def text := pg_get_functiondef('palisade_claim'::regproc);
	v_n integer := (length(v_def) - length(replace(v_def, v_old, ''))) / length(v_old);
BEGIN
	IF v_n <> 1 THEN
		RAISE EXCEPTION 'palisade_claim: expected the forbid-skip statement of 010 once, found it % times', v_n;
	END IF;
	EXECUTE replace(v_def, v_old, 'v_skipped := palisade_claim_forbid_skips();');
END
$do$;

-- Attempts: room for the completing update on the attempt's own page.
DO $do$
DECLARE r record;
BEGIN
	FOR r IN SELECT attempts_part FROM palisade_partitions LOOP
		EXECUTE format('ALTER TABLE %I SET (fillfactor = 70)', r.attempts_part);
	END LOOP;
END
$do$;
ALTER TABLE attempts_pdefault SET (fillfactor = 70);

DO $do$
DECLARE
	v_old constant text := $old$EXECUTE format('CREATE TABLE %I (LIKE attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_a);$old$;
	v_def text := pg_get_functiondef('palisade_partition_create'::regproc);
	v_n integer := (length(v_def) - length(replace(v_def, v_old, ''))) / length(v_old);
BEGIN
	IF v_n <> 1 THEN
		RAISE EXCEPTION 'palisade_partition_create: expected the attempts CREATE TABLE of 010 once, found it % times', v_n;
	END IF;
	EXECUTE replace(v_def, v_old, $new$EXECUTE format('CREATE TABLE %I (LIKE attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
		' WITH (fillfactor = 70)', v_a);$new$);
END
$do$;
