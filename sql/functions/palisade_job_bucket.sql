-- palisade_job_bucket(job_id): the job's place, 0 to 99, in a staged
-- cut-over: `cutover --percent N` makes live the jobs whose bucket is
-- below N, so 10 -> 25 -> 50 -> 100 only ever adds jobs, and every node
-- and every run of the command computes the same set.  The first 32 bits
-- of the id's MD5 (not hashtext(), whose values may change between
-- PostgreSQL releases).
CREATE OR REPLACE FUNCTION palisade_job_bucket(job_id text)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE STRICT
AS $function$
	SELECT (('x' || substr(md5(job_id), 1, 8))::bit(32)::bigint % 100)::integer
$function$
