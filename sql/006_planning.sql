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
--   plan_has_exclude  whether plan_exclude is set
--
-- Adding them rewrites job_versions once.
--
-- job_versions_plan covers what a load reads of a version (all but the
-- rare exclusion list, fetched by primary key when plan_has_exclude), so a
-- load is an index-only scan of ~150 bytes a version instead of a scan of
-- ~1.3 KB rows - and of the dead ones an activation leaves behind: every
-- version row is rewritten once when it is activated, which doubled the
-- heap a load had to read (1M jobs: a restart's load 6 s before the
-- activations, 17 s after).
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
		     THEN spec #> '{schedule,exclude}' END) STORED,
	ADD COLUMN plan_has_exclude boolean GENERATED ALWAYS AS (
		coalesce(jsonb_array_length(spec #> '{schedule,exclude}') > 0, false)) STORED;

CREATE INDEX job_versions_plan ON job_versions (job_id, version)
	INCLUDE (effective_from, cron, timezone, misfire_policy, catchup_window_ms, max_catchup,
	         partitions, priority, resource_group, plan_tenant, plan_dst, plan_start, plan_end,
	         plan_has_exclude);
