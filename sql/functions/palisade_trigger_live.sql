-- palisade_trigger_live(job_id, tenant, resource_group, at): is the instant
-- AT of the job live (planned 'pending'), or shadow (planned 'shadow',
-- never claimed)?  Live unless a scope that covers the job is in shadow
-- (shadow_scopes: 'global', 'job:J', 'group:G', 'tenant:T') at AT; then live
-- only when, for some scope covering the job, the last step taken (the
-- highest id) among those in force by AT (at <= AT) has a percent above the
-- job's bucket.  A scope is in shadow from its row's `since` on: an instant
-- before it keeps the rule it had before `shadow`, `rollback` or a job
-- file's `mode: shadow` put the scope in shadow (live, for a scope that was
-- live), so an instant palisade plans late (a dependent job's, a catch-up)
-- is not made shadow after the fact, when the old system, taking over from
-- that command on, does not run it.  A roll-back is a step of 0 %; being
-- taken after a cut-over planned for later, it overrides it (a cut-over is
-- never earlier than the step before it: pal_store_cutover refuses that).
-- A roll-back of the job itself (a 0 % step of 'job:J' in force by AT)
-- overrides, for the job, every step of any scope taken before it: the
-- old system was told it runs the job's instants after the roll-back, a
-- group's step planned for later included; a step taken after it counts.
-- A roll-back of a group, tenant or the whole cluster overrides that
-- scope's own steps only: a job another scope keeps live stays live.
-- Read by the planner's insert for every trigger of a statement only when
-- shadow_scopes has a row (the insert asks that once first), and by
-- `shadow`, `cutover`, `rollback` and `resume` when they move planned
-- triggers.  Those callers pass a trigger's nominal instant,
-- coalesce(nominal_at, scheduled_at) (045): for a job with spread or jitter
-- the instant the old system fires, not the moved one palisade fires.
CREATE OR REPLACE FUNCTION palisade_trigger_live(job_id text, tenant text, grp text, at timestamp with time zone)
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$
	SELECT NOT EXISTS (SELECT 1 FROM shadow_scopes s
	                    WHERE s.scope IN ('global', 'job:' || job_id, 'group:' || grp, 'tenant:' || tenant)
	                      AND s.since <= palisade_trigger_live.at)
	    OR palisade_job_bucket(job_id) < coalesce((
	         SELECT max(c.percent) FROM (
	           SELECT DISTINCT ON (c.scope) c.id, c.percent FROM cutover_steps c
	            WHERE c.scope IN ('global', 'job:' || job_id, 'group:' || grp, 'tenant:' || tenant)
	              AND c.at <= palisade_trigger_live.at
	            ORDER BY c.scope, c.id DESC) c
	          WHERE c.id >= coalesce((SELECT max(r.id) FROM cutover_steps r
	                                   WHERE r.scope = 'job:' || job_id AND r.percent = 0
	                                     AND r.at <= palisade_trigger_live.at), 0)), 0)
$function$
