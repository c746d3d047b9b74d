-- palisade_claim(node, lease_ms, limit, ahead_ms, open_hosts, groups...,
-- tenants...): the claim of executors older than 0.3.0, whose prepared
-- statement names this function and whose result commit ends the claim's
-- attempts row by trigger and token.  The one body is
-- palisade_claim_batch(); this entry asks it for an attempts row for
-- every claim, as those commits expect.
CREATE OR REPLACE FUNCTION palisade_claim(p_node text, p_lease_ms integer, p_limit integer, p_ahead_ms integer, p_open_hosts text[], p_groups text[], p_group_node integer[], p_group_cluster integer[], p_tenants text[], p_tenant_cap integer[], p_tenant_weight double precision[])
 RETURNS TABLE(id bigint, fence bigint, job_id text, version integer, at bigint, part integer, request_id text, attempt integer, prev_state text, prev_err text, checkpoint text, tenant text, resource_group text, ready_ms bigint, skipped integer, next_ms bigint, unknown boolean)
 LANGUAGE sql
AS $function$
	SELECT * FROM palisade_claim_batch(p_node, p_lease_ms, p_limit, p_ahead_ms, p_open_hosts,
	  p_groups, p_group_node, p_group_cluster, p_tenants, p_tenant_cap, p_tenant_weight, false)
$function$;
