# Shared by the roll-back tests of a chain whose upstream call is in flight
# (test_rollback_after_flight.sh, test_rollback_after_late.sh); sourced after
# lib.sh and cluster.sh.
# chain_flight_start DB [AFTER_EXTRA]: database DB, group ch (ch.up every 5 s,
# ch.down `after: ch.up` with AFTER_EXTRA added to its entry, e.g.
# ", within: 1s") cut over 100 % on node n1 with an executor; returns once
# the chain ran and the sink holds a ch.up call in flight.  Non-zero when the
# set-up failed (a check failed).
chain_flight_start() {
	fresh_db "$1"
	"$PAL" migrate >/dev/null
	start_sink || { fail "sink starts"; return 1; }
	SHARDS=1
	write_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 500ms}"
	sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
	cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - {id: ch.up, group: ch, schedule: {cron: "*/5 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/up", timeout: 30s}}
  - {id: ch.down, group: ch, after: [{job: ch.up${2:-}}], target: {url: "http://$SINK_ADDR/effects/down", timeout: 5s}}
Y
	expect_exit "group ch in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --group ch --reason "moving"
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
	expect_exit "group ch cut over (100 %)" 0 "$PAL" cutover --config "$CLUSTER_CONF" --group ch --at "$(date -u -d @$(($(date +%s) + 1)) +%FT%TZ)" --reason "all"
	start_node n1
	wait_until "shards led" 20 all_shards_led || return 1
	wait_until "the chain runs (a dependent effect)" 30 has "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'ch.down'" || return 1
	sink_faults '{"paused": true}'
	wait_until "an upstream call in flight (held by the sink)" 20 has "select count(*) from trigger_jobs where job_id = 'ch.up' and state = 'running' and scheduled_at < now()"
}
