-- 022_claim_version_lookup.sql - the claim looks up each candidate's job
-- version by its key, whatever the number of jobs.
--
-- compatible_from: 1
--
-- Why (docs/performance.md, "Plans on queue tables"):
-- palisade_claim() read its candidates as `triggers x JOIN
-- job_versions v ON v.job_id = x.job_id AND v.version = x.version`.  Its
-- plans are generic (011) and estimate the candidate side at one row, so
-- the planner could pick a nested loop over a Materialize of every job
-- version (read whole by the primary key, seqscans being off, 021) and
-- test each candidate against all of them in a join filter.  Seen in the
-- soak of the bench, 5,000 jobs firing every second: "Rows Removed by Join
-- Filter: 1,305,938" for 512 candidates, 116 ms (p50) per candidate read,
-- two claim backends at 73 % of a core each, and every vacuum or other
-- hiccup of the box then put the claims seconds behind.  A claim's cost
-- grew with the number of registered jobs.
--
-- The version of a candidate is now a LATERAL lookup with LIMIT 1 (the key
-- is unique, so the rows are the same): the planner cannot flatten it into
-- a join, and each candidate costs one probe of job_versions_pkey.  The
-- same for the expired-lease candidates.
--
-- Those were found by `t.lease_until < clock_timestamp()`: a volatile
-- function is no index condition, so every claim read every entry of the
-- lease index (all running triggers, and the entries of their old
-- versions until a vacuum) and filtered them: 36.9 ms and "Rows Removed by
-- Filter: 62,720" in one claim of the same run.  statement_timestamp() (the
-- start of the claim's call, stable within it) is an index condition: the
-- scan reads only leases that expired before the call.  The function is edited in place
-- (its settings and everything else kept); the migration fails rather than
-- guess if the text it replaces is not there exactly once.
DO $do$
DECLARE
	v_old1 constant text := 'FROM triggers x JOIN job_versions v ON v.job_id = x.job_id AND v.version = x.version';
	v_new1 constant text := 'FROM triggers x CROSS JOIN LATERAL (SELECT v.overlap_policy, v.max_in_flight,'
		' v.target_host FROM job_versions v WHERE v.job_id = x.job_id AND v.version = x.version'
		' LIMIT 1) v';
	v_old2 constant text := 'FROM triggers t JOIN job_versions v ON v.job_id = t.job_id AND v.version = t.version';
	v_new2 constant text := 'FROM triggers t CROSS JOIN LATERAL (SELECT v.overlap_policy, v.max_in_flight,'
		' v.target_host FROM job_versions v WHERE v.job_id = t.job_id AND v.version = t.version'
		' LIMIT 1) v';
	v_old3 constant text := $old$WHERE t.state = 'running' AND t.lease_until < clock_timestamp()$old$;
	v_new3 constant text := $new$WHERE t.state = 'running' AND t.lease_until < statement_timestamp()$new$;
	v_def text := pg_get_functiondef('palisade_claim'::regproc);
	v_n3 integer := (length(v_def) - length(replace(v_def, v_old3, ''))) / length(v_old3);
	v_n1 integer := (length(v_def) - length(replace(v_def, v_old1, ''))) / length(v_old1);
	v_n2 integer := (length(v_def) - length(replace(v_def, v_old2, ''))) / length(v_old2);
BEGIN
	IF v_n1 <> 1 OR v_n2 <> 1 OR v_n3 <> 1 THEN
		RAISE EXCEPTION 'palisade_claim: expected each candidate join and the lease test of 010 once, found them %, % and % times',
			v_n1, v_n2, v_n3;
	END IF;
	EXECUTE replace(replace(replace(v_def, v_old1, v_new1), v_old2, v_new2), v_old3, v_new3);
END
$do$;
