#!/usr/bin/env bash
# Overlap policies and cluster-wide group limits, with two executors and a
# service slower than the schedule.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "overlap policies hold across the cluster (forbid skips and records, queue never runs two at once, replace cancels the older run, allow overlaps) and a group's cluster_concurrency is never exceeded"

fresh_db it_overlap
"$PAL" migrate >/dev/null
start_sink --delay-ms 2500 || { fail "sink starts"; finish; exit 1; }
SHARDS=4 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s, groups: {capped: {concurrency: 0, cluster_concurrency: 2}}}"
SHARDS=4
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: ov.allow, overlap: allow, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/a", timeout: 10s}}
  - {id: ov.forbid, overlap: forbid, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/f", timeout: 10s}}
  - {id: ov.queue, overlap: queue, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/q", timeout: 10s}, retry: {max_age: 1h}}
  - {id: ov.replace, overlap: replace, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/r", timeout: 10s}}
YAML
{
	for i in 1 2 3 4 5 6; do
		echo "  - {id: cap.job-$i, group: capped, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/c\", timeout: 10s}, retry: {max_age: 1h}}"
	done
} >>"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node v1
start_node v2
wait_until "shards led" 20 all_shards_led
# 60 samples 0.25 s apart (sql_samples: one psql session), each reading
# the four figures in one snapshot: the most live runs of one partition of
# the queue and the allow job, the replace job's replaced runs, the capped
# group's live runs.
live="state in ('running', 'pausing', 'cancelling')"
maxlive() { echo "(select coalesce(max(n), 0) from (select count(*) n from trigger_jobs where job_id = '$1' and $live group by partition) x)"; }
# a replaced run is cancelling until its call returns (then it may still
# end succeeded): seen while it happens
replaced_q="(select count(*) from trigger_jobs where job_id = 'ov.replace' and (last_error_class = 'replaced' or state in ('cancelling', 'cancelled')))"
capped_q="(select count(*) from trigger_jobs where resource_group = 'capped' and $live)"
read -r n_samples peak_q peak_a replaced peak_cap <<<"$(sql_samples 60 0.25 "select $(maxlive ov.queue), $(maxlive ov.allow), $replaced_q, $capped_q" |
	awk -F'|' 'NF == 4 { s++; for (i = 1; i <= 4; i++) if ($i > m[i]) m[i] = $i } END { print s + 0, m[1] + 0, m[2] + 0, m[3] + 0, m[4] + 0 }')"
expect_eq "60 samples taken" 60 "$n_samples"
echo "    figure: peak live runs: allow $peak_a, queue $peak_q; capped group peak $peak_cap (limit 2, 6 jobs every 1 s, 2 executors)"
check "allow: runs overlap (more than one live at once)" [ "$peak_a" -gt 1 ]
expect_eq "queue: never two live runs of the job at once" 1 "$peak_q"
check "queue: waiting instants are kept, not dropped (pending backlog)" [ "$(sql "select count(*) from trigger_jobs where job_id = 'ov.queue' and state = 'pending'")" -gt 0 ]
check "forbid: due instants skipped while one runs" [ "$(sql "select count(*) from trigger_jobs where job_id = 'ov.forbid' and state = 'skipped'")" -gt 0 ]
# Both counts in one statement (one snapshot): the executors still run, and
# a skip committed between two separate reads made them differ by one.
read -r skipped recorded <<<"$(sql "select (select count(*) from trigger_jobs where job_id = 'ov.forbid' and state = 'skipped'),
	(select coalesce(sum(count), 0) from misfires where job_id = 'ov.forbid' and reason = 'overlap')" | tr '|' ' ')"
expect_eq "forbid: every skip recorded as a misfire with reason overlap" "$skipped" "$recorded"
check "replace: older runs were asked to stop (cancelling/cancelled, error class replaced)" [ "$replaced" -gt 0 ]
check "group cluster_concurrency 2 never exceeded across both executors" [ "$peak_cap" -le 2 ]
check "and the capped group did run" [ "$(sql "select count(*) from trigger_jobs where resource_group = 'capped' and state = 'succeeded'")" -gt 0 ]
finish
