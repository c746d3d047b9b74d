#!/usr/bin/env bash
# resume --ramp: a long pause's backlog reaches the service along a ramp
# (a small start rate rising over the duration), not in one second, and the
# ramp is data in the triggers: it goes on when the executor that started
# it dies and another one claims.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 + G3 - resume --ramp 30s spreads 300 held fire_all instants over about 30 s (at most the start rate in the first second), survives the loss of an executor, and every instant has exactly one effect"
T_START=$(date +%s)

# 300 scheduled instants the pause held, from 5 to 1 minute ago (the
# schedule itself fires in 2099: these are the only triggers)
SHARDS=2
ramp_held 300 r1 r2
expect_eq "the pause holds 300 instants" 300 "$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state = 'pending'")"
out=$("$PAL" resume --job rp.all --reason "ramp" --ramp 30s --config "$CLUSTER_CONF" --output json)
R=$(sql "select extract(epoch from (select at from audit_log where action = 'resume' order by at desc limit 1))")
echo "$out" | jq -c '{released, misfired, ramp_ms, ramp_until}' | sed 's/^/    | /'
expect_eq "all 300 released by their fire_all policy, none a misfire" '300 {}' "$(echo "$out" | jq -rc '"\(.released.fire_all) \(.misfired)"')"
# The ramp is data: the executor that led it dies mid-ramp, the other
# claims the rest (its claimed-but-unsent calls after their lease).
sleep 10
kill9_node r1
done_all() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state = 'succeeded'")" -eq 300 ]; }
wait_wall "every held instant runs" 40 done_all
# Effect times relative to the resume, from the sink's ledger.
at() { sql "select count(*) from sink_ledger l join trigger_jobs t on t.id = l.trigger_id where t.job_id = 'rp.all' and l.applied_at < to_timestamp($R + $1)"; }
first=$(at 1); mid=$(at 15); last=$(sql "select round(extract(epoch from max(l.applied_at)) - $R, 1) from sink_ledger l join trigger_jobs t on t.id = l.trigger_id where t.job_id = 'rp.all'")
echo "    figure: effects within 1 s of the resume $first, within 15 s $mid, the last at +$last s (even spread: 10, 150)"
check "first second: at most the start rate (1/s, plus the one at 0: $first <= 2)" [ "$first" -le 2 ]
check "half way the ramp has released well under half ($mid in 40..130; a quadratic ramp: 82)" [ "$mid" -ge 40 -a "$mid" -le 130 ]
check "the last effect lands near the end of the ramp (+$last s in 25..36)" [ "$(echo "$last >= 25 && $last <= 36" | bc)" = 1 ]
expect_eq "exactly one effect per instant (sink ledger)" "300 300" "$(sql "select count(*), count(distinct l.idempotency_key) from sink_ledger l join trigger_jobs t on t.id = l.trigger_id where t.job_id = 'rp.all'" | tr '|' ' ')"
echo "    figure: took $(( $(date +%s) - T_START )) s"
finish
