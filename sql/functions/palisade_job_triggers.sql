-- palisade_job_triggers(job, limit, state, since, until): a job's latest
-- triggers (of one state, scheduled within [since, until], where given),
-- newest first, at most LIMIT (NULL: all): the scheduled ones backwards
-- along the plan key, the manual ones through the request key.  STABLE and
-- a single SELECT, so the planner inlines it.  The console, `palisade
-- triggers --job`, the exporter's last success and `palisade trigger`'s
-- check of an instant read a job's triggers this way.
CREATE OR REPLACE FUNCTION palisade_job_triggers(p_job text, p_limit integer, p_state text DEFAULT NULL::text, p_since timestamp with time zone DEFAULT NULL::timestamp with time zone, p_until timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS SETOF triggers
 LANGUAGE sql
 STABLE
AS $function$
	SELECT u.* FROM (
	    (SELECT t.* FROM triggers t WHERE t.job_id = p_job AND t.request_id IS NULL
	       AND (p_state IS NULL OR t.state = p_state)
	       AND (p_since IS NULL OR t.scheduled_at >= p_since)
	       AND (p_until IS NULL OR t.scheduled_at <= p_until)
	     ORDER BY t.scheduled_at DESC, t.partition, t.id LIMIT p_limit)
	    UNION ALL
	    (SELECT t.* FROM triggers t WHERE t.job_id = p_job AND t.request_id IS NOT NULL
	       AND (p_state IS NULL OR t.state = p_state)
	       AND (p_since IS NULL OR t.scheduled_at >= p_since)
	       AND (p_until IS NULL OR t.scheduled_at <= p_until)
	     ORDER BY t.scheduled_at DESC, t.partition, t.id LIMIT p_limit)) u
	ORDER BY u.scheduled_at DESC, u.partition, u.id LIMIT p_limit
$function$;
