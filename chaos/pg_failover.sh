#!/usr/bin/env bash
# chaos/pg_failover.sh - drills pg-failover and pg-switchover (chaos/run.sh):
# kill -9 of the PostgreSQL primary under load (pg-switchover: a planned
# `patronictl switchover` instead), with PostgreSQL under Patroni
# (ops/devcluster.sh --pg ha: 3 members, synchronous_mode, the harness's
# ZooKeeper as DCS).  Nodes, CLI and sink get the multi-host conninfo
# (host=a,b,c port=p1,p2,p3 target_session_attrs=read-write) and must find
# the new primary by themselves.
#
# Measured: time from the kill until Patroni has a new primary, until a
# trigger is planned again (triggers.created_at) and until an effect is
# applied again (sink_ledger.applied_at).  Checked: nothing missing or
# doubled over the window (palisade verify), one effect per key at the sink,
# no instant planned twice; the killed member rejoins as a replica.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G1 + G2 through a PostgreSQL failover: with synchronous replication a kill -9 of the primary loses no committed plan or effect; nodes and sink reconnect to the promoted replica by themselves; nothing is missed or doubled"
declare -A FIG
MODE=${PALISADE_DRILL:-pg-failover}

command -v patroni >/dev/null || { fail "patroni is installed (apt-get install -y patroni python3-kazoo)"; finish; exit 1; }
HA_STATE=$PALISADE_TEST_TMP/pgha
HA_PORT=$(free_port)
dc() { PALISADE_STATE=$HA_STATE PALISADE_PG_PORT=$HA_PORT PALISADE_ZK_PORT=$PALISADE_ZK_PORT bash ops/devcluster.sh "$@"; }
trap 'stop_all_nodes; stop_sink; dc destroy >/dev/null 2>&1' EXIT
t=$(date +%s%3N)
env_ha=$(dc up --pg ha --only pg) || { fail "Patroni cluster of 3 starts"; finish; exit 1; }
eval "$env_ha"
pass "Patroni cluster of 3 starts in $(($(date +%s%3N) - t)) ms: $(dc pg-roles | tr '\n' ' ')"
check "synchronous replication: the primary names a synchronous standby" \
	bash -c "[ -n \"\$(psql \"\$PALISADE_PG\" -XAtqc \"select application_name from pg_stat_replication where sync_state = 'sync'\")\" ]"
export PALISADE_PG # multi-host conninfo, for the nodes, the CLI and the sink

"$PAL" migrate >/dev/null
drill_load 4 4s 10s 2s 40 pgf
start_node p1
start_node p2
wait_until "all shards led over the multi-host conninfo" 30 all_shards_led
T0=$(rfc3339_ago -1)
sleep 10

old=$(dc pg-roles | awk '$3 == "primary" { print $1 }')
kill_ts=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
t=$(date +%s%3N)
if [ "$MODE" = pg-switchover ]; then
	what="switchover from primary m$old"
	expect_exit "patronictl switchover --leader m$old (Patroni picks the synchronous standby)" 0 \
		patronictl -c "$(cat "$HA_STATE/pgha.path")/m$old/patroni.yml" switchover palisade --leader "m$old" --force
else
	what="kill -9 of primary m$old"
	dc pg-kill "$old" 2>/dev/null
fi
new_primary() { dc pg-roles | awk -v o="$old" '$3 == "primary" && $1 != o' | grep -q .; }
wait_until "Patroni promotes a replica after the $what" 60 new_primary
FIG[promoted_ms]=$(($(date +%s%3N) - t))
q() { psql "$PALISADE_PG connect_timeout=2" -XAtq -c "$1" 2>/dev/null; }
planned_again() { [ "$(q "select count(*) from triggers where created_at > '$kill_ts'")" -gt 0 ]; }
applied_again() { [ "$(q "select count(*) from sink_ledger where applied_at > '$kill_ts'")" -gt 0 ]; }
wait_until "planning resumes on the new primary" 60 planned_again
FIG[planning_resumed_ms]=$(($(date +%s%3N) - t))
wait_until "execution resumes (effects applied at the sink)" 60 applied_again
FIG[execution_resumed_ms]=$(($(date +%s%3N) - t))
FIG[new_primary]=$(dc pg-roles | awk '$3 == "primary" { print $1 }')
echo "    figure: $what: m${FIG[new_primary]} promoted ${FIG[promoted_ms]} ms, planning resumed ${FIG[planning_resumed_ms]} ms, execution resumed ${FIG[execution_resumed_ms]} ms after it began (Patroni ttl 10 s, loop_wait 1 s)"
dc pg-start "$old" 2>/dev/null # after a kill; a switchover's old primary runs on
rejoined() { [ "$(dc pg-roles | awk -v o="$old" '$1 == o { print $3 }')" = replica ]; }
wait_until "the old primary rejoins as a replica" 90 rejoined

sleep 10
T1=$(rfc3339_ago 4)
check_window "$T0" "$T1"
check "both nodes still run" bash -c "kill -0 ${NODE_PID[p1]} && kill -0 ${NODE_PID[p2]}"
write_report "$MODE" "replication=\"synchronous\""
finish
