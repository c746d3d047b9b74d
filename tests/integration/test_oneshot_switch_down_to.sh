#!/usr/bin/env bash
# A cron job (fire_all) made a one-shot while its shard's controller is down
# longer than the lookahead (zo.plain), and made a cron job again before the
# controller returns (zo.once): the one-shot takes over at its apply, not at
# the old watermark (docs/jobs.md, "Where a new version takes over"), so the
# cron instants between the old watermark and the apply (the job was live
# under its cron version) run or are recorded, none vanishes; the one-shot
# fires once. Also within one scan: delete --wait 0, apply, apply changed
# (zo.chain: two cron versions after the stop). verify agrees.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a switch to a one-shot while the controller is down loses no instant"
fresh_db it_oneshot_down_to
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=3s LOOKAHEAD=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/o.yaml" 1 "* * * * * ?" t1 zo.once
gen_sink_jobs "$NODE_DIR/p.yaml" 1 "* * * * * ?" t1 zo.plain
gen_sink_jobs "$NODE_DIR/c.yaml" 1 "* * * * * ?" t1 zo.chain
cp "$NODE_DIR/o.yaml" "$NODE_DIR/o-cron.yaml"
cp "$NODE_DIR/c.yaml" "$NODE_DIR/c2.yaml"
sed -i "s|timeout: 2s|timeout: 3s|" "$NODE_DIR/c2.yaml"
O=zo.once.job-1
P=zo.plain.job-1
C=zo.chain.job-1
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(( $(date +%s) + 1 ))
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o.yaml" "$NODE_DIR/p.yaml" "$NODE_DIR/c.yaml"
sleep 7
expect_exit "delete $C" 0 "$PAL" delete --wait 0 --reason stop "$C"
expect_exit "apply $C" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml"
expect_exit "apply $C changed" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c2.yaml"
sleep 4
W0=$(sql "select extract(epoch from watermark)::bigint from shards limit 1")
stop_node f1
echo "    | watermark when the controller stopped: $W0 (now $(date +%s))"
sleep 12
AT=$(( $(date +%s) + 3 ))
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|" "$NODE_DIR/o.yaml" "$NODE_DIR/p.yaml"
expect_exit "make $O and $P one-shots while down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o.yaml" "$NODE_DIR/p.yaml"
sleep 5
expect_exit "make $O a cron job again while down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o-cron.yaml"
start_node f1
wait_until "shards led again" 40 all_shards_led
sleep 10
T1=$(( $(date +%s) - 2 ))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= to_timestamp($T1) and state not in ('succeeded', 'cancelled')")" = 0 ]; }
wait_until "settled" 40 settled
ver() { sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$1' and version = $2"; }
for j in $O $P $C; do
	sql "select version, effective_from, created_at, activated_at, spec->'schedule' from job_versions where job_id = '$j' order by 1" | sed "s/^/    | /"
	sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$j' and scheduled_at > to_timestamp($T0 + 5) group by 1, 2 order by 4" | sed "s/^/    | /"
	sql "select count(*), min(range_from), max(range_to), string_agg(distinct reason, ',') from misfires where job_id = '$j'" | sed "s/^/    | misfires: /"
	"$PAL" verify --job "$j" --from "$(iso $T0)" --to "$(iso $T1)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
	echo "    | verify $j: $(jq -c "{missing, unexpected, misfired}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
	expect_eq "$j: verify clean" "0 0 0" "$(jq -r '"\(.missing) \(.unexpected)"' "$NODE_DIR/v.out" 2>/dev/null) $rc"
done
for j in $O $P; do
	S=$(ver $j 2)
	echo "    | $j: watermark $W0, one-shot stored $S, at $AT"
	expect_eq "$j: every cron second from the old watermark to the one-shot's apply ran once or is a recorded misfire" 0 \
		"$(sql "select count(*) from generate_series($W0 + 1, $S) s where (select count(*) from triggers t where t.job_id = '$j' and t.scheduled_at = to_timestamp(s) and t.state = 'succeeded') <> 1 and not exists (select 1 from misfires m where m.job_id = '$j' and to_timestamp(s) between m.range_from and m.range_to)")"
done
expect_eq "$P: the one-shot's instant ran once" 1 "$(sql "select count(*) from triggers where job_id = '$P' and scheduled_at = to_timestamp($AT) and state = 'succeeded'")"
R=$(ver $C 2); A=$(ver $C 3); A2=$(ver $C 4)
expect_eq "$C: four versions" 4 "$(sql "select latest_version from jobs where job_id = '$C'")"
expect_eq "$C: every second from the re-apply to 8 s after the last apply ran once" 0 \
	"$(sql "select count(*) from generate_series($A + 1, $A2 + 8) s where (select count(*) from triggers t where t.job_id = '$C' and t.scheduled_at = to_timestamp(s) and t.state = 'succeeded') <> 1")"
stop_node x1
stop_node f1
finish
