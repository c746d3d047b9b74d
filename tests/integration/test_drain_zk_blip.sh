#!/usr/bin/env bash
# `palisade drain --wait` rides out a short ZooKeeper outage.  The waiting
# command keeps one session for its looks; when that session loses its
# connection (ZooKeeper paused with SIGSTOP past the client's receive
# timeout), the next look goes through a session of its own, with 5 s to
# connect, and the wait carries on until the node has left: exit 0, not 69.
# A node's own drain takes its registration away at once, so the node
# waited for here is a stand-in: a persistent registration "stand" whose
# admin address is b1's (b1 takes the drain request and leaves), removed by
# the test after the outage.  Runs alone (IT_SERIAL): it pauses the shared
# ZooKeeper.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "drain --wait through a ZooKeeper outage: the wait goes on and ends when the node has left (exit 0)"

fresh_db it_drain_blip
"$PAL" migrate >/dev/null
SHARDS=2
gen_jobs "$NODE_DIR/jobs.yaml" 4 "0 0 * * * ?" skip blip
SHARDS=2 write_conf "$CLUSTER_CONF"
expect_exit "apply 4 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node b1
wait_until "b1 leads both shards" 30 all_shards_led
PROBE=${PALISADE_ITESTS:-build/itests}/coord_probe
stand=/palisade-test/$IT_CLUSTER/nodes/stand
expect_exit "a stand-in registration with b1's admin address" 0 \
	"$PROBE" --intrude create --path "$stand" --zk "$PALISADE_ZK" --data "{\"admin\":\"${NODE_ADMIN[b1]}\"}"
t0=$(date +%s%N)
stdbuf -oL "$PAL" drain --node stand --wait 60 --config "$CLUSTER_CONF" >"$NODE_DIR/drain.out" 2>&1 &
dpid=$!
wait_until "the drain is accepted" 10 grep -q "drain: accepted" "$NODE_DIR/drain.out"
zk=$(cat "$PALISADE_STATE/zk/zk.pid")
kill -STOP "$zk"
sleep 6 # past the waiting session's timeout (2 s): it expires
kill -CONT "$zk"
sleep 1
check "the wait goes on through the outage" kill -0 "$dpid"
expect_exit "the stand-in leaves" 0 "$PROBE" --intrude delete --path "$stand" --zk "$PALISADE_ZK"
wait "$dpid"
rc=$?
sed 's/^/    | /' "$NODE_DIR/drain.out"
expect_eq "drain --wait exits 0 after the outage" 0 "$rc"
check "it saw the node leave" grep -q "stand left the cluster" "$NODE_DIR/drain.out"
echo "    figure: drain --wait took $((($(date +%s%N) - t0) / 1000000)) ms"
finish
