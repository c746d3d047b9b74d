#!/usr/bin/env bash
# chaos/zk_ensemble.sh - drills on a ZooKeeper ensemble of 3 (ops/devcluster.sh
# --zk 3), run by chaos/run.sh through tests/integration/run.sh (which
# provides PostgreSQL; the ensemble is this drill's own, under its state).
#
# Three palisade nodes (controller + executor) and the reference sink, 60
# jobs every 2 s, ZooKeeper session timeout 4 s.  Phases (PALISADE_DRILL
# selects them; default: all, in this order):
#   zk-follower-kill  kill -9 of a follower server: nothing may change (same
#                     leaders and epochs in PostgreSQL, no session expiry);
#                     a node connected to it reconnects elsewhere (a blip).
#   zk-leader-kill    kill -9 of the leader server: the ensemble elects
#                     another; measured: how long nodes stay suspended.
#   zk-quorum-loss    two of three servers killed for 30 s under load:
#                     controllers suspend (no watermark moves), executors
#                     keep running what was planned; then quorum restored:
#                     leadership resumes, the backlog is planned once.
# Every phase ends with the servers restarted and all shards led.  At the
# end: palisade verify over the window (nothing missing or doubled), one
# effect per key at the sink, no trigger planned twice.
# Figures go to stdout ("figure:" lines) and, when PALISADE_DRILL_REPORT
# names a file, into a JSON report there.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G1 + G2 + G6 on a 3-server ZooKeeper: a follower's death changes nothing, a leader's death suspends planning briefly, a 30 s quorum loss suspends every controller; nothing is lost, planned twice or executed twice"

case "${PALISADE_DRILL:-zk-ensemble}" in
zk-follower-kill) PHASES="follower" ;;
zk-leader-kill) PHASES="leader" ;;
zk-quorum-loss) PHASES="quorum" ;;
*) PHASES="follower leader quorum" ;;
esac
OUTAGE=${ZK_OUTAGE_S:-30}
declare -A FIG susp0

# ---- the ensemble --------------------------------------------------------------------
export ZK3_STATE=$PALISADE_TEST_TMP/zk3
dc() { PALISADE_STATE=$ZK3_STATE PALISADE_ZK_PORT=$ZK3_PORT bash ops/devcluster.sh "$@"; }
ZK3_PORT=$(free_port)
zk_env=$(dc up --zk 3 --only zk) || { fail "a ZooKeeper ensemble of 3 starts"; finish; exit 1; }
eval "$zk_env"
pass "a ZooKeeper ensemble of 3 starts ($PALISADE_ZK)"
trap 'stop_all_nodes; stop_sink; dc down >/dev/null 2>&1' EXIT
server_of_mode() { dc zk-modes | awk -v m="$1" '$3 == m { print $1; exit }'; }
quorum_ok() { [ "$(dc zk-modes | awk '$3 == "leader" || $3 == "follower"' | wc -l)" -ge 2 ]; }

fresh_db it_zk3
"$PAL" migrate >/dev/null
drill_load 8 4s 10s 2s 60 zk3
for n in z1 z2 z3; do start_node "$n"; done
wait_until "all 8 shards led (nodes given the 3-server connect string)" 30 all_shards_led
T0=$(rfc3339_ago -1)
sleep 6

leaders() { sql "select string_agg(shard_id || ':' || leader || ':' || epoch, ',' order by shard_id) from shards"; }
ms_now() { date +%s%3N; }
sum_metric() { local t=0 n v; for n in z1 z2 z3; do v=$(metric "$n" "$1"); t=$((t + ${v%.*})); done; echo $t; }
# max_suspension T_MS: the longest suspended->resumed span (ms) in the nodes'
# logs after T_MS; a suspension without a resume counts up to now.
max_suspension() {
	python3 - "$1" "$NODE_DIR"/z1.log "$NODE_DIR"/z2.log "$NODE_DIR"/z3.log <<'PY'
import json, sys, datetime, time
t0 = int(sys.argv[1]); best = 0
def ms(ts):
    return int(datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
for f in sys.argv[2:]:
    start = None
    for l in open(f):
        try: j = json.loads(l)
        except ValueError: continue
        ev = j.get("event")
        if ev not in ("coord.suspended", "coord.resumed"): continue
        t = ms(j["ts"])
        if t < t0: continue
        if ev == "coord.suspended" and start is None: start = t
        elif ev == "coord.resumed" and start is not None:
            best = max(best, t - start); start = None
    if start is not None:
        best = max(best, int(time.time() * 1000) - start)
print(best)
PY
}
restart_all_servers() {
	local i
	for i in 1 2 3; do dc zk-start "$i" 2>/dev/null; done
	all_serving() { [ "$(dc zk-modes | grep -cE ' (leader|follower)$')" = 3 ]; }
	wait_until "all three servers serve again" 60 all_serving
}

for phase in $PHASES; do
	case $phase in
	follower)
		echo "  -- zk-follower-kill"
		before=$(leaders)
		exp0=$(sum_metric palisade_coord_session_expiries_total)
		f=$(server_of_mode follower)
		t=$(ms_now)
		dc zk-kill "$f" 2>/dev/null
		check "follower server $f killed" test -n "$f"
		sleep 12
		after=$(leaders)
		expect_eq "after kill -9 of follower server $f: same leader and epoch for every shard" "$before" "$after"
		expect_eq "no ZooKeeper session expired" "$exp0" "$(sum_metric palisade_coord_session_expiries_total)"
		check "every shard is still led" all_shards_led
		FIG[follower_max_suspension_ms]=$(max_suspension "$t")
		echo "    figure: follower kill: longest suspension ${FIG[follower_max_suspension_ms]} ms (a node on that server reconnecting; 0 = nobody was on it), re-elections 0"
		restart_all_servers
		sleep 3
		;;
	leader)
		echo "  -- zk-leader-kill"
		exp0=$(sum_metric palisade_coord_session_expiries_total)
		for n in z1 z2 z3; do susp0[$n]=$(metric "$n" palisade_coord_suspensions_total); done
		wait_until "the ensemble has a leader" 30 bash -c "PALISADE_STATE=$ZK3_STATE PALISADE_ZK_PORT=$ZK3_PORT bash ops/devcluster.sh zk-modes | grep -q ' leader$'"
		l=$(server_of_mode leader)
		t=$(ms_now)
		dc zk-kill "$l" 2>/dev/null
		wait_until "the other two servers elect a leader" 30 bash -c "[ \"\$(PALISADE_STATE=$ZK3_STATE PALISADE_ZK_PORT=$ZK3_PORT bash ops/devcluster.sh zk-modes | grep -c ' leader$')\" = 1 ]"
		FIG[leader_zk_election_ms]=$(($(ms_now) - t))
		wait_until "every shard led again after the leader server's death" 30 all_shards_led
		sleep 3
		FIG[leader_max_suspension_ms]=$(max_suspension "$t")
		nsusp=0
		for n in z1 z2 z3; do [ "$(metric "$n" palisade_coord_suspensions_total)" != "${susp0[$n]}" ] && nsusp=$((nsusp + 1)); done
		expect_eq "every node lost its server while the ensemble elected, and suspended (killed: server $l)" 3 "$nsusp"
		FIG[leader_expiries]=$(($(sum_metric palisade_coord_session_expiries_total) - exp0))
		echo "    figure: leader kill: new ZooKeeper leader within ${FIG[leader_zk_election_ms]} ms (polled), longest node suspension ${FIG[leader_max_suspension_ms]} ms, session expiries ${FIG[leader_expiries]}"
		restart_all_servers
		sleep 3
		;;
	quorum)
		echo "  -- zk-quorum-loss (${OUTAGE} s) and restore"
		s0=$(sum_metric palisade_coord_suspensions_total)
		x0=$(sum_metric palisade_coord_session_expiries_total)
		eff0=$(sql "select count(*) from sink_ledger")
		have_leader() { [ -n "$(server_of_mode leader)" ] && [ -n "$(server_of_mode follower)" ]; }
		wait_until "the ensemble has a leader and a follower" 30 have_leader
		l=$(server_of_mode leader)
		f=$(server_of_mode follower)
		t=$(ms_now)
		dc zk-kill "$l" 2>/dev/null
		dc zk-kill "$f" 2>/dev/null
		no_quorum() { ! dc zk-modes | grep -qE ' (leader|follower)$'; }
		wait_until "servers $l (leader) and $f (follower) killed: no server serves" 20 no_quorum
		all_suspended() { [ "$(sum_metric palisade_coord_connected)" = 0 ]; }
		wait_until "every node reports ZooKeeper disconnected (palisade_coord_connected 0)" 20 all_suspended
		sleep 6 # past the session timeout: any controller still planning would show now
		wm1=$(sql "select max(watermark) from shards")
		eff1=$(sql "select count(*) from sink_ledger")
		sleep $((OUTAGE - 8 > 4 ? OUTAGE - 8 : 4))
		wm2=$(sql "select max(watermark) from shards")
		eff2=$(sql "select count(*) from sink_ledger")
		expect_eq "no controller planned during the quorum loss (highest watermark unchanged)" "$wm1" "$wm2"
		FIG[quorum_effects_during_outage]=$((eff2 - eff0))
		echo "    figure: quorum loss: executors ran $((eff2 - eff0)) effects of already planned triggers during the outage ($((eff2 - eff1)) after the first 6 s)"
		check "every node logged the suspension" bash -c "grep -q '\"event\":\"coord.suspended\"' '$NODE_DIR/z1.log' && grep -q '\"event\":\"coord.suspended\"' '$NODE_DIR/z2.log' && grep -q '\"event\":\"coord.suspended\"' '$NODE_DIR/z3.log'"
		tr=$(ms_now)
		FIG[quorum_outage_ms]=$((tr - t))
		dc zk-start "$l" 2>/dev/null
		dc zk-start "$f" 2>/dev/null
		wait_until "quorum restored" 60 quorum_ok
		wait_until "every shard led again after the quorum returned" 60 all_shards_led
		FIG[quorum_resume_ms]=$(($(ms_now) - tr))
		FIG[quorum_suspensions]=$(($(sum_metric palisade_coord_suspensions_total) - s0))
		FIG[quorum_expiries]=$(($(sum_metric palisade_coord_session_expiries_total) - x0))
		echo "    figure: quorum restored: all shards led $((FIG[quorum_resume_ms])) ms after the servers were restarted (outage ${FIG[quorum_outage_ms]} ms, suspensions ${FIG[quorum_suspensions]}, session expiries ${FIG[quorum_expiries]})"
		sleep 3
		;;
	esac
done

sleep 8
T1=$(rfc3339_ago 4)
check_window "$T0" "$T1"
check "all three nodes still run" bash -c "kill -0 ${NODE_PID[z1]} && kill -0 ${NODE_PID[z2]} && kill -0 ${NODE_PID[z3]}"
write_report "${PALISADE_DRILL:-zk-ensemble}" "phases=\"$PHASES\""
finish
