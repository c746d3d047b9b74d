#!/usr/bin/env bash
# chaos/zk_acl.sh - drill zk-foreign-znode (chaos/run.sh): ZooKeeper access
# control with real palisade nodes under load.
#
# Before the cluster starts, someone who holds the credentials but is no
# palisade node plants election znodes at the head of two shards' queues (a
# persistent one in shard 0, an ephemeral one held open in shard 1): before
# access control, a planted znode blocked its shard until its session ended.
# Then two nodes with the credentials start under load; a process without
# credentials and one with other credentials try to read, create and delete
# under the cluster's root; a node with other credentials tries to join;
# the leader of shard 1 is killed with the planted znode still in the queue.
source tests/integration/lib.sh
CLUSTER_NAME=acl
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "only holders of the cluster's ZooKeeper credentials can read, create or delete its znodes; a foreign election znode is ignored and reported, never blocks a shard"

PROBE=${PALISADE_ITESTS:-build/itests}/coord_probe
export PALISADE_ZK_AUTH="palisade:drill-$$-$RANDOM"
BASE=/palisade-test/$CLUSTER_NAME
intrude() { "$PROBE" --intrude "$1" --path "$2" --zk "$PALISADE_ZK" "${@:3}"; }
declare -A FIG

fresh_db it_zk_acl
"$PAL" migrate >/dev/null
drill_load 4 3s 6s 1s 20 acl

p0=$(intrude plant-persistent "$BASE/shards/0000/election" --auth "$PALISADE_ZK_AUTH")
expect_match "a persistent foreign znode heads shard 0's election" 'rc=0 .*n_0000000000' "$p0"
mkfifo "$NODE_DIR/ghost.in"
"$PROBE" --intrude plant-ephemeral --path "$BASE/shards/0001/election" --zk "$PALISADE_ZK" \
	--auth "$PALISADE_ZK_AUTH" <"$NODE_DIR/ghost.in" >"$NODE_DIR/ghost.out" 2>&1 &
GHOST=$!
exec {gfd}>"$NODE_DIR/ghost.in"
trap 'stop_all_nodes; stop_sink; exec {gfd}>&-; wait $GHOST 2>/dev/null' EXIT
wait_until "an ephemeral foreign znode, held open, heads shard 1's" 10 grep -q 'rc=0 .*n_0000000000' "$NODE_DIR/ghost.out"

t=$(date +%s%3N)
start_node a1
start_node a2
wait_until "all shards led by the nodes despite the planted znodes" 30 all_shards_led
FIG[all_led_ms]=$(($(date +%s%3N) - t))
echo "    figure: all 4 shards led ${FIG[all_led_ms]} ms after the nodes started, foreign znodes at the head of 2 queues"
T0=$(rfc3339_ago -1)
counted() { curl -s "http://${NODE_ADMIN[a1]}/metrics" "http://${NODE_ADMIN[a2]}/metrics" | grep -q '^palisade_coord_foreign_znodes_total{shard="0",reason="persistent"} [1-9]'; }
wait_until "the persistent one is counted (palisade_coord_foreign_znodes_total)" 10 counted
check "and logged (election.foreign_znode)" grep -q '"event":"election.foreign_znode"' "$NODE_DIR/a1.log" "$NODE_DIR/a2.log"

refused=0 tried=0
for cred in "" "intruder:guess"; do
	args=()
	[ -n "$cred" ] && args=(--auth "$cred")
	for op in "children $BASE/nodes" "get $BASE/nodes/a1" "create $BASE/intruder" \
		"delete $BASE/nodes/a1" "plant-persistent $BASE/shards/0002/election"; do
		set -- $op
		out=$(intrude "$1" "$2" "${args[@]}")
		tried=$((tried + 1))
		grep -q 'rc=-102 ' <<<"$out" && refused=$((refused + 1))
	done
done
expect_eq "without credentials or with others: every read, create, plant and delete is refused (ZNOAUTH)" "$tried" "$refused"
FIG[intrusions_refused]=$refused
wrong_refused() { grep -q 'other ZooKeeper credentials' "$NODE_DIR/w1.log"; }
PALISADE_ZK_AUTH=intruder:guess "$PAL" node --config "$CLUSTER_CONF" --node-id w1 --admin 127.0.0.1:0 >"$NODE_DIR/w1.log" 2>&1 </dev/null &
W1=$!
wait_until "a node with other credentials is refused and says why" 15 wrong_refused
expect_eq "it leads nothing" 0 "$(sql "select count(*) from shards where leader = 'w1'")"
kill $W1 2>/dev/null; wait $W1 2>/dev/null

sleep 4
victim=$(sql "select leader from shards where shard_id = 1")
t=$(date +%s%3N)
kill9_node "$victim"
other=$([ "$victim" = a1 ] && echo a2 || echo a1)
all_other() { [ "$(sql "select count(*) from shards where leader = '$other'")" = 4 ]; }
wait_until "kill -9 of $victim: $other leads every shard, the ghost still queued in shard 1" 20 all_other
FIG[failover_ms]=$(($(date +%s%3N) - t))
echo "    figure: failover past the foreign znodes ${FIG[failover_ms]} ms (session 3000 ms)"
check "the ghost's znode is still there (it was skipped, not removed)" bash -c "kill -0 $GHOST"
sleep 6
T1=$(rfc3339_ago 4)
check_window "$T0" "$T1"
write_report "zk-foreign-znode"
finish
