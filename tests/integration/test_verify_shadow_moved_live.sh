#!/usr/bin/env bash
# Job S in tenant t2, in shadow, for about 10 s (its past instants are
# `shadow` rows: the old system ran them), then applied into live tenant
# t1.  The apply takes every unfinished row along to t1, the past shadow
# ones too, but changes the side of those from the apply on only: verify
# judges a past shadow row by the job's scope at its instant (t2, shadow)
# and finds the shadow period complete, as before the move.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "verify of a past shadow period stays OK after its job moves into a live tenant"
it_db
sink_up
SHARDS=1
LOOKAHEAD=5s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
lead_shards 40 f1
expect_exit "tenant t2 in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --tenant t2 --reason s
S=sm.job-1
gen_sink_jobs "$NODE_DIR/s1.yaml" 1 "* * * * * ?" t2 sm
expect_exit "apply S (t2, shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s1.yaml"
B=$(date +%s)
sleep 10
"$PAL" verify --job $S --from "$(iso $((B + 3)))" --to "$(iso $((B + 8)))" >"$NODE_DIR/v0.out" 2>&1
expect_eq "before the move: verify S over B+3..B+8 OK" 0 "$?"
sed 's/^/    verify before: /' "$NODE_DIR/v0.out" | head -3
echo "    S rows B+3..B+8 before the move: $(sql "select string_agg(tenant || ':' || state, ' ' order by scheduled_at) from triggers where job_id = '$S' and scheduled_at between to_timestamp($B + 3) and to_timestamp($B + 8)")"
gen_sink_jobs "$NODE_DIR/s2.yaml" 1 "* * * * * ?" t1 sm
expect_exit "apply S into t1 (live)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s2.yaml"
sleep 2
echo "    S rows B+3..B+8 after the move: $(sql "select string_agg(tenant || ':' || state, ' ' order by scheduled_at) from triggers where job_id = '$S' and scheduled_at between to_timestamp($B + 3) and to_timestamp($B + 8)")"
"$PAL" verify --job $S --from "$(iso $((B + 3)))" --to "$(iso $((B + 8)))" >"$NODE_DIR/v1.out" 2>&1
expect_eq "after the move: verify S over the same past range B+3..B+8 still OK" 0 "$?"
sed 's/^/    verify after: /' "$NODE_DIR/v1.out" | head -5
A=$(date +%s)
sleep 7
"$PAL" verify --job $S --from "$(iso $((A + 1)))" --to "$(iso $((A + 5)))" >"$NODE_DIR/v2.out" 2>&1
expect_eq "after the move: verify S over A+1..A+5 (live, called) OK" 0 "$?"
sed 's/^/    verify live: /' "$NODE_DIR/v2.out" | head -3
expect_eq "palisade called none of S's instants B+3..B+8 (old system's)" 0 \
	"$(sql "select count(*) from sink_effects where idempotency_key like '$S/%' and scheduled_at between to_timestamp($B + 3) and to_timestamp($B + 8)")"
stop_node f1
finish
