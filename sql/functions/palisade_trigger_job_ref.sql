-- palisade_trigger_job_ref(): the body of the triggers_job_ref trigger,
-- called only for a row inserted without job_ref (a controller or an
-- operator command of 0.2.0, which knows nothing of the column): copies
-- the job's ref (jobs.ref) into it, one probe of the jobs primary key.
-- A job whose ref the backfill has not given yet leaves it NULL; the
-- backfill's trigger step fills the row afterwards (it runs only once
-- every job has its ref).
CREATE OR REPLACE FUNCTION palisade_trigger_job_ref()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	NEW.job_ref := (SELECT j.ref FROM jobs j WHERE j.job_id = NEW.job_id);
	RETURN NEW;
END
$function$;
