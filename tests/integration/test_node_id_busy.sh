#!/usr/bin/env bash
# A node restarted right after it died finds its id still held by its old
# ZooKeeper session (the server expires it within the session timeout): it
# waits that out and joins, instead of exiting 64 - which systemd's
# RestartPreventExitStatus=64 would have left down for good.  A second live
# process with the id of a running node is still refused (exit 64) once the
# wait is over, and the running node is left alone.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a node restarted within its old session's timeout joins once that session expires; a live node's id is never taken over by a second process"

it_db idbusy
SHARDS=4
ZK_SESSION=4s SHARDS=4 write_conf "$CLUSTER_CONF"

start_node b1
wait_until "b1 leads every shard" 20 all_shards_led
wait_until "b1 registered" 10 nodes_live b1

echo "  -- kill -9, restarted at once (the old session lives ~4 s more)"
kill9_node b1
t0=$(date +%s%3N)
start_node b1
sleep 1.5
check "the restarted process is still running 1.5 s later (not refused)" node_alive b1
wait_until "it says it waits for the old session" 5 grep -q '"event":"node.id_busy"' "$NODE_DIR/b1.log"
# (nodes_live alone would pass on the old session's znode, still there)
restarted_registered() { [ "$(grep -c '"event":"coord.session.started"' "$NODE_DIR/b1.log")" -ge 2 ]; }
wait_until "the restarted process registered once the old session expired" 20 restarted_registered
joined_ms=$(($(date +%s%3N) - t0))
check "b1 is registered" nodes_live b1
echo "    figure: restarted 0 s after kill -9, registered ${joined_ms} ms later (session timeout 4 s)"
wait_until "and leads every shard again" 20 all_shards_led
check "the node never gave up (no node.id_in_use)" bash -c "! grep -q '\"event\":\"node.id_in_use\"' '$NODE_DIR/b1.log'"

echo "  -- a second live process with the same id"
port=$(free_port)
t0=$(date +%s%3N)
timeout 60 "$PAL" node --config "$CLUSTER_CONF" --node-id b1 --admin "127.0.0.1:$port" >"$NODE_DIR/dup.log" 2>&1
rc=$?
dup_ms=$(($(date +%s%3N) - t0))
expect_eq "is refused with exit 64" 64 "$rc"
check "after waiting out a session's expiry (${dup_ms} ms >= 2 x 4 s)" test "$dup_ms" -ge 8000
expect_match "naming the id and the session holding it" "node id b1 is already in use by a live node" "$(cat "$NODE_DIR/dup.log")"
check "the running b1 is untouched" node_alive b1
check "and still registered" nodes_live b1
stop_node b1
expect_eq "b1 drains cleanly (exit 0)" 0 "${NODE_EXIT[b1]}"
finish
