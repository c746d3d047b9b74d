#!/usr/bin/env bash
# resume --ramp: a long pause's backlog reaches the service along a ramp
# (a small start rate rising over the duration), not in one second, and the
# ramp is data in the triggers: it goes on when the executor that started
# it dies and another one claims.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 + G3 - resume --ramp 30s spreads 300 held fire_all instants over about 30 s (at most the start rate in the first second), survives the loss of an executor, and every instant has exactly one effect"
T_START=$(date +%s)

fresh_db it_resume_ramp
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2 MISFIRE=3s LOOKAHEAD=1s OVERLAP=2s write_conf "$CLUSTER_CONF" \
	"executor: {lease: 4s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: rp.all, schedule: {cron: "0 0 0 1 1 ? 2099"}, misfire: {policy: fire_all, catchup_window: 1h, max_catchup: 1000}, target: {url: "http://$SINK_ADDR/effects/ramp"}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_exit "pause the job" 0 "$PAL" pause --job rp.all --reason "ramp test"
# 300 scheduled instants the pause held, whole seconds (the key template
# has the instant in seconds) from 5 to 1 minute ago: older than the
# threshold, inside the window (the schedule itself fires in 2099: these
# are the only triggers).
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'rp.all', 1, t, 0, 'schedule', 'default', 'default', t, 0
     FROM (SELECT date_trunc('second', now()) - (60 + g) * interval '1 second' AS t
           FROM generate_series(1, 300) g) x"
start_node r1
start_node r2
wait_until "shards led" 20 all_shards_led
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
