#!/usr/bin/env bash
# The full job reload (every 30 s and on SIGHUP: the fallback behind LISTEN
# palisade_apply) picks up a version that arrived without a notification: it
# reads every job's version list, then fetches the specs of the jobs whose
# list changed.  SIGHUP runs the same reload as the timer, sooner.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - a job version written without NOTIFY (LISTEN missed) is still activated by the full reload, and applies from its activation on"

it_db reload_jobs
SHARDS=2
write_conf "$CLUSTER_CONF"
apply_jobs apply <<'YAML'
jobs:
  - {id: rl.a, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: rl.b, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
lead_shards 20 h1
sleep 2
# Version 2 of rl.a with two partitions, written the way no palisade command
# writes it: no NOTIFY, so only the full reload can see it.
sql "insert into job_versions (job_id, version, spec, digest, cron, timezone, misfire_policy,
  catchup_window_ms, max_catchup, overlap_policy, priority, deadline_ms, max_in_flight,
  idempotency_key, retry, resource_group, target, target_host, partitions, created_by)
  select job_id, 2, jsonb_set(spec, '{partitions}', '2'), 'test-' || digest, cron, timezone,
  misfire_policy, catchup_window_ms, max_catchup, overlap_policy, priority, deadline_ms,
  max_in_flight, idempotency_key, retry, resource_group, target, target_host, 2, 'test'
  from job_versions where job_id = 'rl.a' and version = 1;
  update jobs set latest_version = 2 where job_id = 'rl.a'" >/dev/null
activated() { [ "$(sql "select count(*) from job_versions where job_id = 'rl.a' and version = 2 and effective_from is not null")" = 1 ]; }
sleep 2
expect_eq "without a notification nothing sees version 2 yet" 0 "$(sql "select count(*) from job_versions where job_id = 'rl.a' and version = 2 and effective_from is not null")"
kill -HUP "${NODE_PID[h1]}"
wait_until "the full reload (SIGHUP) activates version 2" 10 activated
two() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rl.a' and partition = 1")" -gt 0 ]; }
wait_until "instants after the activation are planned with two partitions" 10 two
expect_eq "no partition-1 instant before the activation" 0 \
	"$(sql "select count(*) from trigger_jobs t join job_versions v on v.job_id = t.job_id and v.version = 2 where t.job_id = 'rl.a' and t.partition = 1 and t.scheduled_at <= v.effective_from")"
expect_eq "the unchanged job kept one partition" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'rl.b' and partition > 0")"
sleep 2
expect_exit "verify: every instant of both versions planned once" 0 "$PAL" verify \
	--from "$(sql "select to_char(min(effective_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from job_versions")" --to "$(rfc3339_ago 1)"
finish
