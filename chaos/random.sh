#!/usr/bin/env bash
# chaos/random.sh - the randomized drill (Jepsen-style), run by
# `chaos/run.sh random --minutes M --seed S` through tests/integration/run.sh
# (which provides PostgreSQL; the 3-server ZooKeeper ensemble is this drill's
# own, under its state).  Environment: RANDOM_MINUTES (default 3),
# RANDOM_SEED (default: drawn and printed), RANDOM_JOBS (default 300),
# RANDOM_STUCK_S (default 180), RANDOM_SCHEDULE (a schedule file, as
# schedule.py prints it and a failed run keeps it: replayed instead of the
# seed's, to narrow a failure down to a few faults), RANDOM_PG (none, or ha: PostgreSQL under
# Patroni, 3 members with synchronous replication, the harness's standalone
# ZooKeeper as its DCS - not the drill's ensemble, whose faults are the
# nodes' - and pg-failover in the menu: kill -9 of the primary).
#
# The cluster: four nodes (controller + executor) - n1, n2 plain, n3 in its
# own network namespace behind a veth link (PostgreSQL and the ZooKeeper
# servers through forwarders on the link's host side), n4 under libfaketime
# with its wall clock read from a file (jumps at run time; monotonic time is
# left alone, as an NTP step would) - ZooKeeper session 4 s, lease 30 s
# (the default; claims of 64, at most 256 calls in flight per node), 8 shards, and the reference sink on the link's host side, dropping 5% of
# answers after commit, failing 2% with 503 and holding each transaction
# 20 ms.  The workload: RANDOM_JOBS jobs in 4 tenants and 3 groups, a
# tenth with 3 partitions, a tenth chunked (3 chunks with checkpoints, every
# 5 s), overlap allow/forbid/queue/replace (queue jobs every 10 s: a queue
# must be able to drain), the others every second (a fifth) or every 2 s,
# misfire fire_all/fire_once/skip.
#
# The nemesis (chaos/random/schedule.py) draws a fault every 5-20 s from a
# PRNG seeded with the seed alone; each heals after its duration; at the end
# everything is healed again, the backlog drains (every trigger up to the
# end of the faults terminal within RANDOM_STUCK_S), the nodes are stopped
# (the check reads a database at rest), and chaos/check_random.py
# checks from PostgreSQL directly: missing / unexpected / doubled instants,
# doubled or lost effects, stale writes accepted, stuck triggers, watermark
# and epoch monotonicity per shard (sampled every second during the run).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G1 + G2 + G3 + G5 + G6 under a random schedule of combined faults (kill -9, SIGSTOP within and past session and lease, network cut-off, ZooKeeper server and quorum loss, clock jumps, rolling restarts, operator pause/resume/cancel, a slow and failing sink): nothing missing, planned twice or applied twice, no stale write accepted, nothing stuck, watermarks and epochs monotonic"
declare -A FIG

WALL0=$SECONDS
MINUTES=${RANDOM_MINUTES:-3}
SEED=${RANDOM_SEED:-$(( (RANDOM << 15) | RANDOM ))}
NJOBS=${RANDOM_JOBS:-300}
STUCK_S=${RANDOM_STUCK_S:-180}
SECONDS_RUN=$(python3 -c "print(int(float('$MINUTES') * 60))")
REPLAY="chaos/run.sh random --minutes $MINUTES --seed $SEED"
PG_HA=
case ${RANDOM_PG:-none} in
none) ;;
ha) PG_HA=1; REPLAY="$REPLAY --pg ha" ;;
*) echo "    replay: $REPLAY"; fail "--pg ${RANDOM_PG}: expected ha (or nothing)"; finish; exit 1 ;;
esac
echo "    replay: $REPLAY   (seed $SEED, $MINUTES minutes${PG_HA:+, PostgreSQL under Patroni})"
FT=$(faketime_lib)
CHECK_PY=python3
/usr/bin/python3 -c 'import croniter' 2>/dev/null && CHECK_PY=/usr/bin/python3
"$CHECK_PY" -c 'import croniter' 2>/dev/null || { fail "python3-croniter is installed (ops/deps.sh)"; finish; exit 1; }
[ -n "$FT" ] || { fail "libfaketime is installed (ops/deps.sh)"; finish; exit 1; }

# ---- ZooKeeper ensemble ---------------------------------------------------------------
export ZK3_STATE=$PALISADE_TEST_TMP/zk3
ZK3_PORT=$(free_port)
dc() { PALISADE_STATE=$ZK3_STATE PALISADE_ZK_PORT=$ZK3_PORT bash ops/devcluster.sh "$@"; }
zk_env=$(dc up --zk 3 --only zk) || { fail "a ZooKeeper ensemble of 3 starts"; finish; exit 1; }
eval "$zk_env"
pass "a ZooKeeper ensemble of 3 starts ($PALISADE_ZK)"

# ---- PostgreSQL under Patroni (--pg ha) ------------------------------------------
# dh: ops/devcluster.sh on the Patroni cluster's own state, with the
# harness's standalone ZooKeeper as its DCS.
HA_STATE=$PALISADE_TEST_TMP/pgha
HA_PORT=$(free_port)
dh() { PALISADE_STATE=$HA_STATE PALISADE_PG_PORT=$HA_PORT PALISADE_ZK_PORT=$PALISADE_ZK_PORT bash ops/devcluster.sh "$@"; }
PG_KILLED=
if [ -n "$PG_HA" ]; then
	command -v patroni >/dev/null || { fail "patroni is installed (apt-get install -y patroni python3-kazoo)"; dc down >/dev/null 2>&1; finish; exit 1; }
	t=$(date +%s%3N)
	env_ha=$(dh up --pg ha --only pg) || { fail "a Patroni cluster of 3 starts"; dh destroy >/dev/null 2>&1; dc down >/dev/null 2>&1; finish; exit 1; }
	eval "$env_ha"
	export PALISADE_PG # multi-host, target_session_attrs=read-write: nodes, CLI, sink, checker
	pass "a Patroni cluster of 3 starts in $(($(date +%s%3N) - t)) ms: $(dh pg-roles | tr '\n' ' ')"
fi

# ---- the network namespace of n3 ----------------------------------------------------
SAMPLER=
ROLL_PID=
declare -A PIDF
cleanup() {
	[ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null
	[ -n "$ROLL_PID" ] && kill "$ROLL_PID" 2>/dev/null
	local n p
	for n in n1 n2 n3 n4; do
		p=$(cat "$NODE_DIR/$n.pid" 2>/dev/null) || continue
		kill -CONT "$p" 2>/dev/null
		kill -TERM "$p" 2>/dev/null
	done
	sleep 2
	for n in n1 n2 n3 n4; do
		p=$(cat "$NODE_DIR/$n.pid" 2>/dev/null) && kill -9 "$p" 2>/dev/null
	done
	stop_sink
	netns_down
	dc down >/dev/null 2>&1
	[ -n "$PG_HA" ] && dh destroy >/dev/null 2>&1
}
trap cleanup EXIT
netns_up rnd || { finish; exit 1; }
# One forwarder per PostgreSQL server (three under Patroni).
if [ -n "$PG_HA" ]; then pg_ports=$(sed -n 's/.*port=\([0-9,]*\).*/\1/p' <<<"$PALISADE_PG"); else
	pg_ports=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$PALISADE_PG_ADMIN"); fi
NS_PG_PORTS=
for pp in ${pg_ports//,/ }; do
	netns_forward "pg_$pp" "127.0.0.1:$pp"
	NS_PG_PORTS=${NS_PG_PORTS:+$NS_PG_PORTS,}$FWD_PORT
done
NS_ZK=
for hp in ${PALISADE_ZK//,/ }; do
	netns_forward "zk_${hp##*:}" "$hp"
	NS_ZK=${NS_ZK:+$NS_ZK,}$HIP:$FWD_PORT
done
wait_until "forwarders to PostgreSQL and the three ZooKeeper servers up" 10 \
	netns_forwarders_ready "${#FWD_PIDS[@]}"

# ---- database, sink, jobs ------------------------------------------------------------
[ -n "$PG_HA" ] || fresh_db it_random # (a new Patroni cluster's database is fresh)
"$PAL" migrate >/dev/null
NS_PG=$(sed "s/host=[^ ]*/host=$(sed "s/[^,]*/$HIP/g" <<<"${NS_PG_PORTS}")/; s/port=[0-9,]*/port=$NS_PG_PORTS/" <<<"$PALISADE_PG")
SINK_ADDR=$HIP:$(free_port)
SINK_ADMIN=127.0.0.1:$(free_port)
SINK_BASE='{"delay_ms": 20, "error_rate": 0.02, "drop_after_commit_rate": 0.05}'
"$PALISADE_BIN/palisade-sink" --listen "$SINK_ADDR" --admin "$SINK_ADMIN" --threads 64 \
	--delay-ms 20 --error-rate 0.02 --drop-after-commit-rate 0.05 >>"$NODE_DIR/sink.log" 2>&1 &
SINK_PID=$!
wait_until "sink up on $SINK_ADDR" 10 curl -sf "http://$SINK_ADMIN/healthz"
SHARDS=8
ZK_SESSION=4s SHARDS=8 write_conf "$CLUSTER_CONF" "executor: {lease: 30s, heartbeat: 5s, batch: 64, max_inflight: 256}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
python3 - "$NJOBS" "$SINK_ADDR" >"$NODE_DIR/jobs.yaml" <<'PY'
import sys
n, sink = int(sys.argv[1]), sys.argv[2]
print("jobs:")
overlap = ["allow", "forbid", "queue", "replace", "allow", "allow", "allow"]
misfire = ["fire_all", "fire_all", "fire_once", "skip", "fire_all"]
for i in range(1, n + 1):
    chunked = i % 10 == 1
    ov = overlap[i % 7]
    # queue jobs wait for their previous run: every 10 s (a run that can
    # take longer than its period would make an endless queue); chunked
    # ones every 5 s; a fifth of the rest every second, the others every 2 s
    cron = "*/10 * * * * ?" if ov == "queue" else "*/5 * * * * ?" if chunked else \
        "* * * * * ?" if i % 5 == 0 else "*/2 * * * * ?"
    print(f"  - id: rnd.job-{i}")
    print(f"    tenant: t{i % 4 + 1}")
    print(f"    group: g{i % 3 + 1}")
    print(f"    schedule: {{cron: \"{cron}\"}}")
    print(f"    misfire: {{policy: {misfire[i % 5]}}}")
    print(f"    overlap: {ov}")
    if i % 10 == 0:
        print("    partitions: 3")
    print("    target:")
    print(f"      url: http://{sink}/effects/rnd{'?chunks=3' if chunked else ''}")
    print("      body: '{\"job\": \"{job}\", \"at\": \"{scheduled_at}\", \"p\": {partition}}'")
    print("      timeout: 2s")
    print(f"      status_url: http://{sink}/effects/{{idempotency_key}}")
    print("    retry: {max_attempts: 200, backoff: {initial: 200ms, max: 2s}, max_age: 30m}")
PY
expect_exit "apply $NJOBS jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"

# ---- nodes: one launcher for the drill and for ops/rolling-upgrade.sh --------------
declare -A ADM=([n1]=127.0.0.1:$(free_port) [n2]=127.0.0.1:$(free_port) [n3]=$NIP:$(free_port) [n4]=127.0.0.1:$(free_port))
CLOCK=$NODE_DIR/n4.faketime
echo "+0" >"$CLOCK"
cat >"$NODE_DIR/launch.sh" <<SH
#!/usr/bin/env bash
# launch.sh ID: start node ID as the drill does, its PID into $NODE_DIR/ID.pid
id=\$1
case \$id in
n1) adm=${ADM[n1]}; pre=() ;;
n2) adm=${ADM[n2]}; pre=() ;;
n3) adm=${ADM[n3]}; pre=(ip netns exec $NS env "PALISADE_PG=$NS_PG" PALISADE_ZK=$NS_ZK) ;;
n4) adm=${ADM[n4]}; pre=(env LD_PRELOAD=$FT FAKETIME_TIMESTAMP_FILE=$CLOCK FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1) ;;
*) exit 1 ;;
esac
setsid "\${pre[@]}" "$PAL" node --config "$CLUSTER_CONF" --node-id "\$id" --admin "\$adm" >>"$NODE_DIR/\$id.log" 2>&1 </dev/null &
echo \$! >"$NODE_DIR/\$id.pid"
SH
launch() { bash "$NODE_DIR/launch.sh" "$1"; }
npid() { cat "$NODE_DIR/$1.pid" 2>/dev/null; }
nalive() { local p; p=$(npid "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }
kill9() { local p; p=$(npid "$1") || return; kill -9 "$p" 2>/dev/null; for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; }
for n in n1 n2 n3 n4; do launch "$n"; done
for n in n1 n2 n3 n4; do NODE_ADMIN[$n]=${ADM[$n]}; done
wait_until "all 8 shards led" 40 all_shards_led
leads() { [ -n "$(shards_of "$1")" ]; }
wait_until "the namespaced node n3 leads shards" 40 leads n3

# ---- the sampler: shards' epoch, leader and watermark every second -------------------
SAMPLES=$NODE_DIR/samples.tsv
(
	while :; do
		psql "$PALISADE_PG" -XAtq -F $'\t' -c "select extract(epoch from clock_timestamp()), shard_id, epoch, coalesce(leader, ''), coalesce(extract(epoch from watermark)::text, '') from shards" >>"$SAMPLES" 2>/dev/null
		sleep 1
	done
) &
SAMPLER=$!

# ---- the nemesis ----------------------------------------------------------------------
SCHED=$NODE_DIR/schedule.txt
if [ -n "${RANDOM_SCHEDULE:-}" ]; then
	cp "$RANDOM_SCHEDULE" "$SCHED" || { fail "the schedule file $RANDOM_SCHEDULE is readable"; finish; exit 1; }
	REPLAY="RANDOM_SCHEDULE=$RANDOM_SCHEDULE $REPLAY"
else
	python3 chaos/random/schedule.py --seed "$SEED" --seconds "$SECONDS_RUN" ${PG_HA:+--pg-ha} >"$SCHED"
fi
FIG[faults]=$(grep -c ' start ' "$SCHED")
echo "    schedule: seed $SEED, ${FIG[faults]} faults: $(awk '$2 == "start" { print $4 }' "$SCHED" | sort | uniq -c | awk '{ printf "%s%s=%s", sep, $2, $1; sep = " " }')"
T0=$(rfc3339_ago -2)
sleep 2
start_ms=$(date +%s%3N)
FIG[setup_s]=$((SECONDS - WALL0))
declare -A PAUSED_GATES
ROLL_RC=
nem() { echo "    nemesis: +$(( ($(date +%s%3N) - start_ms) / 1000 ))s $*"; }
job_of() { echo "rnd.job-$(( ${1#job-} % NJOBS + 1 ))"; }
gate_args() { case $1 in tenant:*) echo "--tenant ${1#tenant:}" ;; group:*) echo "--group ${1#group:}" ;; esac; }
do_start() { # KIND TARGET DURATION
	local kind=$1 tg=$2 d=$3 p
	case $kind in
	kill9-*) kill9 "$tg" ;;
	pause-*) p=$(npid "$tg") && kill -STOP "$p" ;;
	partition) ip link set "$HV" down ;;
	zk-kill) dc zk-kill "$tg" >/dev/null 2>&1 ;;
	zk-quorum) for s in ${tg//,/ }; do dc zk-kill "$s" >/dev/null 2>&1; done ;;
	clock-jump) echo "$tg" >"$CLOCK" ;;
	rolling-restart)
		# ops/rolling-upgrade.sh refuses (exit 69) a node that is not
		# registered in ZooKeeper, as it must: right after a quorum loss a
		# node's session may still be reconnecting, so the drill waits
		# for what the script checks before it calls it.
		wait_wall "every shard led before the rolling restart" 60 all_shards_led
		wait_wall "$tg registered in ZooKeeper before the rolling restart" 60 nodes_live "$tg"
		bash ops/rolling-upgrade.sh --config "$CLUSTER_CONF" --palisade "$PAL" --timeout 90 \
			--restart "bash $NODE_DIR/launch.sh {node}" ${tg//,/ } >"$NODE_DIR/roll.out" 2>&1 &
		ROLL_PID=$! ;;
	op-pause) "$PAL" pause $(gate_args "$tg") --reason "random drill" >/dev/null 2>&1 && PAUSED_GATES[$tg]=1 ;;
	op-cancel) "$PAL" cancel --job "$(job_of "$tg")" --reason "random drill" >/dev/null 2>&1 ;;
	sink-slow) sink_faults '{"delay_ms": 2500}' ;;
	sink-errors) sink_faults '{"error_rate": 0.5}' ;;
	pg-failover)
		PG_KILLED=$(dh pg-roles | awk '$3 == "primary" { print $1 }')
		[ -n "$PG_KILLED" ] && dh pg-kill "$PG_KILLED" >/dev/null 2>&1
		echo "    nemesis: killed Patroni primary m${PG_KILLED:-?}" ;;
	esac
}
do_heal() { # KIND TARGET
	local kind=$1 tg=$2 p
	case $kind in
	kill9-*) nalive "$tg" || launch "$tg" ;;
	pause-*) p=$(npid "$tg") && kill -CONT "$p" ;;
	partition) ip link set "$HV" up ;;
	zk-kill) dc zk-start "$tg" >/dev/null 2>&1 ;;
	zk-quorum) for s in ${tg//,/ }; do dc zk-start "$s" >/dev/null 2>&1; done ;;
	clock-jump) echo "+0" >"$CLOCK" ;;
	rolling-restart)
		for _ in $(seq 300); do kill -0 "$ROLL_PID" 2>/dev/null || break; sleep 1; done
		kill "$ROLL_PID" 2>/dev/null
		wait "$ROLL_PID"
		ROLL_RC=$?
		ROLL_PID=
		echo "    rolling restart: exit $ROLL_RC; last line: $(tail -1 "$NODE_DIR/roll.out")"
		expect_eq "the rolling restart of $tg completed (ops/rolling-upgrade.sh exit)" 0 "$ROLL_RC" ;;
	op-pause) "$PAL" resume $(gate_args "$tg") --reason "random drill" >/dev/null 2>&1 && unset "PAUSED_GATES[$tg]" ;;
	sink-slow | sink-errors) sink_faults "$SINK_BASE" ;;
	pg-failover)
		[ -n "$PG_KILLED" ] && dh pg-start "$PG_KILLED" >/dev/null 2>&1
		echo "    nemesis: m${PG_KILLED:-?} started again; roles: $(dh pg-roles 2>/dev/null | tr '\n' ' ')"
		PG_KILLED= ;;
	esac
}
while read -r t what id kind tg d; do
	due=$((start_ms + ${t%.*} * 1000 + ${t#*.} * 100))
	now=$(date +%s%3N)
	[ "$due" -gt "$now" ] && sleep "$(((due - now) / 1000)).$(printf %03d $(((due - now) % 1000)))"
	if [ "$what" = start ]; then
		nem "start #$id $kind $tg ${d}s"
		do_start "$kind" "$tg" "$d"
	else
		do_heal "$kind" "$tg"
		nem "heal  #$id $kind $tg"
	fi
done <"$SCHED"
rest=$((start_ms + SECONDS_RUN * 1000 - $(date +%s%3N)))
[ "$rest" -gt 0 ] && sleep "$((rest / 1000))"

# ---- heal everything, drain, check --------------------------------------------------------
nem "heal everything"
for n in n1 n2 n3 n4; do p=$(npid "$n") && kill -CONT "$p" 2>/dev/null; nalive "$n" || launch "$n"; done
ip link set "$HV" up
for s in 1 2 3; do dc zk-start "$s" >/dev/null 2>&1; done
[ -n "$PG_HA" ] && for m in 1 2 3; do dh pg-start "$m" >/dev/null 2>&1; done
echo "+0" >"$CLOCK"
for g in "${!PAUSED_GATES[@]}"; do "$PAL" resume $(gate_args "$g") --reason "random drill" >/dev/null 2>&1; done
sink_faults "$SINK_BASE"
T1=$(now_rfc3339)
FIG[run_s]=$(( ($(date +%s%3N) - start_ms) / 1000 ))
wait_wall "every shard led after the heal" 90 all_shards_led
drained() { [ "$(sql "select count(*) from triggers where scheduled_at <= '$T1' and state not in ('succeeded', 'failed', 'cancelled', 'skipped', 'manual')")" = 0 ]; }
# The bound is wall-clock seconds, counted here (not by a helper whose
# polls may outlast it): a backlog still draining after STUCK_S s fails.
t_heal=$(date +%s%3N)
is_drained=
while :; do
	drained && is_drained=1 && break
	[ $(($(date +%s%3N) - t_heal)) -ge $((STUCK_S * 1000)) ] && break
	sleep 1
done
FIG[drain_ms]=$(($(date +%s%3N) - t_heal))
if [ -n "$is_drained" ]; then
	pass "the backlog drained: every trigger up to the heal terminal after ${FIG[drain_ms]} ms (bound ${STUCK_S} s)"
else
	fail "the backlog drained: every trigger up to the heal terminal (not within ${STUCK_S} s of wall clock)"
fi
sleep 2
kill "$SAMPLER" 2>/dev/null
SAMPLER=
for n in n1 n2 n3 n4; do check "node $n runs at the end" nalive "$n"; done
# The workload stops before the check: every trigger of the window is
# terminal now, and the nodes would go on planning and running ~200
# triggers a second beside the checker's queries (a 3-minute run's check
# took 89 s with them running, ~10 s without).  SIGTERM: each drains.
t_stop=$(date +%s%3N)
for n in n1 n2 n3 n4; do p=$(npid "$n") && kill -TERM "$p" 2>/dev/null; done
for n in n1 n2 n3 n4; do
	p=$(npid "$n") || continue
	for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$p" 2>/dev/null
done
FIG[stop_ms]=$(($(date +%s%3N) - t_stop))
RES=$NODE_DIR/check.json
t_check=$(date +%s%3N)
"$CHECK_PY" chaos/check_random.py --from "$T0" --to "$T1" --samples "$SAMPLES" --json "$RES" | sed 's/^/    /'
crc=${PIPESTATUS[0]}
FIG[check_ms]=$(($(date +%s%3N) - t_check))
FIG[wall_s]=$((SECONDS - WALL0))
expect_eq "check_random.py: every invariant holds (exit)" 0 "$crc"
echo "    figure: seed $SEED, ${FIG[faults]} faults in ${FIG[run_s]} s, drained in ${FIG[drain_ms]} ms, nodes stopped in ${FIG[stop_ms]} ms, checked in ${FIG[check_ms]} ms, setup ${FIG[setup_s]} s, wall ${FIG[wall_s]} s; $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(', '.join('%s %s' % (k, r[k]) for k in ('triggers','expected','missing','unexpected','planned_twice','misfired','effects_doubled','effects_lost','stale_accepted','stuck','failed','manual','watermark_regressions','epoch_regressions')))" "$RES" 2>/dev/null)"
if [ "$T_FAILS" -gt 0 ]; then
	echo "    replay: $REPLAY   (this run FAILED)"
	# The nodes' and the sink's logs, the schedule and the samples go with
	# the run's temporary directory: a failed run keeps them beside its
	# report for the diagnosis.
	if [ -n "${PALISADE_DRILL_REPORT:-}" ]; then
		keep=${PALISADE_DRILL_REPORT%.json}-$SEED
		mkdir -p "$keep" && cp "$NODE_DIR"/*.log "$NODE_DIR"/*.out "$SCHED" "$SAMPLES" "$keep"/ 2>/dev/null
		echo "    kept: the nodes' logs, schedule and samples in $keep"
	fi
fi
sched_json=$(python3 -c "import json,sys; print(json.dumps([l.split() for l in open(sys.argv[1]) if ' start ' in l]))" "$SCHED")
write_report random "seed=$SEED" "minutes=$MINUTES" "replay=\"$REPLAY\"" "schedule=$sched_json" \
	"check=$(cat "$RES" 2>/dev/null || echo null)" "rolling_restart_exit=${ROLL_RC:-null}"
finish
