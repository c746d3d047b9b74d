#!/usr/bin/env bash
# A roll-back of a chain while an upstream call is in flight, when palisade
# has already given the dependent instant up (docs/migrating.md, "Chains of
# jobs"): group ch (ch.up, and ch.down `after: ch.up` within 1 s) cut over
# 100 %; the sink holds ch.up's call at t until ch.down at t is recorded
# `upstream_late` (a misfire row, no trigger), then `rollback --group ch
# --wait 0s`.  The answer lists ch.up at t in flight, and not ch.down at t:
# palisade decided that instant (it never runs it, `palisade misfires` reports
# it), so the roll-back plans no trigger for it, hands nothing back and counts
# nothing; palisade finishes ch.up's call and never calls ch.down at t.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a roll-back never hands the old system a dependent instant that palisade already gave up (upstream_late)"
source tests/integration/chain_flight.sh
chain_flight_start it_rollback_after_late ", within: 1s" || { finish; exit 1; }
T=$(sql "select min(scheduled_at) from trigger_jobs where job_id = 'ch.up' and state = 'running'")
T=$(date -u -d "$T" +%FT%TZ)
wait_until "ch.down at $T recorded upstream_late while ch.up's call is held" 20 has \
	"select count(*) from misfires where job_id = 'ch.down' and reason = 'upstream_late' and range_from <= '$T' and range_to >= '$T'"
out=$("$PAL" rollback --config "$CLUSTER_CONF" --group ch --reason "back to the old system" --wait 0s --output json); ec=$?
echo "    rollback: $(jq -c '{at, handed_back, later, in_flight, rows: [.unfinished[] | "\(.job_id) \(.scheduled_at) \(.state) in_flight=\(.in_flight)"]}' <<<"$out")"
expect_eq "roll-back: exit 0" 0 $ec
expect_eq "the upstream instant in flight at $T is listed for the old system" 1 \
	"$(jq --arg t "$T" '[.unfinished[] | select(.job_id == "ch.up" and .scheduled_at == $t and .in_flight)] | length' <<<"$out")"
expect_eq "ch.down at $T (upstream_late) is not listed" 0 \
	"$(jq --arg t "$T" '[.unfinished[] | select(.job_id == "ch.down" and .scheduled_at == $t)] | length' <<<"$out")"
expect_eq "nothing handed back (ch.up at $T is in flight, ch.down at $T decided)" 0 "$(jq -r '.handed_back' <<<"$out")"
expect_eq "ch.down at $T: no trigger planned, its misfire row kept" "0 1" \
	"$(sql "select count(*) from trigger_jobs where job_id = 'ch.down' and scheduled_at = '$T'") $(sql "select count(*) from misfires where job_id = 'ch.down' and reason = 'upstream_late' and range_from <= '$T' and range_to >= '$T'")"
sink_faults '{"paused": false}'
wait_until "palisade finishes the upstream call at $T" 15 has "select count(*) from trigger_jobs where job_id = 'ch.up' and scheduled_at = '$T' and state = 'succeeded'"
sleep 3
expect_eq "palisade never plans nor calls ch.down at $T" "0 0" \
	"$(sql "select count(*) from trigger_jobs where job_id = 'ch.down' and scheduled_at = '$T'") $(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'ch.down' and t.scheduled_at = '$T'")"
finish
