#!/usr/bin/env bash
# The metrics an operator alerts on: the executor's histograms, the breaker
# gauge, the epoch per shard, and the cluster gauges read from PostgreSQL
# (backlog by group and state, open tickets, last success per job); the
# whole /metrics text passes `promtool check metrics`, and the alert rules
# in ops/prometheus pass `promtool check rules` and their unit tests.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "metrics - histograms, breakers, epochs and the cluster gauges show the state PostgreSQL holds; promtool accepts the text and the rules"

if ! command -v promtool >/dev/null; then
	fail "promtool is installed (ops/deps.sh installs prometheus)"
	finish
	exit 1
fi
expect_exit "promtool check rules ops/prometheus/palisade-rules.yml" 0 promtool check rules ops/prometheus/palisade-rules.yml
expect_exit "promtool test rules (alert unit tests)" 0 promtool test rules ops/prometheus/palisade-rules.test.yml

fresh_db it_metrics
"$PAL" migrate >/dev/null
# A fifth of the applies lose their answer after the commit: the retry with
# the same key is answered as a replay.
start_sink --drop-after-commit-rate 0.2 || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 1s}" "metrics: {cluster_interval: 1s, job_series: 10}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
{
	echo "jobs:"
	echo "  - {id: m.ok, group: fast, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/ok\"}}"
	# a job whose group is paused: its due triggers wait as backlog
	echo "  - {id: m.held, group: held, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/held\"}}"
	# a permanent failure (404): one log line names job, trigger, fence and class
	echo "  - {id: m.gone, group: fast, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://$SINK_ADDR/not-here\"}}"
	# connection refused: retried, and the host's breaker opens
	for i in 1 2 3 4; do
		echo "  - {id: m.dead-$i, group: dead, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:1/x\", timeout: 1s}, retry: {max_attempts: 20, backoff: {initial: 100ms, max: 200ms}}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_exit "pause group held" 0 "$PAL" pause --config "$CLUSTER_CONF" --group held --reason "metrics test"
start_node m1
wait_until "shards led" 60 all_shards_led
ok_done() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'm.ok' and state = 'succeeded'")" -ge 3 ]; }
wait_until "m.ok succeeds" 60 ok_done
replayed() { [ "$(metric m1 palisade_executor_idempotent_replays_total)" -ge 1 ]; }
wait_until "a lost answer was retried and replayed" 60 replayed
# a ticket the cluster gauge must count
sql "insert into tickets (job_id, reason) values ('m.ok', 'metrics test ticket')" >/dev/null
M="$NODE_DIR/metrics.txt"
val() { awk -v m="$1" '$1 == m { v = $2 } END { if (v == "") v = 0; print v }' "$M"; }
last_ok() { sql "select coalesce(extract(epoch from max(finished_at)), 0) from trigger_jobs where job_id = 'm.ok' and state = 'succeeded'"; }
open_tickets() { sql "select count(*) from tickets where state = 'open'"; }
# scrape: /metrics into $M, bracketed by the database's figures read just
# before (TICKETS0, LAST0) and just after (TICKETS1, LAST1) it: what the
# cluster gauges may show lies between the two (a psql on a loaded box can
# take a second or more, during which m.ok succeeds again).
scrape() {
	TICKETS0=$(open_tickets) LAST0=$(last_ok)
	curl -s "http://${NODE_ADMIN[m1]}/metrics" >"$M"
	TICKETS1=$(open_tickets) LAST1=$(last_ok)
}
held_backlog() { echo $(( $(val 'palisade_cluster_backlog_triggers{group="held",state="paused"}') + $(val 'palisade_cluster_backlog_triggers{group="held",state="pending"}') )); }
tickets_counted() { [ "$TICKETS0" -ge 1 ] && [ "$TICKETS0" -le "$(val palisade_cluster_tickets_open)" ] && [ "$(val palisade_cluster_tickets_open)" -le "$TICKETS1" ]; }
# the gauge holds the database's last success as of its last refresh
# (cluster_interval 1 s): not later than the database's after the scrape,
# not more than 3 s before the database's before it
last_success_fresh() { python3 -c "import sys; sys.exit(0 if $LAST0 - 3 <= $(val 'palisade_cluster_job_last_success_timestamp_seconds{job="m.ok"}') <= $LAST1 else 1)"; }
breaker_open() { [ "$(val 'palisade_executor_breaker_open{host="127.0.0.1:1"}')" = 1 ]; }
# The cluster gauges are refreshed every cluster_interval: scrape until the
# refresh after the ticket's insert shows, then judge that one scrape.
gauges_refreshed() { scrape && tickets_counted && [ "$(held_backlog)" -ge 2 ] && last_success_fresh && breaker_open; }
wait_until "the cluster gauges show the ticket, the held backlog and m.ok's last success; the breaker is open" 60 gauges_refreshed

out=$(promtool check metrics <"$M" 2>&1); rc=$?
check "promtool check metrics accepts the node's /metrics (exit $rc${out:+: $(echo "$out" | head -3)})" [ "$rc" = 0 -a -z "$out" ]

check "call duration histogram has observations" [ "$(val 'palisade_executor_call_duration_seconds_count{phase="call"}')" -ge 3 ]
check "fire lateness histogram has observations" [ "$(val palisade_executor_fire_lateness_seconds_count)" -ge 3 ]
check "its +Inf bucket equals its count" [ "$(val 'palisade_executor_fire_lateness_seconds_bucket{le="+Inf"}')" = "$(val palisade_executor_fire_lateness_seconds_count)" ]
check "claim round trips are observed" [ "$(val palisade_executor_claim_seconds_count)" -ge 1 ]
check "commit round trips are observed" [ "$(val palisade_executor_commit_seconds_count)" -ge 1 ]
# Every counter has a sample from the start (increase() and absent() need
# one), except those whose labels name what happened (a shard and reason of
# a foreign znode): they appear with the first event.
bare=$(awk '/^# TYPE/ { if (fam != "" && type == "counter" && !seen) print fam; fam = $3; type = $4; seen = 0; next }
	/^[a-z]/ { seen = 1 } END { if (fam != "" && type == "counter" && !seen) print fam }' "$M" | grep -v '^palisade_coord_foreign_znodes_total$')
expect_eq "every counter family has a sample" "" "$(echo $bare)"
expect_match "a counter without events still has its sample at 0" '^palisade_executor_stale_rejections_total\{at="sink"\} 0$' "$(cat "$M")"
for s in 0 1; do
	epoch=$(sql "select epoch from shards where shard_id = $s")
	expect_eq "shard $s: the epoch gauge is the shard's epoch in PostgreSQL" "$epoch" "$(val "palisade_controller_shard_epoch{shard=\"$s\"}")"
done
check "breaker of the refusing host is open" breaker_open
check "open tickets gauge ($(val palisade_cluster_tickets_open)) is the database's count ($TICKETS0..$TICKETS1), >= 1" tickets_counted
check "the paused group's due triggers are backlog ($(held_backlog))" [ "$(held_backlog)" -ge 2 ]
check "the paused group's oldest due trigger is seconds old" python3 -c "import sys; sys.exit(0 if float('$(val 'palisade_cluster_backlog_oldest_seconds{group="held"}')') >= 1 else 1)"
check "last success of m.ok ($(val 'palisade_cluster_job_last_success_timestamp_seconds{job="m.ok"}')) is within the refresh interval of the database's ($LAST0..$LAST1)" last_success_fresh
expect_eq "cluster stats read PostgreSQL" 1 "$(val palisade_cluster_stats_up)"
check "idempotent replays are counted ($(val palisade_executor_idempotent_replays_total))" [ "$(val palisade_executor_idempotent_replays_total)" -ge 1 ]
line=$(grep '"executor.trigger_failed"' "$NODE_DIR/m1.log" | grep '"job":"m.gone"' | head -1)
expect_match "a failed trigger logs one line with job, trigger, fence and error class" '"trigger":[0-9]+,"fence":[0-9]+,.*"error_class":"http_404"' "$line"

# The group is resumed: its backlog drains and the gauge follows.
"$PAL" resume --config "$CLUSTER_CONF" --group held >/dev/null
held_drained() {
	curl -s "http://${NODE_ADMIN[m1]}/metrics" >"$M"
	[ "$(val 'palisade_cluster_backlog_triggers{group="held",state="paused"}')" = 0 ] &&
		[ "$(val 'palisade_cluster_backlog_triggers{group="held",state="pending"}')" = 0 ]
}
wait_until "the held backlog drains, and the gauge follows to 0" 60 held_drained

# The last-success gauges look at metrics.job_series jobs (10 here, m.ok is
# the 7th by id) whatever the cluster holds.  2,000 more jobs that are never
# due sort after them; once the controller has loaded and activated them,
# the jobs table is read a few rows per refresh, not 2,007 rows each time.
{
	echo "jobs:"
	for i in $(seq -w 1 2000); do
		echo "  - {id: m.z$i, schedule: {cron: \"0 0 0 1 1 ?\"}, target: {url: \"http://127.0.0.1:1/x\"}}"
	done
} >"$NODE_DIR/more.yaml"
expect_exit "apply 2,000 more jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/more.yaml"
activated() { [ "$(sql "select count(*) from job_versions where activated_at is null")" = 0 ]; }
wait_until "the controller activated them" 60 activated
# Ticks of up to 1000 activations a shard: one summary line each, not a
# line per version (those go to debug; audit_log has each).
check "mass activations are summarised in the log ($(grep -c '"controller.versions_activated"' "$NODE_DIR/m1.log") summaries)" \
	grep -q '"event":"controller.versions_activated".*"count":[0-9]' "$NODE_DIR/m1.log"
check "not logged one line per version at info ($(grep -c '"controller.version_activated"' "$NODE_DIR/m1.log") lines)" \
	[ "$(grep -c '"controller.version_activated"' "$NODE_DIR/m1.log")" -lt 100 ]
sleep 2
jobs_read() { sql "select idx_tup_fetch + seq_tup_read from pg_stat_user_tables where relname = 'jobs'"; }
r0=$(jobs_read)
sleep 5
r1=$(jobs_read)
check "5 s of cluster-stats refreshes (every 1 s) read $((r1 - r0)) rows of jobs: fewer than 1,000" [ $((r1 - r0)) -lt 1000 ]
curl -s "http://${NODE_ADMIN[m1]}/metrics" >"$M"
check "m.ok keeps its last-success series" [ "$(val 'palisade_cluster_job_last_success_timestamp_seconds{job="m.ok"}')" != 0 ]
finish
