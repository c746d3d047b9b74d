#!/usr/bin/env bash
# A pause during a resume's ramp, then a second resume (docs/operations.md,
# "resume --ramp").
# Every held instant must have exactly one effect or be a recorded misfire,
# and a second resume with --ramp 0 ("release everything now") should
# release what the pause held at once.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "resume --ramp, a pause mid-ramp, a second resume: nothing lost or doubled, and the second resume releases what it held on its own ramp (0: at once) and counts it"
SHARDS=1
ramp_held 60 r1
out=$("$PAL" resume --job rp.all --reason "ramp" --ramp 30s --config "$CLUSTER_CONF" --output json)
echo "$out" | jq -c '{released, misfired, ramp_ms, ramp_until}' | sed 's/^/    | /'
sleep 6
expect_exit "pause mid-ramp" 0 "$PAL" pause --job rp.all --reason "again"
sleep 5
S1=$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state = 'succeeded'")
echo "    figure: $S1 of 60 ran before the second pause took hold"
out2=$("$PAL" resume --job rp.all --reason "all now" --ramp 0s --config "$CLUSTER_CONF" --output json)
echo "$out2" | jq -c '{released, misfired, paused_to_pending, ramp_ms, ramp_until}' | sed 's/^/    | /'
R2=$(date +%s)
REL=$(echo "$out2" | jq -r '[.released[]] | add // 0')
LEFT=$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state in ('pending','retry_wait','paused')")
echo "    figure: second resume says released $REL; $LEFT triggers were waiting"
done_all() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state in ('succeeded','skipped')")" -eq 60 ]; }
wait_wall "every held instant ran or was skipped" 40 done_all
last=$(sql "select round(extract(epoch from max(l.applied_at)) - $R2, 1) from sink_ledger l join trigger_jobs t on t.id = l.trigger_id where t.job_id = 'rp.all'")
echo "    figure: last effect +$last s after the second resume (--ramp 0)"
check "resume --ramp 0 releases what it held at once (last effect +$last s <= 4)" [ "$(echo "$last <= 4" | bc)" = 1 ]
check "the second resume counts what it released (released $REL >= waiting $LEFT)" [ "$REL" -ge "$LEFT" ]
expect_eq "at most one effect per instant" 0 "$(sql "select count(*) from (select l.idempotency_key from sink_ledger l join trigger_jobs t on t.id = l.trigger_id where t.job_id = 'rp.all' group by 1 having count(*) > 1) d")"
SK=$(sql "select count(*) from trigger_jobs where job_id = 'rp.all' and state = 'skipped'")
MF=$(sql "select coalesce(sum(count),0) from misfires where job_id = 'rp.all'")
echo "    figure: skipped $SK, misfire rows count $MF"
expect_eq "every skipped instant is a recorded misfire" "$SK" "$MF"
finish
