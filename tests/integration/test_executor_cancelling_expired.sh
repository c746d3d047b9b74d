#!/usr/bin/env bash
# A 'cancelling' trigger (a run replaced by a newer one of an overlap:
# replace job, or cancelled by an operator while running) whose executor
# died or gave up before its safe point: its lease expires, and no claim takes
# it back (only expired 'running' leases are re-claimed).  Found by the random
# drill (chaos/random.sh): such triggers stayed 'cancelling' for ever.  An
# executor's lease thread now ends them 'cancelled'; a cancelling trigger
# whose lease is still live is left to its holder.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G3 - every trigger reaches a terminal state: an expired 'cancelling' trigger ends 'cancelled' without an operator; a live one is left to its holder"

fresh_db it_cancelling_expired
"$PAL" migrate >/dev/null
SHARDS=2 write_conf "$CLUSTER_CONF"
SHARDS=2
gen_jobs "$NODE_DIR/jobs.yaml" 1 "*/2 * * * * ?" skip cx
expect_exit "apply one job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node planner
planned() { [ "$(sql "select count(*) from triggers where state = 'pending'")" -ge 2 ]; }
wait_until "the controller planned two triggers" 30 planned
stop_node planner
expect_exit "pause the job (no executor claims its pending triggers)" 0 "$PAL" pause --job cx.job-1 --reason test

# Two triggers claimed by a node that is gone ('ghost') and then replaced:
# one lease expired, one still live for an hour.
read -r dead live <<<"$(sql "select string_agg(id::text, ' ' order by id) from (select id from triggers where state = 'pending' order by id limit 2) x")"
to_cancelling() {
	sql "update triggers set state = 'running', fence = nextval('palisade_fence'), lease_owner = 'ghost',
	       lease_until = clock_timestamp() + interval '$2', attempt_count = 1 where id = $1" >/dev/null
	sql "update triggers set state = 'cancelling', last_error_class = 'replaced' where id = $1" >/dev/null
}
to_cancelling "$dead" "-1 second"
to_cancelling "$live" "1 hour"
expect_eq "both triggers cancelling" "cancelling cancelling" \
	"$(sql "select string_agg(state, ' ' order by id) from triggers where id in ($dead, $live)")"

ZK_SESSION=2s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 2s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
start_node ex
ended() { [ "$(sql "select state from triggers where id = $dead")" = cancelled ]; }
wait_until "the expired cancelling trigger ends cancelled (lease thread, every third heartbeat)" 20 ended
check "it has a finished_at and no lease" [ "$(sql "select finished_at is not null and lease_owner is null and lease_until is null from triggers where id = $dead")" = t ]
sleep 4
expect_eq "the cancelling trigger with a live lease is left to its holder" cancelling \
	"$(sql "select state from triggers where id = $live")"
check "the executor logged executor.cancelling_expired" grep -q '"event":"executor.cancelling_expired"' "$NODE_DIR/ex.log"
finish
