#!/usr/bin/env bash
# A one-shot U in shadow with a live dependent D after it (D follows U's
# shadow instants into shadow: the old system runs the chain).  U is moved
# while in shadow.  The takeover drops U's old shadow row (audited
# trigger.drop): a cancelled one would count as a finished upstream
# instant that D runs live (on: finished) or as a failed one (on:
# succeeded: an upstream_failed misfire).  D makes no call.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a live dependent of a one-shot moved while in shadow makes no call"
fresh_db it_shadow_moved_after
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
start_node f1
wait_until "shards led" 40 all_shards_led
NOW=$(date +%s)
jobs() { # AT
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: zm.up, mode: shadow, schedule: {at: "$(iso $1)"}, target: {url: "http://$SINK_ADDR/effects/up", timeout: 2s}}
  - {id: zm.fin, after: [{job: zm.up, on: finished}], target: {url: "http://$SINK_ADDR/effects/fin", timeout: 2s}}
  - {id: zm.suc, after: [{job: zm.up}], target: {url: "http://$SINK_ADDR/effects/suc", timeout: 2s}}
YAML
}
jobs $((NOW + 10))
expect_exit "apply U (shadow one-shot at now+10) and its live dependents" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
planned() { [ "$(sql "select count(*) from triggers where job_id = 'zm.up' and scheduled_at = to_timestamp($((NOW + 10)))")" = 1 ]; }
wait_until "U's instant planned (shadow)" 10 planned
jobs $((NOW + 14))
expect_exit "move U to now+14 (still shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
sleep $((NOW + 22 - $(date +%s)))
sql "select job_id, version, extract(epoch from scheduled_at)::bigint - $NOW, state from triggers where job_id like 'zm.%' order by 1, 3" | sed 's/^/    /'
sql "select job_id, reason, extract(epoch from range_from)::bigint - $NOW from misfires where job_id like 'zm.%'" | sed 's/^/    misfire: /'
expect_eq "U's old shadow row dropped (no row at now+10)" 0 \
	"$(sql "select count(*) from triggers where job_id = 'zm.up' and scheduled_at = to_timestamp($((NOW + 10)))")"
expect_eq "the drop audited (trigger.drop), no cancel" "1 0" \
	"$(sql "select count(*) filter (where action = 'trigger.drop'), count(*) filter (where action = 'cancel') from audit_log where scope = 'job:zm.up'" | tr '|' ' ')"
expect_eq "zm.fin (live after a shadow upstream): no call" 0 \
	"$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id where t.job_id = 'zm.fin'")"
expect_eq "no effect of zm.fin at the sink" 0 "$(sql "select count(*) from sink_effects where idempotency_key like 'zm.fin/%'")"
expect_eq "zm.suc: no upstream_failed for the moved instant" 0 \
	"$(sql "select count(*) from misfires where job_id = 'zm.suc' and reason = 'upstream_failed'")"
finish
