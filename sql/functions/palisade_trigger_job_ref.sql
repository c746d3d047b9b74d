-- palisade_trigger_job_ref(): the body of the triggers_job_ref trigger,
-- called for a row that names its job one way only, before the row's
-- keys are checked (so both the text plan key and the one on job_ref see
-- it whole):
--   job_ref NULL (a controller or operator command of 0.2.0, which knows
--     nothing of the column): the job's ref by job_id, one probe of the
--     jobs primary key.  A job whose ref the backfill has not given yet
--     leaves it NULL; the backfill's trigger step fills the row afterwards
--     (it runs only once every job has its ref).
--   job_id NULL (a writer of this release): the job's id and resource
--     group by ref, one probe of jobs_ref (built by the backfill's runner
--     after the jobs step; before that, a read of jobs), so that a node of
--     0.2.0 reading the row finds them.
CREATE OR REPLACE FUNCTION palisade_trigger_job_ref()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
	IF NEW.job_ref IS NULL THEN
		NEW.job_ref := (SELECT j.ref FROM jobs j WHERE j.job_id = NEW.job_id);
	ELSE
		SELECT j.job_id, j.resource_group INTO NEW.job_id, NEW.resource_group
		  FROM jobs j WHERE j.ref = NEW.job_ref;
	END IF;
	RETURN NEW;
END
$function$;
