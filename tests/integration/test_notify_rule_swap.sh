#!/usr/bin/env bash
# Notify rules: no receiver gets a `recovered` for a failure it was never
# told of.  Tenant rules A and C (failed, recovered); the job fails (A and
# C get failed).  One apply, while the job is failing, removes A and adds
# B (failed, recovered): the apply tells B of the failure (a `failed`
# event of the failing trigger), C keeps its mark and gets nothing new.
# The job's next success sends `recovered` to B and C, not to A.  So each
# receiver's stream is consistent: B gets failed, then recovered.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a receiver added while the job is failing is told of the failure before it gets recovered"
source tests/integration/notify_lib.sh
hooks A B C
FR=$FAILED_RECOVERED
{ echo "notify_rules:"; tenant_rule "$A" "$FR"; tenant_rule "$C" "$FR"; echo "jobs:"; notify_job j billing; notify_job plain ops; } >"$NODE_DIR/v1.yaml"
expect_exit "apply rules A and C (failed, recovered), j and plain (tenant ops, no notify)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
receiver A "$A_PORT"
receiver B "$B_PORT"
receiver C "$C_PORT"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
receiver T "$T_PORT" 12 # the job's service: 500 for 12 s, then 200
expect_exit "trigger j" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r1
wait_until "run 1 failed" 15 eval '[ "$(states j)" = failed ]'
wait_until "A and C got failed" 10 eval '[ "$(got A)" = failed ] && [ "$(got C)" = failed ]'
# the apply also changes a job without notify (one whose mark, had it one, it would end)
{ echo "notify_rules:"; tenant_rule "$A" 'remove: true'; tenant_rule "$B" "$FR"; echo "jobs:"; notify_job plain ops '{max_attempts: 2}'; } >"$NODE_DIR/swap.yaml"
expect_exit "one apply removes rule A and adds rule B while j is failing (and changes plain)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/swap.yaml"
expect_eq "... plain got v2" 2 "$(sql "select latest_version from jobs where job_id = 'plain'")"
expect_eq "... j's v2 notifies B and C, not A (A B C)" "0 1 1" "$(sql "select count(*) filter (where e->>'url' = '$A') || ' ' || count(*) filter (where e->>'url' = '$B') || ' ' || count(*) filter (where e->>'url' = '$C') from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version, jsonb_array_elements(v.spec->'notify') as x(e)")"
expect_eq "... the apply queued B a failed event of the failing trigger (version 1, failed_since)" \
	"failed 1 $(sql "select id from triggers where job_id = 'j'") true" \
	"$(sql "select event || ' ' || (payload#>>'{data,version}') || ' ' || (payload#>>'{data,trigger}') || ' ' || (payload#>'{data}' ? 'failed_since') from notifications where url = '$B'")"
expect_eq "... and nothing new for C" 1 "$(sql "select count(*) from notifications where url = '$C'")"
wait_until "B got failed" 10 eval '[ "$(got B)" = failed ]'
until_t0 14
expect_exit "trigger j again once its service answers" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r2
wait_until "run 2 succeeded" 15 eval '[ "$(states j)" = failed,succeeded ]'
wait_until "C got recovered" 10 eval '[ "$(got C)" = "failed recovered" ]'
sleep 2
sql "select webhook_id, url, event, coalesce(delivered_at::text, 'pending') from notifications order by id" | sed 's/^/      /'
expect_eq "B's stream: failed, then recovered" "failed recovered" "$(got B)"
expect_eq "A's stream: failed only (its rule was removed)" "failed" "$(got A)"
expect_eq "every recovered in the outbox follows a failed of its url" 0 \
	"$(sql "select count(*) from notifications r where r.event = 'recovered' and not exists (select 1 from notifications f where f.url = r.url and f.job_id = r.job_id and f.event in ('failed', 'manual') and f.id < r.id)")"
finish
