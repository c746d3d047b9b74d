#!/usr/bin/env bash
# Calls due together reach their target together: the executor opens one
# connection per call to a host, up to executor.host_connections (default
# 256).  A fixed cap of 64 connections per host used to queue the calls of
# 1,000 jobs due on one second 64 at a time inside the node, and the fire
# lateness of the last ones grew with the job count (docs/performance.md).
# The sink's paused fault holds every call at its door, so the connections
# the node opened can be counted at the sink's port.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "executor - calls due together open connections together (more than 64 to one host by default); executor.host_connections caps them and the calls beyond the cap wait and still succeed"

fresh_db it_host_conns
"$PAL" migrate >/dev/null
start_sink || { finish; exit 1; }
port=${SINK_ADDR##*:}
# conns: established connections at the sink's listening port
conns() { ss -Htn state established "( sport = :$port )" | wc -l; }
N=100
gen_sink_jobs "$NODE_DIR/jobs.yaml" $N "*/10 * * * * ?" t1 hc
sed -i 's/timeout: 2s/timeout: 20s/' "$NODE_DIR/jobs.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 30s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
expect_exit "apply $N jobs every 10 s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"

# -- the default (256): one connection per call in flight
sink_faults '{"paused": true}'
start_node n1
many() { [ "$(conns)" -ge 90 ]; }
wait_until "the held calls of one instant open >= 90 connections to the sink (64 was the old fixed cap)" 40 many
sink_faults '{"paused": false}'
done_all() { [ "$(sql "select count(*) from triggers where state = 'succeeded'")" -ge $N ]; }
wait_until "the held calls complete" 40 done_all
stop_node n1
expect_eq "nothing failed or went manual" 0 "$(sql "select count(*) from triggers where state in ('failed', 'manual')")"

# -- executor.host_connections: 4
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 30s, heartbeat: 2s, host_connections: 4}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
sleep 1 # the drained node's connections close
base=$(sql "select count(*) from triggers where state = 'succeeded'")
sink_faults '{"paused": true}'
start_node n2
held() { [ "$(conns)" -ge 4 ] && [ "$(metric n2 palisade_executor_inflight)" -ge 20 ]; }
wait_until "calls wait for the 4 connections" 40 held
peak=0
for _ in $(seq 1 20); do c=$(conns); [ "$c" -gt "$peak" ] && peak=$c; sleep 0.1; done
expect_eq "at most 4 connections to the sink while $(metric n2 palisade_executor_inflight) calls are in flight" 4 "$peak"
sink_faults '{"paused": false}'
more() { [ "$(sql "select count(*) from triggers where state = 'succeeded'")" -ge $((base + N)) ]; }
wait_until "the calls queued behind the cap succeed too" 60 more
stop_node n2
expect_eq "nothing failed or went manual" 0 "$(sql "select count(*) from triggers where state in ('failed', 'manual')")"
expect_eq "one effect per key at the sink" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1, chunk having count(*) > 1) d")"
finish
