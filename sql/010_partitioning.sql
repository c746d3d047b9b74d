-- 010_partitioning.sql - bounded storage: triggers and attempts become
-- tables partitioned by range of the trigger's scheduled_at (PostgreSQL's
-- declarative partitioning), so that old history is dropped a partition at
-- a time instead of deleted row by row (docs/schema.md, "Retention").
--
-- Keys.  Every unique index of a partitioned table must contain the
-- partition key:
--   triggers PRIMARY KEY (id, scheduled_at)   ids stay unique (one identity
--       sequence); the pair is what attempts refer to.
--   triggers_plan_key (job_id, scheduled_at, partition) and
--   triggers_request_key (job_id, request_id, scheduled_at, partition)
--       contain scheduled_at already: G2 (one trigger per plan key) stays
--       enforced by the database, across partitions.
--   attempts.scheduled_at   new: a copy of its trigger's scheduled_at (the
--       claim writes it), the partition key of attempts, so that a trigger
--       and its attempts always sit in partitions of the same range and are
--       dropped together.
--   attempts (trigger_id, scheduled_at) REFERENCES triggers (id,
--       scheduled_at)   the old foreign key on trigger_id alone, widened.
--   attempts PRIMARY KEY (id, scheduled_at); attempts.fence keeps a plain
--       index (the result commit finds attempts by fence): it comes from
--       the palisade_fence sequence, which makes it unique, but a unique
--       index on fence alone cannot exist on a partitioned table.
--   tickets.trigger_id loses its foreign key (it named triggers (id)
--       alone): a resolved ticket may outlive its trigger's partition.
--
-- Partitions.  palisade_partitions lists them, one row per range, with the
-- names of the two tables of that range (triggers_pYYYYMMDD_HHMMSS and
-- attempts_p...); the conversion below puts every existing row into one
-- history range (-infinity .. the start of today, UTC) plus today's and
-- tomorrow's days; the default partitions (triggers_pdefault,
-- attempts_pdefault) catch an instant outside every range (a manual
-- trigger far in the future; a backfill older than the oldest range) and
-- are never dropped.  palisade_retention() creates ranges ahead and drops
-- old ones; `palisade retention` and every node call it (one at a time:
-- an advisory lock).
--
-- triggers_open (scheduled_at) WHERE the state is not terminal: how the
-- maintenance sees, through a small index, whether an old range still
-- holds a live trigger (such a range is kept, never dropped).
--
-- The conversion copies every row (ids kept), re-creates every index,
-- trigger (G7's triggers_state_edges) and outgoing foreign key of the two
-- tables from their definitions, so columns added by earlier migrations
-- (007: outcome_unknown, status_queries) come along.  palisade_claim() is
-- re-created at the end: 007's body with the attempt insert writing
-- scheduled_at, and the two updates that join a CTE to triggers by id
-- (the claim, the forbid-skips) also saying `t.id = ANY (...)`: without it
-- the planner hashed the CTE and scanned every partition of triggers
-- (EXPLAIN ANALYZE: a seq scan of all 20 000 rows for a 256-row claim);
-- with it each partition is probed through its primary key (duplicates
-- D1: migrations are immutable).

CREATE TABLE palisade_partitions (
	range_from     timestamptz NOT NULL,
	range_to       timestamptz NOT NULL,
	triggers_part  text NOT NULL UNIQUE,
	attempts_part  text NOT NULL UNIQUE,
	created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (range_from),
	CHECK (range_from < range_to)
);

CREATE TEMP TABLE p010_defs (kind text, def text) ON COMMIT DROP;

LOCK TABLE triggers, attempts IN ACCESS EXCLUSIVE MODE;

-- Definitions to re-create on the new tables: indexes (not the primary
-- keys, not attempts' unique fence), triggers, outgoing foreign keys.
INSERT INTO p010_defs
SELECT 'index', pg_get_indexdef(i.indexrelid) FROM pg_index i
 WHERE i.indrelid IN ('triggers'::regclass, 'attempts'::regclass) AND NOT i.indisprimary
   AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid
       AND c.conrelid = i.indrelid AND c.contype = 'u');
INSERT INTO p010_defs
SELECT 'trigger', pg_get_triggerdef(t.oid) FROM pg_trigger t
 WHERE t.tgrelid IN ('triggers'::regclass, 'attempts'::regclass) AND NOT t.tgisinternal;
INSERT INTO p010_defs
SELECT 'fkey', format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname,
       pg_get_constraintdef(c.oid))
  FROM pg_constraint c
 WHERE c.contype = 'f' AND c.conrelid IN ('triggers'::regclass, 'attempts'::regclass)
   AND c.confrelid <> 'triggers'::regclass;

-- Foreign keys that point at triggers (attempts', tickets') go.
DO $$
DECLARE c record;
BEGIN
	FOR c IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
	    WHERE contype = 'f' AND (confrelid = 'triggers'::regclass
	        OR conrelid IN ('triggers'::regclass, 'attempts'::regclass)) LOOP
		EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
	END LOOP;
	FOR c IN SELECT i.indexrelid::regclass AS idx FROM pg_index i
	    WHERE i.indrelid IN ('triggers'::regclass, 'attempts'::regclass) AND NOT i.indisprimary
	      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid
	          AND k.conrelid = i.indrelid) LOOP
		EXECUTE format('DROP INDEX %s', c.idx);
	END LOOP;
END
$$;
DROP TRIGGER triggers_state_edges ON triggers;
ALTER TABLE triggers RENAME TO triggers_pre010;
ALTER TABLE attempts RENAME TO attempts_pre010;
ALTER TABLE triggers_pre010 RENAME CONSTRAINT triggers_pkey TO triggers_pre010_pkey;
ALTER TABLE attempts_pre010 RENAME CONSTRAINT attempts_pkey TO attempts_pre010_pkey;
ALTER TABLE attempts_pre010 RENAME CONSTRAINT attempts_fence_key TO attempts_pre010_fence_key;

CREATE TABLE triggers (LIKE triggers_pre010 INCLUDING DEFAULTS INCLUDING CONSTRAINTS
	INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS,
	PRIMARY KEY (id, scheduled_at))
	PARTITION BY RANGE (scheduled_at);
CREATE TABLE attempts (LIKE attempts_pre010 INCLUDING DEFAULTS INCLUDING CONSTRAINTS
	INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS,
	scheduled_at timestamptz NOT NULL,
	PRIMARY KEY (id, scheduled_at))
	PARTITION BY RANGE (scheduled_at);

-- The partition pairs.  Storage parameters are those 001 gave triggers
-- (a partitioned table has none of its own: each partition gets them).
CREATE FUNCTION palisade_partition_create(p_from timestamptz, p_to timestamptz) RETURNS text
LANGUAGE plpgsql AS $fn$
DECLARE
	v_sfx text := CASE WHEN p_from = '-infinity' THEN 'history'
	                   ELSE to_char(p_from AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS') END;
	v_t text := 'triggers_p' || v_sfx;
	v_a text := 'attempts_p' || v_sfx;
	v_moved bigint;
BEGIN
	-- The two parents first, in the order every claim and commit takes
	-- them (triggers, then attempts): attaching a partition of a table that
	-- attempts refers to also locks attempts, and took it after a claim
	-- held attempts and waited for the new partition (a deadlock; the
	-- claim was the victim).
	LOCK TABLE triggers, attempts IN SHARE ROW EXCLUSIVE MODE;
	-- Rows the default partitions hold in this range move into the new
	-- pair (attaching over them would be refused): attempts first, so
	-- that no attempt refers to a moved trigger while neither new table is
	-- attached; attaching the attempts table then checks its foreign key.
	EXECUTE format('CREATE TABLE %I (LIKE triggers INCLUDING DEFAULTS INCLUDING CONSTRAINTS)'
		' WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,'
		' autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0)', v_t);
	EXECUTE format('CREATE TABLE %I (LIKE attempts INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_a);
	IF to_regclass('triggers_pdefault') IS NOT NULL THEN
		EXECUTE format('WITH m AS (DELETE FROM attempts_pdefault WHERE scheduled_at >= $1'
			' AND scheduled_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', v_a)
			USING p_from, p_to;
		EXECUTE format('WITH m AS (DELETE FROM triggers_pdefault WHERE scheduled_at >= $1'
			' AND scheduled_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM m', v_t)
			USING p_from, p_to;
		GET DIAGNOSTICS v_moved = ROW_COUNT;
		IF v_moved > 0 THEN
			RAISE LOG 'palisade retention: % triggers moved from the default partition into %',
				v_moved, v_t;
		END IF;
	END IF;
	EXECUTE format('ALTER TABLE triggers ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
		v_t, p_from, p_to);
	EXECUTE format('ALTER TABLE attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
		v_a, p_from, p_to);
	INSERT INTO palisade_partitions (range_from, range_to, triggers_part, attempts_part)
	VALUES (p_from, p_to, v_t, v_a);
	RETURN v_t;
END
$fn$;

CREATE TABLE triggers_pdefault PARTITION OF triggers DEFAULT
	WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,
	      autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
CREATE TABLE attempts_pdefault PARTITION OF attempts DEFAULT;

SELECT palisade_partition_create('-infinity', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC');
SELECT palisade_partition_create(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
	(date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC');
SELECT palisade_partition_create((date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC',
	(date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') AT TIME ZONE 'UTC');

INSERT INTO triggers OVERRIDING SYSTEM VALUE SELECT * FROM triggers_pre010;
INSERT INTO attempts OVERRIDING SYSTEM VALUE
SELECT a.*, t.scheduled_at FROM attempts_pre010 a JOIN triggers_pre010 t ON t.id = a.trigger_id;
SELECT setval(pg_get_serial_sequence('triggers', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM triggers), false);
SELECT setval(pg_get_serial_sequence('attempts', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM attempts), false);
DROP TABLE attempts_pre010;
DROP TABLE triggers_pre010;

DO $$
DECLARE d record;
BEGIN
	FOR d IN SELECT kind, def FROM p010_defs ORDER BY kind DESC LOOP
		EXECUTE replace(replace(d.def, 'triggers_pre010', 'triggers'), 'attempts_pre010', 'attempts');
	END LOOP;
END
$$;

CREATE INDEX attempts_fence ON attempts (fence);

-- An attempt inserted without scheduled_at (by hand, or by a tool written
-- before this migration; the claim always writes it) is routed to the
-- default partition, whose trigger inserts it again with its trigger's
-- scheduled_at into the right partition and drops the original.
CREATE FUNCTION palisade_attempt_route() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
	IF NEW.scheduled_at IS NOT NULL THEN
		RETURN NEW;
	END IF;
	NEW.scheduled_at := (SELECT t.scheduled_at FROM triggers t WHERE t.id = NEW.trigger_id);
	IF NEW.scheduled_at IS NULL THEN
		RAISE EXCEPTION 'attempt of trigger %: no such trigger', NEW.trigger_id
			USING ERRCODE = 'foreign_key_violation';
	END IF;
	INSERT INTO attempts OVERRIDING SYSTEM VALUE SELECT NEW.*;
	RETURN NULL;
END
$fn$;
CREATE TRIGGER attempts_route BEFORE INSERT ON attempts_pdefault
	FOR EACH ROW EXECUTE FUNCTION palisade_attempt_route();
ALTER TABLE attempts ADD CONSTRAINT attempts_trigger_fkey FOREIGN KEY (trigger_id, scheduled_at)
	REFERENCES triggers (id, scheduled_at);
CREATE INDEX triggers_open ON triggers (scheduled_at)
	WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped');

-- palisade_retention(interval, ahead, keep, lock_ms): one round of
-- partition maintenance, at most one at a time in the cluster (advisory
-- lock 7076/1; a second caller gets one row 'busy' and does nothing).
--   0. after a change of INTERVAL, the empty ranges at the end that have
--      not ended yet and have the old length are dropped ('reshaped'),
--      latest first, up to the first that holds a row;
--   1. ranges exist up to now + AHEAD, each INTERVAL long, aligned on
--      multiples of INTERVAL since the epoch (a gap left by a long stop
--      becomes one range up to the current interval);
--   2. a range that ended more than KEEP ago is dropped (its attempts
--      partition, then its triggers partition: DETACH then DROP) when it
--      holds no trigger in a non-terminal state; else it is kept and
--      reported ('kept', with the count of live triggers), and every later
--      round looks again.
-- A round with something to do takes ACCESS EXCLUSIVE on triggers and
-- attempts (in that order) before its first DDL, waiting at most LOCK_MS
-- (lock_timeout), so that it never queues claims behind it for long; a
-- round that could not lock reports 'busy' and the next one tries again.
-- Claims wait for the round's DDL (milliseconds).  A round with nothing
-- to drop or create takes no lock and only reports the kept ranges.
-- Rows: action (created, dropped, kept, busy, reshaped), partition (the triggers
-- table of the range), range_from, range_to, live (kept: live triggers),
-- bytes (dropped: what the two tables held).
CREATE FUNCTION palisade_retention(p_interval interval, p_ahead interval, p_keep interval,
	p_lock_ms integer)
RETURNS TABLE (action text, part text, range_from timestamptz, range_to timestamptz,
	live bigint, bytes bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
	v_hi timestamptz;
	v_now timestamptz := clock_timestamp();
	v_cur timestamptz;
	v_next timestamptz;
	r record;
	v_live bigint;
	v_bytes bigint;
	v_busy boolean;
	v_work boolean;
BEGIN
	IF p_interval < interval '1 second' OR p_keep < interval '0' OR p_ahead < interval '0' THEN
		RAISE EXCEPTION 'palisade_retention: interval must be at least 1 s, keep and ahead not negative'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT pg_try_advisory_xact_lock(7076, 1) THEN
		RETURN QUERY SELECT 'busy'::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
			NULL::bigint, NULL::bigint;
		RETURN;
	END IF;
	PERFORM set_config('lock_timeout', p_lock_ms || 'ms', true);

	-- Anything to do?  Read without locks; then, if so, both parents are
	-- locked at once, in the order of the claims and commits (triggers,
	-- then attempts), before any DDL: taking a weaker lock for one step
	-- and a stronger one for the next deadlocked with the claims queued
	-- in between.  Liveness is checked again under the lock.
	v_cur := date_bin(p_interval, v_now, timestamptz '1970-01-01 00:00:00+00');
	SELECT max(p.range_to) INTO v_hi FROM palisade_partitions p;
	v_work := v_hi IS NULL OR v_hi < v_now + p_ahead;
	FOR r IN SELECT p.* FROM palisade_partitions p ORDER BY p.range_from DESC LOOP
		EXIT WHEN v_work;
		IF r.range_to > v_now AND r.range_to - r.range_from <> p_interval THEN
			EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I) AND NOT EXISTS (SELECT 1 FROM %I)',
				r.triggers_part, r.attempts_part) INTO v_work;
		ELSIF r.range_to <= v_now - p_keep THEN
			EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I WHERE state NOT IN'
				' (''succeeded'', ''failed'', ''cancelled'', ''skipped''))', r.triggers_part)
				INTO v_work;
		END IF;
	END LOOP;
	IF NOT v_work THEN
		-- report the ranges kept for their live triggers, change nothing
		FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to <= v_now - p_keep
		    ORDER BY p.range_from LOOP
			EXECUTE format('SELECT count(*) FROM %I WHERE state NOT IN'
				' (''succeeded'', ''failed'', ''cancelled'', ''skipped'')', r.triggers_part)
				INTO v_live;
			RETURN QUERY SELECT 'kept'::text, r.triggers_part, r.range_from, r.range_to, v_live,
				NULL::bigint;
		END LOOP;
		RETURN;
	END IF;
	BEGIN
		LOCK TABLE triggers, attempts IN ACCESS EXCLUSIVE MODE;
	EXCEPTION WHEN lock_not_available THEN
		RETURN QUERY SELECT 'busy'::text, NULL::text, NULL::timestamptz, NULL::timestamptz,
			NULL::bigint, NULL::bigint;
		RETURN;
	END;

	-- 0. a new interval: the latest ranges that have not ended, hold no
	-- row and are not INTERVAL long go (latest first, so no gap opens), and
	-- step 1 makes them again with the new length.
	FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to > v_now
	    ORDER BY p.range_from DESC LOOP
		EXIT WHEN r.range_to - r.range_from = p_interval;
		EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I) OR EXISTS (SELECT 1 FROM %I)',
			r.triggers_part, r.attempts_part) INTO v_busy;
		EXIT WHEN v_busy;
		BEGIN
			LOCK TABLE triggers, attempts IN ACCESS EXCLUSIVE MODE;
			EXECUTE format('DROP TABLE %I', r.attempts_part);
			EXECUTE format('ALTER TABLE triggers DETACH PARTITION %I', r.triggers_part);
			EXECUTE format('DROP TABLE %I', r.triggers_part);
			DELETE FROM palisade_partitions p WHERE p.range_from = r.range_from;
			RETURN QUERY SELECT 'reshaped'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
			EXIT;
		END;
	END LOOP;

	-- 1. ahead
	v_cur := date_bin(p_interval, v_now, timestamptz '1970-01-01 00:00:00+00');
	SELECT max(p.range_to) INTO v_hi FROM palisade_partitions p;
	IF v_hi IS NULL THEN
		v_hi := v_cur;
	ELSIF v_hi < v_cur THEN
		BEGIN
			PERFORM palisade_partition_create(v_hi, v_cur);
			RETURN QUERY SELECT 'created'::text, p.triggers_part, p.range_from, p.range_to,
				NULL::bigint, NULL::bigint FROM palisade_partitions p WHERE p.range_from = v_hi;
			v_hi := v_cur;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, NULL::text, v_hi, v_cur, NULL::bigint, NULL::bigint;
			v_hi := 'infinity';
		END;
	END IF;
	WHILE v_hi < v_now + p_ahead LOOP
		v_next := date_bin(p_interval, v_hi, timestamptz '1970-01-01 00:00:00+00') + p_interval;
		BEGIN
			PERFORM palisade_partition_create(v_hi, v_next);
			RETURN QUERY SELECT 'created'::text, p.triggers_part, p.range_from, p.range_to,
				NULL::bigint, NULL::bigint FROM palisade_partitions p WHERE p.range_from = v_hi;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, NULL::text, v_hi, v_next, NULL::bigint, NULL::bigint;
			EXIT;
		END;
		v_hi := v_next;
	END LOOP;

	-- 2. old ranges
	FOR r IN SELECT p.* FROM palisade_partitions p WHERE p.range_to <= v_now - p_keep
	    ORDER BY p.range_from LOOP
		EXECUTE format('SELECT count(*) FROM %I WHERE state NOT IN'
			' (''succeeded'', ''failed'', ''cancelled'', ''skipped'')', r.triggers_part)
			INTO v_live;
		IF v_live > 0 THEN
			RAISE LOG 'palisade retention: % kept, % live triggers', r.triggers_part, v_live;
			RETURN QUERY SELECT 'kept'::text, r.triggers_part, r.range_from, r.range_to, v_live,
				NULL::bigint;
			CONTINUE;
		END IF;
		BEGIN
			v_bytes := pg_total_relation_size(r.triggers_part::regclass)
				+ pg_total_relation_size(r.attempts_part::regclass);
			LOCK TABLE triggers, attempts IN ACCESS EXCLUSIVE MODE;
			EXECUTE format('DROP TABLE %I', r.attempts_part);
			EXECUTE format('ALTER TABLE triggers DETACH PARTITION %I', r.triggers_part);
			EXECUTE format('DROP TABLE %I', r.triggers_part);
			DELETE FROM palisade_partitions p WHERE p.range_from = r.range_from;
			RETURN QUERY SELECT 'dropped'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, v_bytes;
		EXCEPTION WHEN lock_not_available THEN
			RETURN QUERY SELECT 'busy'::text, r.triggers_part, r.range_from, r.range_to,
				NULL::bigint, NULL::bigint;
		END;
	END LOOP;
END
$fn$;

-- The retention horizon: instants before it may have been dropped
-- (`palisade verify` refuses a range that starts before it).  NULL while
-- nothing was ever dropped.
CREATE FUNCTION palisade_retention_horizon() RETURNS timestamptz
LANGUAGE sql STABLE AS $$
	SELECT CASE WHEN min(p.range_from) = '-infinity' THEN NULL ELSE min(p.range_from) END
	  FROM palisade_partitions p
$$;

-- The claim of 007, the attempt rows now carrying their trigger's scheduled_at.
CREATE OR REPLACE FUNCTION palisade_claim(
	p_node text, p_lease_ms integer, p_limit integer, p_ahead_ms integer,
	p_open_hosts text[],
	p_groups text[], p_group_node integer[], p_group_cluster integer[],
	p_tenants text[], p_tenant_cap integer[], p_tenant_weight double precision[])
RETURNS TABLE (id bigint, fence bigint, job_id text, version integer, at bigint, part integer,
	request_id text, attempt integer, prev_state text, prev_err text, checkpoint text,
	tenant text, resource_group text, ready_ms bigint, skipped integer, next_ms bigint,
	unknown boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
	v_skipped integer := 0;
	v_cand palisade_claim_cand[];
	v_held text[];
	v_horizon timestamptz := clock_timestamp() + p_ahead_ms * interval '1 millisecond';
	v_next timestamptz;
	v_simple boolean;
	v_pick bigint[];
	v_skip text[];
BEGIN
	-- 0. this node is a live executor (seen_at, written at most every 2 s),
	-- and the jobs it cannot render for now.
	IF NOT EXISTS (SELECT 1 FROM executor_nodes n WHERE n.node = p_node
	    AND n.seen_at > clock_timestamp() - interval '2 s') THEN
		INSERT INTO executor_nodes AS n (node, seen_at) VALUES (p_node, clock_timestamp())
		ON CONFLICT (node) DO UPDATE SET seen_at = excluded.seen_at;
	END IF;
	v_skip := ARRAY(SELECT s.job_id FROM render_skips s WHERE s.node = p_node
	    AND s.until > clock_timestamp());

	-- 1. forbid-skips, driven from the few live runs.
	WITH live AS (SELECT l.id, l.job_id, l.partition FROM triggers l
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
	GET DIAGNOSTICS v_skipped = ROW_COUNT;

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
	SELECT ARRAY(
	    SELECT ROW(c.id, c.tenant, c.resource_group, c.job_id, c.partition, c.overlap_policy,
	        c.max_in_flight, c.ready_at,
	        c.priority + floor(extract(epoch FROM clock_timestamp() - c.ready_at) / 10), false
	      )::palisade_claim_cand
	    FROM ten, gated, sat, LATERAL (
	        SELECT x.id, x.tenant, x.resource_group, x.job_id, x.partition, v.overlap_policy,
	          v.max_in_flight, coalesce(x.next_attempt_at, x.due_at) AS ready_at, x.priority
	        FROM triggers x JOIN job_versions v ON v.job_id = x.job_id AND v.version = x.version
	        WHERE x.tenant = ten.tenant AND x.state IN ('pending', 'retry_wait', 'unknown')
	          AND coalesce(x.next_attempt_at, x.due_at) <= v_horizon
	          AND x.job_id <> ALL (gated.jobs) AND x.resource_group <> ALL (gated.grps)
	          AND x.job_id <> ALL (v_skip)
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
	        FOR UPDATE OF x SKIP LOCKED) c)
	  || ARRAY(
	    SELECT ROW(t.id, t.tenant, t.resource_group, t.job_id, t.partition, v.overlap_policy,
	        v.max_in_flight, t.lease_until, t.priority::double precision, true)::palisade_claim_cand
	    FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version
	    WHERE t.state = 'running' AND t.lease_until < clock_timestamp()
	      AND NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
	        'job:' || t.job_id, 'group:' || t.resource_group, 'tenant:' || t.tenant))
	      AND v.target_host <> ALL (p_open_hosts) AND t.job_id <> ALL (v_skip)
	    LIMIT p_limit
	    FOR UPDATE OF t SKIP LOCKED)
	INTO v_cand;

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
	IF coalesce(v_simple, true) THEN
	WITH pick AS (SELECT c.id FROM unnest(v_cand) c
	    WHERE NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
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
	      AND NOT EXISTS (SELECT 1 FROM gates g WHERE g.paused AND g.scope IN ('global',
	        'job:' || c.job_id, 'group:' || c.resource_group, 'tenant:' || c.tenant))),
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

	-- The picked candidates become running with a new token and lease, get
	-- their attempt rows, and replace the live runs of `replace` jobs.
	RETURN QUERY
	WITH prev AS (SELECT t.id, t.state AS prev_state, coalesce(t.last_error_class, '') AS prev_err
	    FROM triggers t WHERE t.id = ANY (v_pick)),
	  upd AS (UPDATE triggers t SET state = 'running', fence = nextval('palisade_fence'),
	      lease_owner = p_node,
	      lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond',
	      attempt_count = t.attempt_count + 1, updated_at = clock_timestamp()
	    FROM prev WHERE t.id = prev.id AND t.id = ANY (v_pick)
	    RETURNING t.id, t.fence, t.job_id, t.version,
	      floor(extract(epoch FROM t.scheduled_at))::bigint AS at, t.partition,
	      coalesce(t.request_id, '') AS request_id, t.attempt_count, prev.prev_state, prev.prev_err,
	      t.checkpoint::text AS checkpoint, t.tenant, t.resource_group,
	      floor(extract(epoch FROM coalesce(t.next_attempt_at, t.due_at)) * 1000)::bigint AS ready_ms,
	      t.outcome_unknown, t.scheduled_at),
	  att AS (INSERT INTO attempts (trigger_id, fence, node, scheduled_at)
	    SELECT upd.id, upd.fence, p_node, upd.scheduled_at FROM upd),
	  rep AS (UPDATE triggers t SET state = 'cancelling', last_error_class = 'replaced'
	    FROM (SELECT DISTINCT upd.job_id, upd.partition FROM upd
	        JOIN unnest(v_cand) c ON c.id = upd.id WHERE c.ov = 'replace') r
	    WHERE t.job_id = r.job_id AND t.partition = r.partition AND t.state = 'running'
	      AND t.id <> ALL (v_pick))
	SELECT upd.id, upd.fence, upd.job_id, upd.version, upd.at, upd.partition, upd.request_id,
	  upd.attempt_count, upd.prev_state, upd.prev_err, upd.checkpoint, upd.tenant,
	  upd.resource_group, upd.ready_ms, NULL::integer, NULL::bigint, upd.outcome_unknown
	FROM upd ORDER BY upd.id;

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
$fn$;

-- CREATE OR REPLACE resets the settings 007 gave the function.
ALTER FUNCTION palisade_claim SET enable_sort = off;
ALTER FUNCTION palisade_claim SET enable_bitmapscan = off;
