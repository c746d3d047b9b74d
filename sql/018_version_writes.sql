-- 018_version_writes.sql - a version row costs apply less to write
-- (docs/schema.md; docs/performance.md, "Where a fire's database work
-- goes").
--
-- compatible_from: 1
--
-- 1. job_versions loses its foreign key to jobs.  The key was checked once
--    per inserted version: a lookup of the jobs row and a FOR KEY SHARE
--    lock on it, which writes WAL and dirties the jobs page, for a row that
--    apply inserted or locked a moment before in the same transaction.
--    Versions are only written by apply (delete and apply --prune go
--    through the same code), always after the job's row, and nothing
--    deletes a jobs row, so the key could never fire.  Dropped as the one
--    from triggers was (010).
-- 2. One index on (job_id, version) instead of two: the primary key takes
--    over the covering columns of job_versions_plan (006), which had the
--    same key.  Each inserted version, and each activation (a non-HOT
--    update: effective_from is covered), wrote two index entries; now one.
--    Lookups by key and the controller's index-only load use the one
--    index.  The new index is built under a SHARE lock (readers go on,
--    writers wait: ~9 s at 1,000,000 versions), the swap is a moment.
--
-- Every binary works with or without either change: compatible_from 1.
ALTER TABLE job_versions DROP CONSTRAINT IF EXISTS job_versions_job_id_fkey;
CREATE UNIQUE INDEX job_versions_key ON job_versions (job_id, version)
	INCLUDE (effective_from, cron, timezone, misfire_policy, catchup_window_ms, max_catchup,
	         partitions, priority, resource_group, plan_tenant, plan_dst, plan_start, plan_end,
	         plan_has_exclude);
ALTER TABLE job_versions DROP CONSTRAINT job_versions_pkey,
	ADD CONSTRAINT job_versions_pkey PRIMARY KEY USING INDEX job_versions_key;
DROP INDEX job_versions_plan;
