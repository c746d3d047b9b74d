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
--    palisade_job_triggers() (sql/functions/) reads a job's latest triggers through
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

-- palisade_job_triggers(), palisade_partition_live() and the retention
-- that asks the latter in place of its three scans of a range for a
-- non-terminal state (whose index is gone) are in sql/functions/.
