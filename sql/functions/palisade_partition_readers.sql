-- palisade_partition_readers(part): the dependent jobs that still read one
-- partition of `triggers` (palisade_after_readers()): a row per job read
-- that has a planned trigger in PART above the reader's lo, lowest lo
-- first.  Each probe is one descent of the partition's triggers_plan_key
-- (job_id, scheduled_at, partition), so an old range is never read whole.
-- palisade_retention() keeps a range with a row here.
CREATE OR REPLACE FUNCTION palisade_partition_readers(p_part text)
 RETURNS TABLE(reader text, job_id text, lo timestamp with time zone)
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
	r record;
	v boolean;
BEGIN
	FOR r IN SELECT a.reader, a.job_id, a.lo FROM palisade_after_readers() a
	    ORDER BY a.lo, a.reader, a.job_id LOOP
		EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I t WHERE t.job_id = $1'
			' AND t.scheduled_at > $2 AND t.request_id IS NULL)', p_part)
		   INTO v USING r.job_id, r.lo;
		IF v THEN
			reader := r.reader;
			job_id := r.job_id;
			lo := r.lo;
			RETURN NEXT;
		END IF;
	END LOOP;
END
$function$;
