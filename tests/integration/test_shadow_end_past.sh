#!/usr/bin/env bash
# A cron job in shadow (the old system runs it) given an `end` in the past:
# the takeover's cut is that `end`, but the shadow rows of instants between
# the end and the apply (instants gone, run by the old system) stay shadow;
# those after the apply are dropped, so that the live dependent ep.fin
# plans nothing at them.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an end in the past does not cancel shadow rows of past instants (the old system ran them)"
fresh_db it_shadow_end_past
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
start_node f1
J=ep.job-1
wait_until "shards led" 40 all_shards_led

gen_sink_jobs "$NODE_DIR/v1.yaml" 1 "* * * * * ?" t1 ep "mode: shadow"
echo "  - {id: ep.fin, tenant: t1, after: [{job: $J, on: finished}], target: {url: \"http://$SINK_ADDR/effects/fin\", timeout: 2s}}" >>"$NODE_DIR/v1.yaml"
expect_exit "apply v1 (every second, shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
sleep 10
A=$(date +%s); E=$((A - 6))
sed "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $E)}|" "$NODE_DIR/v1.yaml" >"$NODE_DIR/v2.yaml"
grep -q "end:" "$NODE_DIR/v2.yaml" || fail "v2 has an end"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v2.yaml" 2>&1 | sed 's/^/    apply: /'
sleep 2
sql "select version, extract(epoch from scheduled_at)::bigint - $A, state from trigger_jobs where job_id = '$J' and scheduled_at >= to_timestamp($E - 2) order by scheduled_at" | sed 's/^/    /'
expect_eq "no shadow row of an instant before the apply became cancelled" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = '$J' and state = 'cancelled' and scheduled_at < to_timestamp($A)")"
expect_eq "the shadow rows between the end and the apply stay shadow" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = '$J' and state <> 'shadow' and scheduled_at >= to_timestamp($E) and scheduled_at < to_timestamp($A)")"
expect_eq "none of the job's rows cancelled" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = '$J' and state = 'cancelled'")"
sleep 3
sql "select extract(epoch from scheduled_at)::bigint - $A, state from triggers where job_id = 'ep.fin' and scheduled_at >= to_timestamp($E - 2) order by scheduled_at" | sed 's/^/    ep.fin: /'
expect_eq "ep.fin (live after the shadow job, on: finished): no call for an instant the old system ran" 0 \
	"$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id where t.job_id = 'ep.fin'")"
finish
