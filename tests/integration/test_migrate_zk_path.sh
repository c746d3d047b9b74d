#!/usr/bin/env bash
# `palisade migrate`'s live-node check reads ZooKeeper at one path,
# <zookeeper.root>/<cluster.name>/nodes: the --config's, else /palisade and
# default.  A path that is not the nodes' lists no node, which must not pass
# for "no older node live" (docs/upgrades.md): beside a live 0.3.0 node
# (PALISADE_OLD_TREE) leading every shard under the test's root and cluster,
# on a database at this tree's minimum with the after-roll step pending,
# migrate with --zk or $PALISADE_ZK and no --config (a nodes path that does
# not exist), and with the config of another cluster (a nodes path that
# exists, with no node, while the database shows o1 leading), refuses with
# exit 69 naming what it read, applies nothing, and o1 keeps leading.
# With the nodes' own config it refuses with exit 4 while o1 lives and
# applies the step once o1 has given way to a node of this tree.
# ops/rolling-upgrade.sh --migrate given the 0.3.0 CLI refuses before it
# drains a node (that CLI's migrate would leave the step pending and exit 0).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G8 - migrate applies a contract step only when it has read the live nodes of the database's cluster: a ZooKeeper path with no node registered, or one whose nodes do not include the database's recent shard leaders, is 'cannot tell' (exit 69), not 'no node live'"

old_release 0.3.0 || { finish; exit 1; }
STEP=048_drop_attempts_fence
tree_schema
state() { echo "$(sql "select max(version) from schema_migrations") $(sql "select to_regclass('attempts_fence') is not null")"; }
all_led_by() { [ "$(sql "select count(*) from shards where leader = '$1'")" = "$SHARDS" ]; }

old_leader_db it_migrate_zk_path
expect_eq "schema $MIN, attempts_fence there" "$MIN t" "$(state)"

# ---- the default path (/palisade/default/nodes), which does not exist ------------
expect_exit "migrate --zk without --config refuses: cannot tell (exit 69)" 69 "$PAL" migrate --zk "$PALISADE_ZK"
expect_match "naming the path it read and that no node registered there" \
	"/palisade/default/nodes does not exist in ZooKeeper.*no node of cluster \"default\" under root /palisade has ever registered there.*cannot tell whether nodes older than schema $BIN are live; nothing applied" "$OUT"
expect_exit "the same with \$PALISADE_ZK alone" 69 "$PAL" migrate
expect_eq "nothing applied" "$MIN t" "$(state)"

# ---- another cluster's path, which exists and lists no node ----------------------
OTHER=$IT_CLUSTER-elsewhere
for p in "/palisade-test/$OTHER" "/palisade-test/$OTHER/nodes"; do
	"${PALISADE_ITESTS:-build/itests}/coord_probe" --intrude create --path "$p" --zk "$PALISADE_ZK" >/dev/null
done
CLUSTER_NAME=$OTHER write_exec_conf "$NODE_DIR/other.yaml"
expect_exit "migrate --config of another cluster refuses: the database's leader o1 is not listed there (exit 69)" 69 \
	"$PAL" migrate --config "$NODE_DIR/other.yaml"
expect_match "naming o1, its shards and the path" \
	"shards led in the last 20 s by o1 \\($SHARDS shards, last written [0-9]+ ms ago\\), which ZooKeeper does not list under /palisade-test/$OTHER/nodes" "$OUT"
expect_eq "nothing applied" "$MIN t" "$(state)"
sleep 12 # past the 0.3.0 node's 10 s schema re-check
check "o1 still runs" node_alive o1
check "o1 logged no node.schema_refused" bash -c "! grep -q 'node.schema_refused' '$NODE_DIR/o1.log'"
expect_eq "o1 still leads every shard" "$SHARDS" "$(sql "select count(*) from shards where leader = 'o1'")"

# ---- the nodes' own config: refused while o1 lives, applied after -----------------
expect_exit "migrate --config (the nodes' path) refuses while o1 lives (exit 4)" 4 "$PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming o1" "live node older than schema $BIN: o1 \\(0\\.3\\.0, schema" "$OUT"
start_node n1
wait_until "this tree's node n1 is ready" 30 node_ready n1

# ---- ops/rolling-upgrade.sh --migrate with the older release's CLI ----------------
expect_exit "rolling-upgrade --migrate with the 0.3.0 palisade refuses before touching a node (exit 64)" 64 \
	bash ops/rolling-upgrade.sh --config "$CLUSTER_CONF" --palisade "$OLD_PAL" --timeout 10 --migrate \
	--restart false n1
expect_match "saying why" "refusing --migrate: .*shows no schema.pending_after_roll.*pass --palisade" "$OUT"
check "n1 was not drained" node_alive n1
stop_node o1
wait_until "n1 leads every shard" 30 all_led_by n1
expect_exit "with o1 gone, migrate --config applies $STEP" 0 "$PAL" migrate --config "$CLUSTER_CONF"
expect_match "and says so" "applied after-roll step: $STEP" "$OUT"
expect_eq "schema $BIN, attempts_fence gone" "$BIN f" "$(state)"
stop_node n1
finish
