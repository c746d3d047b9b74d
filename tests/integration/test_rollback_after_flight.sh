#!/usr/bin/env bash
# A roll-back of a chain while an upstream call is in flight
# (docs/migrating.md, "Chains of jobs"): group ch (ch.up, and ch.down
# `after: ch.up`) cut over 100 %, then `rollback --group ch --wait 0s`
# while the sink holds ch.up's call at t.  The answer lists ch.up at t in
# flight: the old system takes it over, and in its chain that run starts
# ch.down at t.  So the roll-back plans ch.down at t shadow, handed back,
# and lists it with its key; palisade finishes ch.up's call at t and never
# calls ch.down at t.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a roll-back that hands an upstream call in flight to the old system hands it the dependent instant too: exactly one system runs it"
source tests/integration/chain_flight.sh
chain_flight_start it_rollback_after_flight || { finish; exit 1; }
out=$("$PAL" rollback --config "$CLUSTER_CONF" --group ch --reason "back to the old system" --wait 0s --output json); ec=$?
echo "    rollback: $(jq -c '{at, handed_back, later, in_flight, rows: [.unfinished[] | "\(.job_id) \(.scheduled_at) \(.state) in_flight=\(.in_flight)"]}' <<<"$out")"
expect_eq "roll-back: exit 0" 0 $ec
T=$(jq -r '[.unfinished[] | select(.job_id == "ch.up" and .in_flight)][0].scheduled_at' <<<"$out")
check "the upstream instant in flight is listed for the old system ($T)" test "$T" != null
DOWN=$(jq -c --arg t "$T" '[.unfinished[] | select(.job_id == "ch.down" and .scheduled_at == $t)]' <<<"$out")
expect_eq "ch.down at $T is listed, handed back (shadow, not in flight)" "1 shadow false" \
	"$(jq -r 'length, .[0].state, .[0].in_flight' <<<"$DOWN" | xargs)"
check "ch.down at $T is listed with its key" test -n "$(jq -r '.[0].idempotency_key // empty' <<<"$DOWN")"
check "handed_back counts it" test "$(jq -r '.handed_back' <<<"$out")" -ge 1
sink_faults '{"paused": false}'
wait_until "palisade finishes the upstream call at $T" 15 has "select count(*) from trigger_jobs where job_id = 'ch.up' and scheduled_at = '$T' and state = 'succeeded'"
sleep 3
expect_eq "ch.down at $T stays shadow (one trigger, never claimed)" "shadow 0" \
	"$(sql "select string_agg(state || ' ' || attempt_count, ',') from trigger_jobs where job_id = 'ch.down' and scheduled_at = '$T'")"
expect_eq "palisade never calls ch.down at $T (the old system runs it)" 0 \
	"$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'ch.down' and t.scheduled_at = '$T'")"
expect_eq "nor any ch.down instant after the roll-back" 0 \
	"$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'ch.down' and t.scheduled_at > '$T'")"
finish
