#!/usr/bin/env bash
# One tenant with ten times the load of another, on an executor that cannot
# keep up with the heavy one.
source tests/integration/lib.sh
source tests/integration/cluster.sh
BOUND_S=${FAIRNESS_P99_BOUND_S:-3}
guarantee "fairness - a tenant with 10x the load (more than the executor can serve) does not push the light tenant's p99 wait (claim - due) past ${BOUND_S} s"

it_db fair
sink_up --delay-ms 100
SHARDS=4
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s, batch: 8, max_inflight: 4}"
apply_jobs "apply 50 heavy and 5 light jobs" < <(
	echo "jobs:"
	for i in $(seq 1 50); do
		echo "  - {id: heavy.job-$i, tenant: heavy, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/h\"}, retry: {max_age: 1h}}"
	done
	for i in $(seq 1 5); do
		echo "  - {id: light.job-$i, tenant: light, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/l\"}, retry: {max_age: 1h}}"
	done
)
lead_shards 20 f1
T0=$(sql "select clock_timestamp() + interval '2 s'")
# 15 s of overload: the heavy backlog grows by ~35 triggers a second and the
# window holds ~40 light triggers (30 s gave 1,035 and the same p99)
sleep 15
T1=$(sql "select clock_timestamp() - interval '5 s'")
wait_s() {
	sql "select coalesce(round(percentile_cont($2) within group (order by extract(epoch from a.claimed_at - t.due_at))::numeric, 2), -1)
	     from triggers t join attempt_ledger a on a.trigger_id = t.id and a.fence = (select min(fence) from attempt_ledger x where x.trigger_id = t.id)
	     where t.tenant = '$1' and t.due_at between '$T0' and '$T1'"
}
backlog=$(sql "select count(*) from triggers where tenant = 'heavy' and state = 'pending' and due_at < clock_timestamp()")
lp50=$(wait_s light 0.5); lp99=$(wait_s light 0.99); hp50=$(wait_s heavy 0.5)
echo "    figure: heavy backlog $backlog due triggers; waits: light p50 ${lp50}s p99 ${lp99}s, heavy p50 ${hp50}s (claimed ones)"
check "the heavy tenant overloads the executor (a backlog builds)" [ "$backlog" -gt 50 ]
check "light tenant's p99 wait <= ${BOUND_S} s" python3 -c "import sys; sys.exit(0 if 0 <= float('$lp99') <= $BOUND_S else 1)"
expect_eq "every light trigger in the window was claimed" 0 "$(sql "select count(*) from triggers where tenant = 'light' and due_at between '$T0' and '$T1' and attempt_count = 0")"
finish
