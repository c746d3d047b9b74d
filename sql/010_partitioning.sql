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
-- trigger and outgoing foreign key of the two tables from their
-- definitions, so columns added by earlier migrations (007:
-- outcome_unknown, status_queries) come along.  The functions that read
-- and maintain the partitions (palisade_partition_create(),
-- palisade_retention(), palisade_retention_horizon(), the attempts'
-- routing trigger) and the claim that writes attempts.scheduled_at are in
-- sql/functions/.

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
DROP TRIGGER IF EXISTS triggers_state_edges ON triggers;
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

CREATE TABLE triggers_pdefault PARTITION OF triggers DEFAULT
	WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,
	      autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0);
CREATE TABLE attempts_pdefault PARTITION OF attempts DEFAULT;

-- The first ranges: history (-infinity .. the start of today, UTC), today
-- and tomorrow.  The tables are empty here (the rows are copied below), so
-- each range is created as a partition directly; palisade_retention()
-- creates the later ones.  Storage parameters are those 001 gave triggers
-- (a partitioned table has none of its own: each partition gets them).
DO $$
DECLARE
	v_day timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
	r record;
BEGIN
	FOR r IN SELECT f, t, CASE WHEN f = '-infinity' THEN 'history'
	                           ELSE to_char(f AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MISS') END AS sfx
	           FROM (VALUES ('-infinity'::timestamptz, v_day), (v_day, v_day + interval '1 day'),
	                        (v_day + interval '1 day', v_day + interval '2 days')) v (f, t) LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF triggers FOR VALUES FROM (%L) TO (%L)'
			' WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.01,'
			' autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 0)',
			'triggers_p' || r.sfx, r.f, r.t);
		EXECUTE format('CREATE TABLE %I PARTITION OF attempts FOR VALUES FROM (%L) TO (%L)',
			'attempts_p' || r.sfx, r.f, r.t);
		INSERT INTO palisade_partitions (range_from, range_to, triggers_part, attempts_part)
		VALUES (r.f, r.t, 'triggers_p' || r.sfx, 'attempts_p' || r.sfx);
	END LOOP;
END
$$;

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

-- An attempt inserted without scheduled_at goes to the default partition,
-- whose trigger attempts_route (sql/functions/) routes it to its range.
ALTER TABLE attempts ADD CONSTRAINT attempts_trigger_fkey FOREIGN KEY (trigger_id, scheduled_at)
	REFERENCES triggers (id, scheduled_at);
CREATE INDEX triggers_open ON triggers (scheduled_at)
	WHERE state NOT IN ('succeeded', 'failed', 'cancelled', 'skipped');
