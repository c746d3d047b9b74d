#!/usr/bin/env bash
# Retry budgets under a flaky service, and the circuit breaker of a dead one.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "retry budget: with the sink failing 50% of calls, attempts per trigger never exceed max_attempts and every trigger ends succeeded or failed; breaker: calls to a target whose breaker is open stop"

it_db exec_retry
sink_up --error-rate 0.5
SHARDS=4
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
dead=$(free_port)
apply_jobs apply < <(
	echo "jobs:"
	for i in $(seq 1 20); do
		echo "  - {id: flaky.job-$i, schedule: {cron: \"*/2 * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/flaky\", status_url: \"http://$SINK_ADDR/effects/{idempotency_key}\", timeout: 2s}, retry: {max_attempts: 4, backoff: {initial: 100ms, max: 400ms}, max_age: 1m}}"
	done
	for i in $(seq 1 5); do
		echo "  - {id: dead.job-$i, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:$dead/x\", timeout: 1s}, retry: {max_attempts: 1000, backoff: {initial: 50ms, max: 100ms}, max_age: 10m}}"
	done
)
lead_shards 20 r1
T0=$(now_rfc3339)
# 15 s: ~100 flaky triggers in the window (25 s gave 200: 94 retried, 11
# failed after 4 attempts), and the breaker judged over the last 10 s
sleep 15
T1=$(rfc3339_ago 5)
settled() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'flaky.%' and scheduled_at between '$T0' and '$T1' and state not in ('succeeded', 'failed')")" = 0 ]; }
wait_until "every flaky trigger in the window ends succeeded or failed" 120 settled ||
	sql "select id, state, attempt_count, last_error_class, next_attempt_at, clock_timestamp() from trigger_jobs where job_id like 'flaky.%' and scheduled_at between '$T0' and '$T1' and state not in ('succeeded', 'failed')"
expect_eq "no trigger made more than max_attempts (4) calls" 0 \
	"$(sql "select count(*) from (select trigger_id from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id like 'flaky.%' and a.outcome is distinct from 'deferred' group by 1 having count(*) > 4) x")"
expect_eq "attempt_count agrees with the attempts that called" 0 \
	"$(sql "select count(*) from trigger_jobs t where job_id like 'flaky.%' and t.state in ('succeeded', 'failed') and attempt_count <> (select count(*) from attempt_ledger a where a.trigger_id = t.id and a.outcome is distinct from 'deferred')")"
dist=$(sql "select string_agg(n || ' attempts: ' || c, ', ' order by n) from (select attempt_count n, count(*) c from trigger_jobs where job_id like 'flaky.%' and scheduled_at between '$T0' and '$T1' group by 1) x")
echo "    figure: flaky triggers by attempts: $dist"
echo "    figure: final states: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from trigger_jobs where job_id like 'flaky.%' and scheduled_at between '$T0' and '$T1' group by 1) x")"
check "retries happened (some trigger needed more than one attempt)" [ "$(sql "select count(*) from trigger_jobs where job_id like 'flaky.%' and attempt_count > 1")" -gt 0 ]
gaps_ok=$(sql "select count(*) from (select a.trigger_id, a.claimed_at - lag(a.ended_at) over (partition by a.trigger_id order by a.fence) g from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id like 'flaky.%') x where g < interval '0'")
expect_eq "no retry started before the previous attempt ended" 0 "$gaps_ok"

# Breaker: attempts at the dead host in the last 10 s versus the first 3 s.
# A call = an attempt that ended in anything but 'deferred' (handed back
# unstarted); attempts still open may be parked for a probe, not calling.
first=$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id like 'dead.%' and a.outcome <> 'deferred' and a.claimed_at < '$T0'::timestamptz + interval '3 s'")
last=$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id like 'dead.%' and a.outcome <> 'deferred' and a.claimed_at > clock_timestamp() - interval '10 s'")
echo "    figure: calls to the dead host: $first in the first 3 s, $last in the last 10 s (breaker open)"
check "the breaker opened (logged as calls refused: breaker_open or no claims)" [ "$last" -lt "$first" ]
check "while open, at most a few probes per 10 s reach the dead host" [ "$last" -le 10 ]
finish
