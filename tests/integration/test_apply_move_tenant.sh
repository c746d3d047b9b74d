#!/usr/bin/env bash
# A job moved to another tenant and group by apply takes its unfinished runs
# with it: a run planned before the move (a manual run with a future --at)
# is under the new tenant and group, so a pause of either holds it, as the
# claim and the pause match a trigger's own tenant and resource_group.  A
# finished run keeps the tenant it ran under.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a pause of a job's tenant or group stops every run of the job, also the ones planned before the job moved there"
it_db
sink_up
SHARDS=2 write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
F=$NODE_DIR/jobs.yaml
printf 'jobs:\n  - {id: m.job, tenant: blue, group: gb, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://%s/effects/m"}}\n' "$SINK_ADDR" >"$F"
expect_exit "apply m.job as blue's (group gb)" 0 "$PAL" apply "$F"
start_node x1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[x1]}/readyz")" = 200 ]; }
wait_until "node x1 ready" 30 ready
expect_exit "a manual run of m.job now" 0 "$PAL" trigger --job m.job --request-id first --reason move-test
done_first() { [ "$(sql "select state from triggers where job_id = 'm.job' and request_id = 'first'")" = succeeded ]; }
wait_until "... it succeeds under blue" 20 done_first
AT=$(date -u -d "@$(( $(date +%s) + 10 ))" +%Y-%m-%dT%H:%M:%SZ)
expect_exit "a manual run of m.job at $AT (planned now, due in 10 s)" 0 "$PAL" trigger --job m.job --at "$AT" --request-id later --reason move-test
sed -i 's/tenant: blue, group: gb/tenant: red, group: gr/' "$F"
expect_exit "apply: m.job moves to tenant red, group gr" 0 "$PAL" apply "$F"
expect_eq "the job is red's now" "red|gr" "$(sql "select tenant, resource_group from jobs where job_id = 'm.job'")"
expect_eq "its planned run moved with it" "red|gr|pending" \
	"$(sql "select tenant || '|' || resource_group || '|' || state from triggers where job_id = 'm.job' and request_id = 'later'")"
expect_eq "its finished run keeps the tenant and group it ran under" "blue|gb|succeeded" \
	"$(sql "select tenant || '|' || resource_group || '|' || state from triggers where job_id = 'm.job' and request_id = 'first'")"
expect_exit "re-applying the same file changes nothing" 0 "$PAL" apply "$F"
expect_exit "pause tenant red" 0 "$PAL" pause --tenant red --reason "stop red"
expect_exit "pause group gr" 0 "$PAL" pause --group gr --reason "stop gr"
sleep $(( $(date -d "$AT" +%s) - $(date +%s) + 5 ))
expect_eq "no call of the run planned before the move while its tenant and its group are paused" 1 \
	"$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'm.job'")"
expect_eq "... it waits (pending or paused)" 1 \
	"$(sql "select count(*) from triggers where job_id = 'm.job' and request_id = 'later' and state in ('pending', 'paused')")"
expect_eq "the sink saw the first run's call only" 1 "$(sink_stat applied 2>/dev/null || echo '?')"
stop_node x1
finish
