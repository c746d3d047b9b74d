-- 006_planning.sql - the planning fields of a job version as columns.
--
-- A controller that acquires a shard reads, per job version, what the
-- planner needs (src/store/plan.c, pal_store_shard_jobs).  Most of it has
-- been a column since 001 (cron, timezone, misfire policy, catch-up, priority,
-- partitions, group); the rest - tenant, DST policy, start, end, excluded
-- dates - lived only inside the canonical spec (jsonb, ~0.9 KB per version),
-- and extracting it cost more than the rest of the load together (1M
-- versions: several seconds of jsonb path lookups).  These generated columns
-- are computed by PostgreSQL from the spec when a version is inserted, so
-- `apply` writes nothing new and they cannot disagree with the spec.
--
--   plan_tenant   the spec's tenant
--   plan_dst      NULL for the `auto` policy, else "gap=G,overlap=O" (the
--                 syntax of pal_dst_policy_parse)
--   plan_start    schedule.start, RFC 3339 UTC, or NULL
--   plan_end      schedule.end, likewise
--   plan_exclude  schedule.exclude (array of "YYYY-MM-DD" or
--                 "YYYY-MM-DD..YYYY-MM-DD"), NULL when empty
--
-- Adding them rewrites job_versions once.
ALTER TABLE job_versions
	ADD COLUMN plan_tenant text GENERATED ALWAYS AS (spec ->> 'tenant') STORED,
	ADD COLUMN plan_dst text GENERATED ALWAYS AS (
		CASE WHEN spec #> '{schedule,dst,auto}' IS NULL
		     THEN 'gap=' || (spec #>> '{schedule,dst,gap}') ||
		          ',overlap=' || (spec #>> '{schedule,dst,overlap}') END) STORED,
	ADD COLUMN plan_start text GENERATED ALWAYS AS (spec #>> '{schedule,start}') STORED,
	ADD COLUMN plan_end text GENERATED ALWAYS AS (spec #>> '{schedule,end}') STORED,
	ADD COLUMN plan_exclude jsonb GENERATED ALWAYS AS (
		CASE WHEN jsonb_array_length(spec #> '{schedule,exclude}') > 0
		     THEN spec #> '{schedule,exclude}' END) STORED;
