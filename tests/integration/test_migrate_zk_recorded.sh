#!/usr/bin/env bash
# `palisade migrate` with the configuration of another cluster that shares
# the ZooKeeper ensemble and names its nodes as this one does (o1 in both):
# the leader check (test_migrate_zk_path) finds the database's leader o1
# listed and cannot tell the two apart.  Every node of this tree records in
# the database where it registers (cluster_settings zk_nodes_path), and
# migrate refuses (exit 69) to read another path: the after-roll step is
# not applied beside the live 0.3.0 node o1, which keeps running.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G8 - migrate applies a contract step only when it reads the ZooKeeper path the database's nodes register under: another cluster's path, with nodes of the same names, is 'cannot tell' (exit 69)"

old_release 0.3.0 || { finish; exit 1; }
tree_schema
state() { echo "$(sql "select max(version) from schema_migrations") $(sql "select to_regclass('attempts_fence') is not null")"; }

# ---- another cluster, its own database, a node of this tree named o1 -------------
OTHER=$IT_CLUSTER-elsewhere
fresh_db it_migrate_zk_recorded_other
OTHER_PG=$PALISADE_PG
expect_exit "this tree migrates the other cluster's database" 0 "$PAL" migrate
SHARDS=2 CLUSTER_NAME=$OTHER write_exec_conf "$NODE_DIR/other.yaml"
port=$(free_port)
PALISADE_PG=$OTHER_PG "$PAL" node --config "$NODE_DIR/other.yaml" --node-id o1 --admin "127.0.0.1:$port" \
	>>"$NODE_DIR/other-o1.log" 2>&1 &
OTHER_O1=$!
other_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; }
wait_until "the other cluster's o1 (this tree) is ready" 30 other_ready

# ---- this cluster: a 0.3.0 o1 leading, a node of this tree started once ----------
old_leader_db it_migrate_zk_recorded
ROLES=executor write_conf "$NODE_DIR/x.yaml"
CLUSTER_CONF=$NODE_DIR/x.yaml start_node x1
wait_until "this tree's executor x1 is ready" 30 node_ready x1
expect_eq "x1 says where this cluster's nodes register" "/palisade-test/$IT_CLUSTER/nodes" \
	"$(sql "select string_agg(value, ' ') from cluster_settings where name like 'zk%nodes%path %'")"

expect_exit "migrate --config of the other cluster refuses: cannot tell (exit 69)" 69 \
	"$PAL" migrate --config "$NODE_DIR/other.yaml"
expect_match "naming the path it reads and the live one" \
	"this migrate reads /palisade-test/$OTHER/nodes, but a live node of this database said it registers under /palisade-test/$IT_CLUSTER/nodes .*nothing applied" "$OUT"
expect_eq "nothing applied" "$MIN t" "$(state)"
sleep 12 # past the 0.3.0 node's 10 s schema re-check
check "o1 (0.3.0) still runs" node_alive o1
expect_eq "o1 still leads every shard" "$SHARDS" "$(sql "select count(*) from shards where leader = 'o1'")"
expect_exit "with the nodes' own config: refused while o1 lives (exit 4)" 4 "$PAL" migrate --config "$CLUSTER_CONF"

# ---- a node started on this database with the other cluster's name ---------------
CLUSTER_NAME=$OTHER ROLES=executor write_conf "$NODE_DIR/x2.yaml"
CLUSTER_CONF=$NODE_DIR/x2.yaml start_node x2
wait_until "x2 (the other cluster's name, this database) is ready" 30 node_ready x2
check "x2 logged node.zk_path_other naming the path live beside its own" \
	grep -q "\"event\":\"node.zk_path_other\".*\"others\":\"/palisade-test/$IT_CLUSTER/nodes\"" "$NODE_DIR/x2.log"
expect_exit "while x2 runs, migrate --config of the other cluster still refuses (exit 69)" 69 \
	"$PAL" migrate --config "$NODE_DIR/other.yaml"
expect_exit "... and so does migrate with the nodes' own config (two paths live: cannot tell)" 69 \
	"$PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming x2's path, live" "but a live node of this database said it registers under /palisade-test/$OTHER/nodes" "$OUT"
stop_node x2
counts_again() { "$PAL" migrate --config "$CLUSTER_CONF" >/dev/null 2>&1; [ $? -eq 4 ]; }
wait_until "30 s after x2 stopped its path no longer counts: the nodes' config is refused for o1 alone (exit 4)" 50 counts_again
expect_eq "nothing applied" "$MIN t" "$(state)"
stop_node x1
stop_node o1
kill -TERM "$OTHER_O1" 2>/dev/null; wait "$OTHER_O1" 2>/dev/null
finish
