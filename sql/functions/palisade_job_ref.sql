-- palisade_job_ref(job): the job's ref (jobs.ref), given it first from
-- jobs_ref_seq when it has none yet, for a writer of this release that
-- names a trigger's job by job_ref alone and found the job without one
-- (applied by 0.2.0 before 041's default, and not yet reached by the
-- backfill's jobs step).  The same update as that step's, guarded by
-- ref IS NULL, so the two never give a job two refs: whichever locks the
-- row second sees the first's ref and keeps it.  Takes the job row's lock
-- until the caller's transaction ends, only in that case (once per job:
-- the next writer reads the ref).  NULL for a job that does not exist.
CREATE OR REPLACE FUNCTION palisade_job_ref(p_job text)
 RETURNS integer
 LANGUAGE sql
AS $function$
	WITH u AS (UPDATE jobs j SET ref = nextval('jobs_ref_seq')
	            WHERE j.job_id = p_job AND j.ref IS NULL RETURNING j.ref)
	SELECT coalesce((SELECT u.ref FROM u), (SELECT j.ref FROM jobs j WHERE j.job_id = p_job))
$function$;
