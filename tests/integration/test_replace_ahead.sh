#!/usr/bin/env bash
# `overlap: replace`: a manual run of a job claimed while one of its
# instants is claimed ahead (running, its call waiting for the instant on
# the executor) asks that one to stop (cancelling).  The executor renews
# its leases only every 10 s here: it must learn of it from the claim's
# NOTIFY palisade_handback and hand the instant back without a call; left
# to the next renewal, the replaced instant was called beside the run that
# replaced it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "overlap: replace makes no call of a trigger it replaced before its call started"
it_db
sink_up
SHARDS=1
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 30s, heartbeat: 10s, claim_ahead: 3s}"
apply_jobs <<YAML
jobs:
  - {id: rp.a, schedule: {cron: "*/5 * * * * ?"}, overlap: replace, target: {url: "http://$SINK_ADDR/effects/rp.a", timeout: 5s}}
YAML
lead_shards 20 n1
AHEAD="state = 'running' AND source = 'schedule' AND scheduled_at > clock_timestamp() + interval '1.5 s'"
ahead() {
	read -r ID INST < <(sql "select id, extract(epoch from scheduled_at)::bigint from triggers
		where job_id = 'rp.a' and $AHEAD order by scheduled_at limit 1" | tr '|' ' ')
	[ -n "$ID" ]
}
wait_until "an instant of rp.a claimed ahead, 1.5 s or more before it" 20 ahead
expect_exit "a manual run of rp.a now" 0 "$PAL" trigger --job rp.a --reason "replace the claimed-ahead one"
past() { [ "$(sql "select clock_timestamp() > to_timestamp($INST + 3)")" = t ]; }
wait_until "the claimed-ahead instant has passed" 10 past
expect_eq "the manual run was called" 1 \
	"$(sql "select (count(*) > 0)::int from sink_effects e join triggers t on t.id = e.trigger_id where t.job_id = 'rp.a' and t.source = 'manual'")"
expect_eq "trigger $ID, replaced before its instant: never called, cancelled" "0 cancelled" \
	"$(sql "select count(*) from sink_effects where trigger_id = $ID") $(sql "select state from triggers where id = $ID")"
stop_node n1
finish
