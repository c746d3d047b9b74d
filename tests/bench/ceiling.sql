-- tests/bench/ceiling.sql - scratch copies of `triggers` and `attempts` for
-- the PostgreSQL ceilings of `make bench` (tests/bench/run.sh): the same
-- columns, defaults, identity, checks, unique keys and partial indexes
-- (LIKE ... INCLUDING ALL, so an index added by a migration is copied too),
-- partitioned like them (sql/010: by scheduled_at, the same ranges as
-- palisade_partitions lists, a default partition, each partition with the
-- storage parameters of its original), every trigger of `triggers` (the G7
-- state guard, row-level or statement-level over transition tables) and the
-- foreign keys of `attempts`, re-pointed at the copy.  A ceiling on
-- unpartitioned copies missed what partitioning costs a statement.
-- Run after `palisade migrate` in the benchmark's own database.
DROP TABLE IF EXISTS bench_attempts, bench_triggers;
DROP SEQUENCE IF EXISTS bench_fence;
CREATE SEQUENCE bench_fence AS bigint START 1;
CREATE TABLE bench_triggers (LIKE triggers INCLUDING ALL) PARTITION BY RANGE (scheduled_at);
CREATE TABLE bench_attempts (LIKE attempts INCLUDING ALL) PARTITION BY RANGE (scheduled_at);
DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT i.inhrelid::regclass::text AS part, pg_get_expr(c.relpartbound, c.oid) AS bound,
	              p.relname AS parent, c.reloptions
	          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	          JOIN pg_class p ON p.oid = i.inhparent
	          WHERE p.relname IN ('triggers', 'attempts') LOOP
		EXECUTE format('CREATE TABLE %I PARTITION OF %I %s%s', 'bench_' || r.part,
		               'bench_' || r.parent, r.bound,
		               CASE WHEN r.reloptions IS NULL THEN ''
		                    ELSE ' WITH (' || array_to_string(r.reloptions, ', ') || ')' END);
	END LOOP;
END
$$;
DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT t.tgname, pg_get_triggerdef(t.oid) AS def FROM pg_trigger t
	          WHERE t.tgrelid = 'triggers'::regclass AND NOT t.tgisinternal LOOP
		EXECUTE replace(replace(r.def, ' ON public.triggers ', ' ON public.bench_triggers '),
		                'TRIGGER ' || r.tgname || ' ', 'TRIGGER bench_' || r.tgname || ' ');
	END LOOP;
	FOR r IN SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
	          WHERE conrelid = 'attempts'::regclass AND contype = 'f'
	            AND confrelid = 'triggers'::regclass LOOP
		EXECUTE format('ALTER TABLE bench_attempts ADD CONSTRAINT %I %s', 'bench_' || r.conname,
		               replace(r.def, 'REFERENCES triggers(', 'REFERENCES bench_triggers('));
	END LOOP;
END
$$;
