#!/usr/bin/env bash
# A one-shot job whose instant passes while its shard's controller is down,
# made a cron job after that instant (still down; zf.x), and changed again
# before the controller returns (zf.y): the one-shot's instant fires once, and
# the cron version fires no instant from before its own apply (docs/jobs.md,
# "Where a new version takes over": a version that follows a one-shot takes
# over when it was stored); the first cron version of zf.y is not left out,
# so the planner and verify agree (verify clean).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a switch from a one-shot while the controller is down fires nothing before it"
fresh_db it_oneshot_down_from
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=3s LOOKAHEAD=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/x.yaml" 1 "* * * * * ?" t1 zf.x
gen_sink_jobs "$NODE_DIR/y.yaml" 1 "* * * * * ?" t1 zf.y
cp "$NODE_DIR/x.yaml" "$NODE_DIR/x-cron.yaml"
cp "$NODE_DIR/y.yaml" "$NODE_DIR/y-cron.yaml"
cp "$NODE_DIR/y.yaml" "$NODE_DIR/y-cron2.yaml"
sed -i "s|timeout: 2s|timeout: 3s|" "$NODE_DIR/y-cron2.yaml"
X=zf.x.job-1
Y=zf.y.job-1
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(date +%s)
AT=$(( T0 + 16 ))
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|" "$NODE_DIR/x.yaml" "$NODE_DIR/y.yaml"
expect_exit "apply $X and $Y as one-shots at T0+16" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/x.yaml" "$NODE_DIR/y.yaml"
sleep 5
W0=$(sql "select extract(epoch from watermark)::bigint from shards limit 1")
stop_node f1
echo "    | watermark when the controller stopped: $W0, one-shot at $AT"
while [ "$(date +%s)" -le $(( AT + 4 )) ]; do sleep 1; done
expect_exit "make $X a cron job after its instant, while down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/x-cron.yaml"
expect_exit "make $Y a cron job after its instant, while down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/y-cron.yaml"
sleep 3
expect_exit "change $Y's cron version, while down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/y-cron2.yaml"
start_node f1
wait_until "shards led again" 40 all_shards_led
sleep 8
T1=$(( $(date +%s) - 2 ))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= to_timestamp($T1) and state not in ('succeeded', 'cancelled')")" = 0 ]; }
wait_until "settled" 40 settled
sql "select version, effective_from, created_at, activated_at, spec->'schedule' from job_versions where job_id = '$X' order by 1" | sed "s/^/    | /"
sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$X' group by 1, 2 order by 4" | sed "s/^/    | /"
sql "select count(*) from misfires where job_id = '$X'" | sed "s/^/    | misfires: /"
S=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$X' and version = 2")
expect_eq "$X: the one-shot's instant (before the cron version's apply) ran once or is a recorded misfire" 1 \
	"$(sql "select count(*) + (select count(*) from misfires where job_id = '$X' and to_timestamp($AT) between range_from and range_to) from triggers where job_id = '$X' and scheduled_at = to_timestamp($AT) and state = 'succeeded'")"
expect_eq "$X: no cron instant from before the cron version's apply ran" 0 \
	"$(sql "select count(*) from triggers where job_id = '$X' and version = 2 and scheduled_at <= to_timestamp($S) and state <> 'cancelled'")"
"$PAL" verify --job "$X" --from "$(iso $T0)" --to "$(iso $T1)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
echo "    | verify $X: $(jq -c "{missing, unexpected, misfired}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
sql "select version, effective_from, created_at, activated_at from job_versions where job_id = '$Y' order by 1" | sed "s/^/    | /"
sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$Y' group by 1, 2 order by 4" | sed "s/^/    | /"
S=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$Y' and version = 2")
expect_eq "$Y: no cron instant from before the first cron version's apply ran" 0 \
	"$(sql "select count(*) from triggers where job_id = '$Y' and version >= 2 and scheduled_at <= to_timestamp($S) and state <> 'cancelled'")"
"$PAL" verify --job "$Y" --from "$(iso $T0)" --to "$(iso $T1)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
echo "    | verify $Y: $(jq -c "{missing, unexpected, misfired, samples}" "$NODE_DIR/v.out" 2>/dev/null | head -c 600 || head -c 300 "$NODE_DIR/v.out")"
expect_eq "$Y: verify agrees with what ran (clean)" "0 0 0" "$(jq -r '"\(.missing) \(.unexpected)"' "$NODE_DIR/v.out" 2>/dev/null) $rc"
stop_node x1
stop_node f1
finish
