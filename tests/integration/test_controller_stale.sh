#!/usr/bin/env bash
# A stale leader is stopped by PostgreSQL, not by luck: the node is told to
# ignore ZooKeeper's loss of leadership (drill-only fault injection), paused
# past its session, and resumed after a successor claimed its shards.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G6 - a stale controller never moves a watermark: its fenced write gets 0 rows, it steps down, and a log line and a counter say so"

fresh_db it_stale
"$PAL" migrate >/dev/null
SHARDS=4 ZK_SESSION=2s write_conf "$CLUSTER_CONF"
SHARDS=4
gen_jobs "$NODE_DIR/jobs.yaml" 20 "*/2 * * * * ?"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
PALISADE_FAULT_IGNORE_ZK_LOSS=1 start_node stale
wait_until "the node leads all 4 shards" 20 all_shards_led
T0=$(now_rfc3339)
sleep 4
old_epoch=$(sql "select max(epoch) from shards where leader = 'stale'")
pause_node stale
start_node successor
taken() { [ "$(sql "select count(*) from shards where leader = 'successor'")" = 4 ]; }
wait_until "the successor claims every shard once the stopped leader's session expires" 20 taken
check "every successor epoch is larger than the stale leader's" [ "$(sql "select min(epoch) from shards")" -gt "$old_epoch" ]
wm_before=$(sql "select string_agg(extract(epoch from watermark)::bigint::text, ',' order by shard_id) from shards")
resume_node stale
wait_until "the resumed stale leader logs its fenced write" 15 grep -q '"event":"controller.fenced"' "$NODE_DIR/stale.log"
expect_match "the log says the watermark write got 0 rows" "0 rows" "$(grep '"event":"controller.fenced"' "$NODE_DIR/stale.log" | head -1)"
check "palisade_controller_fenced_total > 0 on the stale node" [ "$(metric stale palisade_controller_fenced_total | cut -d. -f1)" -ge 1 ]
sleep 3
expect_eq "no shard is held at the stale epoch (or older) by the stale node" 0 \
	"$(sql "select count(*) from shards where leader = 'stale' and epoch <= $old_epoch")"
wm_after=$(sql "select string_agg(extract(epoch from watermark)::bigint::text, ',' order by shard_id) from shards")
mono=1
IFS=, read -ra a <<<"$wm_before"; IFS=, read -ra b <<<"$wm_after"
for i in "${!a[@]}"; do [ "${b[$i]}" -ge "${a[$i]}" ] || mono=0; done
expect_eq "watermarks only moved forward" 1 "$mono"
# The window ends 3 s from now; verify once every shard has planned past
# it (rather than a lookahead's margin of wall clock after it).
T1=$(rfc3339_ago -3)
sleep 3
wait_until "every shard planned past the window" 15 planned_past "$T1"
expect_exit "verify: nothing missing or doubled" 0 "$PAL" verify --from "$T0" --to "$T1"
finish
