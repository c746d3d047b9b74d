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
"$PAL" apply "$NODE_DIR/jobs.yaml" >/dev/null
PALISADE_FAULT_IGNORE_ZK_LOSS=1 start_node stale
wait_until "the node leads all 4 shards" 20 all_shards_led
start_node successor
sleep 2
epoch_before=$(sql "select max(epoch) from shards")
pause_node stale
taken() { [ "$(sql "select count(*) from shards where leader = 'successor'")" = 4 ]; }
wait_until "the successor claims every shard while the leader is stopped" 20 taken
check "successor epochs are larger" [ "$(sql "select min(epoch) from shards")" -gt "$epoch_before" ]
wm_before=$(sql "select string_agg(watermark::text, ',' order by shard_id) from shards")
resume_node stale
wait_until "the stale leader logs its fenced write" 15 grep -q '"event":"controller.fenced"' "$NODE_DIR/stale.log"
expect_match "with 0 rows" "0 rows" "$(grep '"event":"controller.fenced"' "$NODE_DIR/stale.log" | head -1)"
check "the fenced counter is positive" [ "$(metric stale palisade_controller_fenced_total | cut -d. -f1)" -ge 1 ]
sleep 2
expect_eq "every shard is still led by the successor" 4 "$(sql "select count(*) from shards where leader = 'successor'")"
expect_eq "the stale node plans no shard any more" 0 "$(curl -s "http://${NODE_ADMIN[stale]}/status" | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("shards") or []))')"
T1=$(rfc3339_ago 8)
T0=$(sql "select to_char(min(effective_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from job_versions")
expect_exit "verify: nothing missing or doubled" 0 "$PAL" verify --from "$T0" --to "$T1"
finish
