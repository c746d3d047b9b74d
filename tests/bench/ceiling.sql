-- tests/bench/ceiling.sql - scratch copies of `triggers` and `attempts` for
-- the PostgreSQL ceilings of `make bench` (tests/bench/run.sh): the same
-- columns, defaults, identity, checks, unique keys and partial indexes
-- (LIKE ... INCLUDING ALL, so an index added by a migration is copied too),
-- the same storage parameters, every trigger of `triggers` (the G7 state
-- guard, row-level or statement-level over transition tables) and the
-- foreign keys of `attempts`, re-pointed at the copy.
-- Run after `palisade migrate` in the benchmark's own database.
DROP TABLE IF EXISTS bench_attempts, bench_triggers;
DROP SEQUENCE IF EXISTS bench_fence;
CREATE SEQUENCE bench_fence AS bigint START 1;
CREATE TABLE bench_triggers (LIKE triggers INCLUDING ALL);
CREATE TABLE bench_attempts (LIKE attempts INCLUDING ALL);
DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT c.relname, c.reloptions FROM pg_class c
	          WHERE c.relname IN ('triggers', 'attempts') AND c.reloptions IS NOT NULL LOOP
		EXECUTE format('ALTER TABLE %I SET (%s)', 'bench_' || r.relname, array_to_string(r.reloptions, ', '));
	END LOOP;
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
