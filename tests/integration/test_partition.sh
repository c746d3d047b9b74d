#!/usr/bin/env bash
# Network partition: one of three nodes runs in its own network namespace and
# reaches PostgreSQL, ZooKeeper and the sink only over a veth link.  Under
# load the link goes down for 20 s (packets vanish: no reset, no error, just
# silence), then comes back.  The cut-off node must suspend (ZooKeeper),
# lose its shards to the others within the session timeout plus a scan,
# stop starting side effects (its leases cannot be renewed) and say so in
# its logs and metrics; after the heal it rejoins.  Nothing is lost or
# doubled, every trigger ends succeeded, one effect per key.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G3 + G6 through a network partition of one node (veth link down 20 s under load): its shards move within session + scan, it degrades visibly, no instant missing or doubled, one effect per key"

trap 'stop_all_nodes; stop_sink; netns_down' EXIT
netns_up it || { finish; exit 1; }

fresh_db it_partition
"$PAL" migrate >/dev/null
# The sink listens on the link's host side: reachable from both sides.
sink_port=$(free_port)
SINK_ADDR=$HIP:$sink_port
admin=$(free_port)
SINK_ADMIN=127.0.0.1:$admin
"$PALISADE_BIN/palisade-sink" --listen "$SINK_ADDR" --admin "$SINK_ADMIN" --delay-ms 800 >>"$NODE_DIR/sink.log" 2>&1 &
SINK_PID=$!
wait_until "sink up on $SINK_ADDR" 10 curl -sf "http://$SINK_ADMIN/healthz"
# Paths from the namespace to the loopback PostgreSQL and ZooKeeper.
netns_forward_cluster

SHARDS=8 write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
SHARDS=8
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 60 "*/2 * * * * ?" t1 part
expect_exit "apply 60 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
# The two nodes outside take at most 16 calls each at a time, so that the
# namespaced one (slower: its database path runs through a forwarder) still
# gets work when triggers fall due together: the cut must catch it mid-call.
OUT_CONF=$NODE_DIR/outside.yaml
SHARDS=8 write_conf "$OUT_CONF" "executor: {lease: 4s, heartbeat: 1s, batch: 8, max_inflight: 16}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$OUT_CONF"
CLUSTER_CONF=$OUT_CONF start_node a1
CLUSTER_CONF=$OUT_CONF start_node a2
# The cut-off node: inside the namespace (`ip netns exec` execs the node, so
# the PID is the node's).
nadm=$(free_port)
NODE_ADMIN[cut]=$NIP:$nadm
PALISADE_PG=$NS_PG PALISADE_ZK=$NS_ZK ip netns exec "$NS" "$PAL" node --config "$CLUSTER_CONF" \
	--node-id cut --admin "$NIP:$nadm" >>"$NODE_DIR/cut.log" 2>&1 &
NODE_PID[cut]=$!
wait_until "all shards led" 30 all_shards_led
leads_cut() { [ -n "$(shards_of cut)" ]; }
wait_until "the namespaced node leads shards (balance)" 30 leads_cut
T0=$(now_rfc3339)
# calls in flight on it, of instants in the window: the window holds load
# from before the cut
busy_cut() { [ "$(sql "select count(*) from triggers where state = 'running' and lease_owner = 'cut' and scheduled_at >= '$T0'")" -gt 0 ]; }
wait_until "the namespaced node holds leases (calls in flight)" 40 busy_cut
cut_shards=$(shards_of cut)
echo "    the namespaced node leads shards $cut_shards and holds $(sql "select count(*) from triggers where state = 'running' and lease_owner = 'cut'") leases"

# ---- the cut -----------------------------------------------------------------------
t_cut=$(date +%s%3N)
ip link set "$HV" down
taken() { [ -z "$(shards_of cut)" ] && all_shards_led; }
wait_until "the other nodes take over every shard it led (session 2 s + scan 1 s)" 15 taken
ms=$(( $(date +%s%3N) - t_cut ))
echo "    FIGURE partition failover: shards $cut_shards led elsewhere ${ms} ms after the link went down"
sleep $(( 20 - ms / 1000 ))
ip link set "$HV" up
t_heal=$(date +%s%3N)
echo "    link down for $(( (t_heal - t_cut) / 1000 )) s"
check "the namespaced node survived the partition" node_alive cut

# ---- after the heal ------------------------------------------------------------------
back() { [ "$(metric cut palisade_coord_connected)" = 1 ] && [ -n "$(shards_of cut)" ]; }
wait_until "it reconnects and leads shards again (balance)" 40 back
t_back=$(sql "select clock_timestamp()")
logged() { grep -q "\"event\":\"$1\"" "$NODE_DIR/cut.log"; }
check "it logged the ZooKeeper suspension (coord.suspended)" logged coord.suspended
check "it logged the session expiry (coord.session.expired)" logged coord.session.expired
check "its executor logged failed lease renewals or lost leases" bash -c \
	"grep -qE '\"event\":\"executor\\.(renew_failed|gate_closed|call_abandoned|commit_failed|db_unavailable)' '$NODE_DIR/cut.log'"
check "metrics: a session expiry counted" [ "$(metric cut palisade_coord_session_expiries_total | cut -d. -f1)" -ge 1 ]
check "metrics: failed lease renewals counted" [ "$(metric cut 'palisade_executor_renewals_total{outcome="failed"}' | cut -d. -f1)" -ge 1 ]
# The window goes on past the rejoin: until the rejoined node has ended a
# call of an instant that fell due after it led shards again.
works_again() { [ "$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id where a.node = 'cut' and a.outcome = 'succeeded' and t.scheduled_at > '$t_back'")" -gt 0 ]; }
wait_until "the rejoined node ends a call of an instant due after it leads again" 30 works_again
T1=$(rfc3339_ago 0)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger planned in the window ends succeeded" 90 settled
echo "    states: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1) x")"
echo "    figure: $(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'") triggers in the window; attempts by node: $(sql "select string_agg(node || '=' || n, ' ' order by node) from (select node, count(*) n from attempt_ledger a join triggers t on t.id = a.trigger_id where t.scheduled_at between '$T0' and '$T1' group by 1) x")"
echo "    figure: stale-token rejections: at the sink $(sink_stat stale), at the database $(sql "select count(*) from attempt_ledger where outcome = 'fenced'"); fenced controller ticks on the cut node $(metric cut palisade_controller_fenced_total)"
expect_exit "verify: no instant missing or doubled across the partition" 0 "$PAL" verify --from "$T0" --to "$T1"
expect_eq "no idempotency key has more than one effect" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"
expect_eq "no plan key has more than one trigger" 0 \
	"$(sql "select count(*) from (select 1 from trigger_jobs where source = 'schedule' group by job_id, scheduled_at, partition having count(*) > 1) d")"
finish
