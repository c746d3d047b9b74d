#!/usr/bin/env bash
# While the shard's controller is down past its lookahead: a cron job
# (fire_all) gets v2 (same cron, misfire skip), then v3 a one-shot. v2
# would take over at W, but v3 takes over at its own apply, so v2 is
# activated (at W) and owns (W, apply3]: its skip decides those seconds, and
# v1 (fire_all) runs none of those due after v2 was applied. docs/jobs.md
# "Misfire policy across a version switch".
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a version applied while down decides the instants due after its apply"
fresh_db it_leftout_oneshot
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=1s LOOKAHEAD=3s MISFIRE=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/c.yaml" 1 "* * * * * ?" t1 zl.left
L=zl.left.job-1
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml"
# v1 active and running when f1 dies (after a fixed sleep, a loaded box
# could kill it before the activation: the versions applied below would
# then find no active version to switch from)
wait_until "v1 activated and one of its instants run" 30 \
	has "select count(*) from triggers where job_id = '$L' and version = 1 and state = 'succeeded'"
kill9_node f1
W0=$(sql "select extract(epoch from watermark)::bigint from shards limit 1")
while [ "$(date +%s)" -le $(( W0 + 3 )) ]; do sleep 0.5; done
sed -i "s|policy: fire_all|policy: skip|" "$NODE_DIR/c.yaml"
expect_exit "while down: $L v2, misfire skip" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml"
sleep 6
AT=$(( $(date +%s) + 2 ))
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|; s|policy: skip|policy: fire_all|" "$NODE_DIR/c.yaml"
expect_exit "while down: $L v3, a one-shot" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml"
sleep 10
start_node f1
wait_until "shards led again" 40 all_shards_led
sleep 12
sql "select version, effective_from, created_at, spec->'schedule'->>'at', spec->'misfire'->>'policy' from job_versions where job_id = '$L' order by 1" | sed "s/^/    | /"
sql "select version, source, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$L' group by 1, 2, 3 order by 5" | sed "s/^/    | /"
"$PAL" misfires --job "$L" 2>&1 | sed "s/^/    | /"
S2=$(sql "select ceil(extract(epoch from created_at))::bigint from job_versions where job_id = '$L' and version = 2")
echo "    | W0 $W0, v2 stored $S2"
T2=$(( $(date +%s) - 6 ))
"$PAL" verify --job "$L" --from "$(iso $(( W0 - 10 )))" --to "$(iso $T2)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
echo "    | verify rc $rc: $(head -c 600 "$NODE_DIR/v.out")"
expect_eq "$L: verify clean" "0 0 0" "$(jq -r '"\(.missing) \(.unexpected)"' "$NODE_DIR/v.out" 2>/dev/null) $rc"
expect_eq "$L: v2 was activated" 1 "$(sql "select count(*) from job_versions where job_id = '$L' and version = 2 and effective_from is not null")"
expect_eq "$L: no cron second due after v2 (skip) was applied ran as a catch-up" 0 \
	"$(sql "select count(*) from triggers where job_id = '$L' and source = 'catchup' and scheduled_at >= to_timestamp($S2) and scheduled_at < to_timestamp($AT)")"
stop_node x1
stop_node f1
finish
