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
--   * palisade_claim() calls it in place of the old statement (both in
--     sql/functions/).
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
-- New attempts partitions get it from palisade_partition_create().
