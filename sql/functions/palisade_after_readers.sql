-- palisade_after_readers(): what the dependency planner (palisade_plan_after)
-- has still to read, per dependent job: one row per job whose triggers and
-- misfire rows it reads (each upstream named in the `after` of one of its
-- activated versions, and the dependent job itself, whose own triggers and
-- upstream_* rows mark the instants it decided) with the dependent job
-- (reader) and the instant above which it reads them (lo): its watermark,
-- or the first activation of a version with `after` before it has one,
-- or, when earlier, the start of a misfire range of a first upstream that
-- ends above that (the planner takes such a range whole, blocked by the
-- upstream's triggers and the dependent job's rows in it, also below the
-- watermark).  The dependent jobs are those the planner looks at: a
-- version with `after` was activated and the watermark is below the end
-- of the job's time with `after` (the activation of a newer version
-- without it, or the `end` of a version from the latest with it on).
-- Retention keeps what lies above lo (palisade_retention,
-- palisade_history_retention), however long the dependent job is held
-- back (its controller down, its upstream not active yet, an instant
-- waiting for its upstream up to `within`).
CREATE OR REPLACE FUNCTION palisade_after_readers()
 RETURNS TABLE(job_id text, reader text, lo timestamp with time zone)
 LANGUAGE sql
 STABLE
AS $function$
	WITH dv AS MATERIALIZED (
		SELECT v.job_id, max(v.version) AS la, min(v.effective_from) AS since
		  FROM job_versions v
		 WHERE v.spec ? 'after' AND v.effective_from IS NOT NULL
		 GROUP BY v.job_id),
	b AS (
		SELECT dv.job_id, coalesce(w.watermark, dv.since) AS lo
		  FROM dv
		  JOIN jobs j ON j.job_id = dv.job_id
		  LEFT JOIN after_watermarks w ON w.job_id = dv.job_id
		 WHERE coalesce(w.watermark, '-infinity') < least(
			coalesce((SELECT min(nv.effective_from) FROM job_versions nv
				   WHERE nv.job_id = dv.job_id AND nv.version > dv.la), 'infinity'),
			coalesce((SELECT min((ev.spec -> 'schedule' ->> 'end')::timestamptz)
				    FROM job_versions ev
				   WHERE ev.job_id = dv.job_id AND ev.version >= dv.la), 'infinity'))),
	up AS (
		SELECT DISTINCT b.job_id, d.x ->> 'job' AS up, d.ord = 1 AS first
		  FROM b
		  JOIN job_versions v ON v.job_id = b.job_id AND v.spec ? 'after'
		   AND v.effective_from IS NOT NULL
		 CROSS JOIN jsonb_array_elements(v.spec -> 'after') WITH ORDINALITY d(x, ord)),
	r AS (
		SELECT b.job_id, least(b.lo, (SELECT min(m.range_from) FROM up u
			  JOIN misfires m ON m.job_id = u.up
			 WHERE u.job_id = b.job_id AND u.first AND m.reason <> 'excluded'
			   AND m.count > 0 AND m.range_to > b.lo)) AS lo
		  FROM b)
	SELECT u.up, r.job_id, r.lo FROM r JOIN up u ON u.job_id = r.job_id
	UNION
	SELECT r.job_id, r.job_id, r.lo FROM r
$function$;
