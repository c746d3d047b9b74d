#!/usr/bin/env bash
# ZooKeeper down, then PostgreSQL down, under load: nodes suspend and retry,
# say so in logs and metrics, and nothing is lost or doubled.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an unreachable ZooKeeper or PostgreSQL degrades safely: planning suspends, work retries, logs and metrics say so; afterwards no instant is missing or doubled and every key has one effect"

fresh_db it_outage
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=4 ZK_SESSION=4s write_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 1s}"
SHARDS=4
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 20 "*/2 * * * * ?" t1 out
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
start_node o1
start_node o2
wait_until "shards led" 20 all_shards_led
T0=$(rfc3339_ago -1)
ran() { [ "$(sql "select count(*) from triggers where scheduled_at >= '$T0' and state = 'succeeded'")" -gt 0 ]; }
wait_until "the window's first instants ran before the outages" 20 ran

# ZooKeeper outage (shorter than the session timeout).
zk=$(cat "$PALISADE_STATE/zk/zk.pid")
kill -STOP "$zk"
wait_until "nodes suspend planning when ZooKeeper is unreachable" 15 grep -q '"event":"coord.suspended"' "$NODE_DIR/o1.log"
coord_down() { [ "$(metric o1 palisade_coord_connected | cut -d. -f1)" = 0 ] || [ "$(metric o2 palisade_coord_connected | cut -d. -f1)" = 0 ]; }
wait_until "palisade_coord_connected is 0 on a node" 10 coord_down
sleep 2
kill -CONT "$zk"
# Both nodes connected again and every shard led and planned past a
# lookahead from now (the watermarks planned before the outage stop short
# of it): planning resumed.
CONT_AHEAD=$(rfc3339_ago -5)
coord_up() { [ "$(metric o1 palisade_coord_connected | cut -d. -f1)" = 1 ] && [ "$(metric o2 palisade_coord_connected | cut -d. -f1)" = 1 ] &&
	all_shards_led && planned_past "$CONT_AHEAD"; }
wait_until "leadership resumes after ZooKeeper returns" 20 coord_up

# PostgreSQL outage: stop it, wait, start it again.
PGD=$(cat "$PALISADE_STATE/pg.path")/data
as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
as_pg /usr/lib/postgresql/15/bin/pg_ctl -D "$PGD" -m fast -w stop >/dev/null
wait_until "the controller reports the database down (log)" 15 grep -q '"event":"controller.db_error"\|"event":"controller.db_unavailable"' "$NODE_DIR/o1.log" "$NODE_DIR/o2.log"
check "palisade_controller_db_up or palisade_executor_db_up is 0" bash -c "[ \"\$(curl -s http://${NODE_ADMIN[o1]}/metrics | awk '/^palisade_(controller|executor)_db_up / {print \$2}' | sort | head -1)\" = 0 ]"
wait_until "the executor closes its commit gate after failed renewals" 15 grep -q '"event":"executor.gate_closed"' "$NODE_DIR/o1.log" "$NODE_DIR/o2.log"
as_pg /usr/lib/postgresql/15/bin/pg_ctl -D "$PGD" -l "$(dirname "$PGD")/postgres.log" -o "-p $PALISADE_PG_PORT" -w start >/dev/null
wait_until "planning resumes after PostgreSQL returns" 30 all_shards_led
wait_until "the commit gate opens again" 15 grep -q '"event":"executor.gate_open"' "$NODE_DIR/o1.log" "$NODE_DIR/o2.log"
# The window ends 6 s after the gate opened: its last instants are planned
# and run once the cluster is back.
T1=$(rfc3339_ago -6)
wait_until "every shard planned past the window" 30 planned_past "$T1"
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger of the window ends succeeded" 60 settled
expect_exit "verify: nothing missing or doubled across both outages" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    $OUT" | head -1
expect_eq "one effect per key at the sink" 0 "$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"
check "both nodes are still running" bash -c "kill -0 ${NODE_PID[o1]} && kill -0 ${NODE_PID[o2]}"
finish
