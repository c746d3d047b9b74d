-- 041_job_ref.sql - an integer reference to the job in every trigger row:
-- the expand half of the narrow trigger row (docs/upgrades.md, "The job
-- reference during a roll from 0.2.0").
--
-- compatible_from: 10
--
-- Expand only; neither table is rewritten and no index is built here:
--
--   jobs.ref          integer, unique, never reused: drawn from jobs_ref_seq
--                     by the column's default when a job is inserted, by
--                     any release (0.2.0's apply names no ref and gets the
--                     default).  The column is added without the default and
--                     given it afterwards: a volatile default in ADD COLUMN
--                     would rewrite the table under its exclusive lock; a
--                     default set later only applies to rows inserted from
--                     then on.  jobs that exist already get theirs from the
--                     backfill below.
--   triggers.job_ref  integer, nullable, no default: the job's ref.  Set by
--                     this release's writers in the INSERT itself; a row
--                     inserted without it (a 0.2.0 controller or operator
--                     command) gets it from the BEFORE INSERT trigger
--                     triggers_job_ref (sql/functions/), whose WHEN clause
--                     lets this release's rows through at the cost of one
--                     NULL test.
--
-- Locks: the migration is one transaction, and each ALTER TABLE takes
-- ACCESS EXCLUSIVE on its table until it commits; every statement here is
-- a catalog change (no read of a table, no rewrite), so they are held for
-- milliseconds, as the other expand steps' are.  triggers first, then jobs:
-- no table is held while the migration reads another.  The unique index on
-- jobs.ref (jobs_ref) is not built here: a build reads all of jobs, and in
-- this transaction it would hold jobs under ACCESS EXCLUSIVE for that read
-- (every shard load, apply, manual run and console page waiting).  The
-- backfill's runner builds it CONCURRENTLY once the jobs step has finished
-- (src/store/datafill.c); nothing in this release reads it, and until it
-- exists refs stay unique because each comes from jobs_ref_seq, once.
--
-- Existing rows are filled by palisade_backfill() (sql/functions/), in
-- batches of a few thousand rows, each its own transaction, jobs first
-- (every job must have its ref before the trigger rows can copy it), then
-- triggers, walking the primary key; palisade_backfills keeps where each
-- step is, so a stopped backfill goes on where it was.  `palisade migrate`
-- runs it to the end after the migrations, a node's retention round runs
-- some batches each round: whoever comes first.
ALTER TABLE triggers ADD COLUMN job_ref integer;

ALTER TABLE jobs ADD COLUMN ref integer;
CREATE SEQUENCE jobs_ref_seq AS integer OWNED BY jobs.ref;
ALTER TABLE jobs ALTER COLUMN ref SET DEFAULT nextval('jobs_ref_seq');

-- One row per backfill step, in the order they run (ord): cursor is where
-- the next batch starts (a job_id for jobs.ref, a trigger id for
-- triggers.job_ref); walked is set when the walk reached the end of the
-- table and the step's check (a call of its own) is next; finished_at is
-- set once the check found no row of the step without its value; fence is
-- the transaction id (txid_current()) of the call that finished the step:
-- the next step's check waits until every transaction older than it has
-- ended (palisade_backfill()).
CREATE TABLE palisade_backfills (
	step         text PRIMARY KEY,
	ord          integer NOT NULL UNIQUE,
	cursor       text NOT NULL,
	walked       boolean NOT NULL DEFAULT false,
	fence        bigint,
	filled       bigint NOT NULL DEFAULT 0,
	batches      integer NOT NULL DEFAULT 0,
	started_at   timestamptz,
	updated_at   timestamptz,
	finished_at  timestamptz
);
INSERT INTO palisade_backfills (step, ord, cursor) VALUES
	('jobs.ref', 1, ''),
	('triggers.job_ref', 2, '0');
