# tests/integration/cluster.sh - start and fault palisade nodes for tests.
# Sourced after lib.sh.  Every process is tracked by PID (never by name).
#
#   write_conf FILE [yaml lines...]   node config for tests (short timeouts)
#   write_exec_conf FILE [yaml lines...]  the same, the node a controller and executor
#   sink_up | apply_jobs [DESC] | lead_shards SECONDS NODE...
#                                     the usual set-up of a test (below)
#   start_node ID [args...]           palisade node, log in $NODE_DIR/ID.log
#   stop_node ID                      SIGTERM and wait (drain)
#   kill9_node ID | pause_node ID | resume_node ID
#   wait_until DESC SECONDS CMD...    poll CMD every 0.1 s (WAIT_STEP) for SECONDS
#   wait_wall DESC SECONDS CMD...     the same, polling every second
#   faketime_lib                      the path of libfaketimeMT, if installed
#   gen_jobs FILE N CRON [POLICY]     N jobs firing on CRON
#   hold_inserts_setup | hold_inserts SECONDS | insert_held   hold the inserts of triggers
#   netns_up NAME | netns_down        a network namespace behind a veth link
#   netns_forward LOG HOST:PORT       a forwarder from the link's host side
#   netns_forward_cluster             ... to PostgreSQL and ZooKeeper: NS_PG, NS_ZK

# Each test gets its own directory of node logs and configs (node names are
# reused across tests; a log must hold one test's lines only); `make bench`
# sets its own before sourcing.
NODE_DIR=${NODE_DIR:-$PALISADE_TEST_TMP/nodes/$(basename "$0" .sh)}
mkdir -p "$NODE_DIR"
declare -A NODE_PID NODE_ADMIN
CLUSTER_CONF=$NODE_DIR/palisade.yaml
# The ZooKeeper cluster name of the test's nodes, its own (tests may run
# side by side against one ZooKeeper: run.sh, PALISADE_IT_JOBS).
IT_CLUSTER=$(basename "$0" .sh | tr -c 'a-z0-9._\n-' '-')

write_conf() {
	local f=$1; shift
	{
		echo "zookeeper: {session_timeout: ${ZK_SESSION:-2s}, root: /palisade-test}"
		echo "cluster: {name: ${CLUSTER_NAME:-$IT_CLUSTER}, shards: ${SHARDS:-16}}"
		echo "controller: {scan_interval: ${SCAN:-1s}, overlap: ${OVERLAP:-10s}, lookahead: ${LOOKAHEAD:-5s}, misfire_threshold: ${MISFIRE:-60s}}"
		echo "node: {roles: [${ROLES:-controller}]}"
		for l in "$@"; do echo "$l"; done
	} >"$f"
}
write_exec_conf() { ROLES="controller, executor" write_conf "$@"; }

# A self-signed certificate for 127.0.0.1 ($TLS_DIR/cert.pem, key.pem) and
# FILE (write_conf, the same environment) with the admin listeners speaking
# TLS with it.
write_tls_conf() {
	TLS_DIR=$PALISADE_TEST_TMP/tls
	mkdir -p "$TLS_DIR"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext "subjectAltName=IP:127.0.0.1" -keyout "$TLS_DIR/key.pem" \
		-out "$TLS_DIR/cert.pem" 2>/dev/null
	chmod 600 "$TLS_DIR/key.pem"
	write_conf "$1" "admin: {tls_cert: $TLS_DIR/cert.pem, tls_key: $TLS_DIR/key.pem}"
}

source "$(dirname "${BASH_SOURCE[0]}")/../ports.sh" # free_port

start_node() {
	local id=$1; shift
	local port; port=$(free_port)
	NODE_ADMIN[$id]=127.0.0.1:$port
	"$PAL" node --config "$CLUSTER_CONF" --node-id "$id" --admin "127.0.0.1:$port" "$@" \
		>>"$NODE_DIR/$id.log" 2>&1 &
	NODE_PID[$id]=$!
}

node_alive() { kill -0 "${NODE_PID[$1]}" 2>/dev/null; }

stop_node() {
	local id=$1 pid=${NODE_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	NODE_EXIT[$id]=$?
	unset "NODE_PID[$id]"
}
declare -A NODE_EXIT

kill9_node() {
	local pid=${NODE_PID[$1]}
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	unset "NODE_PID[$1]"
}
pause_node() { kill -STOP "${NODE_PID[$1]}"; }
resume_node() { kill -CONT "${NODE_PID[$1]}"; }

stop_all_nodes() {
	for id in "${!NODE_PID[@]}"; do
		kill -CONT "${NODE_PID[$id]}" 2>/dev/null
		stop_node "$id"
	done
}
trap stop_all_nodes EXIT

# wait_until DESC SECONDS CMD...: poll CMD (its output discarded) every
# ${WAIT_STEP:-0.1} s until it succeeds; passes with the wall-clock time it
# took.  It gives up once SECONDS of wall clock have passed AND it has polled
# SECONDS/STEP times: a poll of a loaded database can take longer than the
# step, and a slow but healthy run then gets more time rather than a failure.
# wait_wall is the same with a 1 s step (fewer polls of a busy database).
# Its locals are prefixed: bash scopes dynamically, so a predicate that reads
# a local of its caller (check_window's t0) would otherwise read ours.
wait_until() {
	local _wu_desc=$1 _wu_secs=$2
	shift 2
	local _wu_step=${WAIT_STEP:-0.1} _wu_t0 _wu_now _wu_n=0 _wu_polls
	_wu_polls=$(awk -v s="$_wu_secs" -v d="$_wu_step" 'BEGIN { printf "%d", s / d }')
	_wu_t0=${EPOCHREALTIME//[.,]/}
	while :; do
		_wu_n=$((_wu_n + 1))
		if "$@" >/dev/null 2>&1; then
			_wu_now=$(((${EPOCHREALTIME//[.,]/} - _wu_t0) / 100000))
			pass "$_wu_desc (after ~$((_wu_now / 10)).$((_wu_now % 10))s)"
			return 0
		fi
		_wu_now=${EPOCHREALTIME//[.,]/}
		[ "$_wu_n" -ge "$_wu_polls" ] && [ $((_wu_now - _wu_t0)) -ge $((_wu_secs * 1000000)) ] && break
		sleep "$_wu_step"
	done
	fail "$_wu_desc (not within ${_wu_secs}s)"
	return 1
}
wait_wall() { WAIT_STEP=1 wait_until "$@"; }

# faketime_lib: print the path of libfaketimeMT (LD_PRELOAD it to give one
# process its own wall clock); fails when it is not installed.
faketime_lib() {
	local f
	for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 /usr/lib/*/faketime/libfaketimeMT.so.1; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 1
}

# metric NODE NAME[{labels}]: a sample's value from the node's /metrics (0 if absent).
metric() {
	curl -s --max-time 5 "http://${NODE_ADMIN[$1]}/metrics" | awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }'
}

gen_jobs() {
	local f=$1 n=$2 cron=$3 policy=${4:-skip} prefix=${5:-load}
	{
		echo "jobs:"
		for i in $(seq 1 "$n"); do
			echo "  - id: $prefix.job-$i"
			echo "    schedule: {cron: \"$cron\"}"
			echo "    misfire: {policy: $policy}"
			echo "    target: {url: http://127.0.0.1:9/x}"
		done
	} >"$f"
}

# all_shards_led: every shard has a leader in PostgreSQL and a recent watermark.
all_shards_led() {
	[ "$(sql "select count(*) from shards where leader is not null and watermark > clock_timestamp()")" = "${SHARDS:-16}" ]
}

# planned_past T: every shard's watermark is past T, so every instant up to
# T is planned (a watermark moves only with the rows of its tick committed).
planned_past() {
	[ "$(sql "select count(*) from shards where watermark > '$1'")" = "${SHARDS:-16}" ]
}

# shards_of NODE: shard ids led by NODE according to PostgreSQL.
# nodes_live A,B,...: every one registered in ZooKeeper (palisade status).
nodes_live() {
	"$PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null | python3 -c '
import json, sys
live = {n["id"] for n in json.load(sys.stdin).get("nodes", [])}
sys.exit(0 if all(x in live for x in sys.argv[1].split(",")) else 1)' "$1"
}
shards_of() { sql "select string_agg(shard_id::text, ',' order by shard_id) from shards where leader = '$1'"; }

# node_ready NODE: its /readyz answers 200.
node_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }

# start_executor_pair X1 X2: nodes x1 (config $CLUSTER_CONF) and x2
# ($NODE_DIR/x2.yaml), both controllers and executors of 2 shards (lease
# 5 s, heartbeat 1 s), with the further executor settings X1 and X2 (", key:
# value" each, e.g. executor.target_hosts that differ between them); x2 run
# by $PAL2 (default $PAL, e.g. an older release's binary); both waited ready.
start_executor_pair() {
	local f
	SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s$1}"
	SHARDS=2 write_conf "$NODE_DIR/x2.yaml" "executor: {lease: 5s, heartbeat: 1s$2}"
	for f in "$CLUSTER_CONF" "$NODE_DIR/x2.yaml"; do
		sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$f"
	done
	start_node x1
	PAL=${PAL2:-$PAL} CLUSTER_CONF=$NODE_DIR/x2.yaml start_node x2
	wait_until "x1 ready" 30 node_ready x1
	wait_until "x2 ready" 30 node_ready x2
}

# start_hold: a service on HOLD_PORT that accepts connections and never
# answers (a call to it times out with an unknown outcome); HOLD_PID.
start_hold() {
	HOLD_PORT=$(free_port)
	python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(512); time.sleep(600)' "$HOLD_PORT" &
	HOLD_PID=$!
}

now_rfc3339() { date -u +%Y-%m-%dT%H:%M:%SZ; }
rfc3339_ago() { date -u -d "@$(( $(date +%s) - $1 ))" +%Y-%m-%dT%H:%M:%SZ; }

# ---- the reference sink -----------------------------------------------------------
SINK_PID=
# start_sink [--port P] [args...]: palisade-sink on a free port (or P);
# SINK_ADDR, SINK_ADMIN set.
start_sink() {
	local fixed= rc
	if [ "${1:-}" = --port ]; then fixed=$2; shift 2; fi
	launch_sink "$PALISADE_BIN/palisade-sink" "$NODE_DIR/sink.log" "$fixed" "$@"
	rc=$?
	SINK_ADDR=127.0.0.1:$SINK_PORT
	SINK_ADMIN=127.0.0.1:$SINK_ADMIN_PORT
	[ $rc = 0 ] && return 0
	echo "sink did not start:"; tail -5 "$NODE_DIR/sink.log"
	return 1
}
stop_sink() {
	[ -n "$SINK_PID" ] || return 0
	kill "$SINK_PID" 2>/dev/null
	wait "$SINK_PID" 2>/dev/null
	SINK_PID=
}
# start_badserver DESC: tests/integration/badserver.py on free ports (port,
# tls), its output in $NODE_DIR/bad.log, stopped on exit with the nodes and
# the sink; waited for as DESC.
start_badserver() {
	port=$(free_port); tls=$(free_port)
	python3 tests/integration/badserver.py --port "$port" --tls-port "$tls" >"$NODE_DIR/bad.log" 2>&1 &
	BAD_PID=$!
	trap 'kill $BAD_PID 2>/dev/null; stop_all_nodes; stop_sink' EXIT
	wait_until "$1" 10 grep -q ready "$NODE_DIR/bad.log"
}
# badserver_cluster DB SHARDS [TIMEOUT]: a fresh database DB migrated, the
# bad server up as every job's target, and $CLUSTER_CONF for nodes that plan
# and execute SHARDS shards with a 5 s lease (write_conf's environment, such
# as LOOKAHEAD=, passes through); url PATH then prints a target at the bad
# server's PATH with TIMEOUT (default 20s).
badserver_cluster() {
	fresh_db "$1"
	"$PAL" migrate >/dev/null
	start_badserver "target up"
	SHARDS=$2
	BAD_TIMEOUT=${3:-20s}
	write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
}
url() { echo "{url: \"http://127.0.0.1:$port/$1\", timeout: $BAD_TIMEOUT}"; }
sink_stat() { curl -s "http://$SINK_ADMIN/admin/stats" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
sink_faults() { curl -s -X POST -d "$1" "http://$SINK_ADMIN/admin/faults" >/dev/null; }
trap 'stop_all_nodes; stop_sink' EXIT

# gen_sink_jobs FILE N CRON [TENANT] [PREFIX] [extra job lines...]
gen_sink_jobs() {
	local f=$1 n=$2 cron=$3 tenant=${4:-t1} prefix=${5:-load}
	shift 5 2>/dev/null || shift $#
	{
		echo "jobs:"
		for i in $(seq 1 "$n"); do
			echo "  - id: $prefix.job-$i"
			echo "    tenant: $tenant"
			echo "    schedule: {cron: \"$cron\"}"
			echo "    misfire: {policy: fire_all}"
			echo "    target:"
			echo "      url: http://$SINK_ADDR/effects/$prefix"
			echo "      body: '{\"job\": \"{job}\", \"at\": \"{scheduled_at}\"}'"
			echo "      timeout: 2s"
			echo "      status_url: http://$SINK_ADDR/effects/{idempotency_key}"
			echo "    retry: {max_attempts: 20, backoff: {initial: 200ms, max: 1s}, max_age: 10m}"
			for l in "$@"; do echo "    $l"; done
		done
	} >"$f"
}

# ---- a test's usual set-up ------------------------------------------------------
# sink_up [start_sink's args]: the sink started, or the test fails
# ("sink starts") and ends.
sink_up() { start_sink "$@" || { fail "sink starts"; finish; exit 1; }; }
# apply_jobs [DESC]: the job file on stdin written to $NODE_DIR/jobs.yaml
# and applied with $CLUSTER_CONF; with DESC a check (expect_exit DESC 0,
# the output in $OUT), without one unchecked (its output discarded).
# Returns the apply's status.
apply_jobs() {
	cat >"$NODE_DIR/jobs.yaml"
	if [ $# -gt 0 ]; then
		expect_exit "$1" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
		[ "$OUT_RC" -eq 0 ]
	else
		"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
	fi
}
# up_jobs CRON [YAML]: a job file of up.u (cron CRON) and up.b (after up.u,
# within 1h), calling the badserver at log/u and log/b (timeout 20 s), then
# the lines YAML (more jobs of the list).
up_jobs() { up_sched_jobs "{cron: \"$1\"}" "${2:-}"; }
# up_sched_jobs SCHEDULE [YAML]: the same with up.u's schedule SCHEDULE.
up_sched_jobs() {
	local _uj_t="\"http://127.0.0.1:$port/log"
	echo "jobs:"
	echo "  - {id: up.u, schedule: $1, target: {url: $_uj_t/u\", timeout: 20s}}"
	echo "  - {id: up.b, after: [{job: up.u, within: 1h}], target: {url: $_uj_t/b\", timeout: 20s}}"
	[ -z "${2:-}" ] || echo "$2"
}
# oneshot_up [YAML]: after badserver_cluster, up.u a one-shot 15 s ahead
# and up.b after it (up_sched_jobs, with YAML) applied (the check "apply
# up.u as a one-shot"), b1 leading, and the one-shot run.
oneshot_up() {
	up_sched_jobs "{at: \"$(date -u -d "@$(($(date -u +%s) + 15))" +%FT%TZ)\"}" "${1:-}" |
		apply_jobs "apply up.u as a one-shot" || return 1
	lead_shards 20 b1 || return 1
	wait_until "the one-shot ran" 40 has "select count(*) from triggers where job_id = 'up.u' and state = 'succeeded'"
}
# lead_shards SECONDS NODE...: the nodes started (start_node, no further
# arguments) and every shard led within SECONDS (the check "shards led").
lead_shards() {
	local _lsh_s=$1 _lsh_n
	shift
	for _lsh_n; do start_node "$_lsh_n"; done
	wait_until "shards led" "$_lsh_s" all_shards_led
}

# claim_ahead_cluster PREFIX [EXEC]: the set-up of the roll-back tests of a
# trigger claimed ahead: a fresh database (it_db), the sink, one shard
# (SHARDS=1) led by n1, a controller and executor that claims 3 s ahead
# (lease 12 s, heartbeat 500 ms; EXEC, the executor's settings in
# flow style, replaces those), and jobs PREFIX.a, PREFIX.b and PREFIX.c
# firing every 5 s, each calling the sink at /effects/ITS_ID (applied
# unchecked); AHEAD, the SQL condition of a trigger claimed 1.5 s or more
# before its instant.  Returns as lead_shards.
claim_ahead_cluster() {
	local _ca_j
	it_db
	sink_up
	SHARDS=1
	write_exec_conf "$CLUSTER_CONF" "executor: {${2:-lease: 12s, heartbeat: 500ms, claim_ahead: 3s}}"
	apply_jobs < <(
		echo "jobs:"
		for _ca_j in "$1".a "$1".b "$1".c; do
			echo "  - {id: $_ca_j, schedule: {cron: \"*/5 * * * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/$_ca_j\", timeout: 5s}}"
		done
	)
	AHEAD="state = 'running' AND scheduled_at > clock_timestamp() + interval '1.5 s'"
	lead_shards 20 n1
}

# ramp_held N NODE...: the set-up of the resume --ramp tests: a fresh
# database (it_db), the sink, $SHARDS shards led by NODE... (controllers
# and executors, lease 4 s; misfire threshold 3 s, lookahead 1 s, overlap
# 2 s), and job rp.all (fire_all, catch-up window 1 h, at most 1000; its
# schedule fires in 2099) applied and paused, with N instants the pause
# held: whole seconds (the key template has the instant in seconds) from
# 60 + N to 61 s ago, older than the threshold, inside the window.
ramp_held() {
	local _rh_n=$1
	shift
	it_db
	sink_up
	MISFIRE=3s LOOKAHEAD=1s OVERLAP=2s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
	apply_jobs apply <<YAML
jobs:
  - {id: rp.all, schedule: {cron: "0 0 0 1 1 ? 2099"}, misfire: {policy: fire_all, catchup_window: 1h, max_catchup: 1000}, target: {url: "http://$SINK_ADDR/effects/ramp"}}
YAML
	expect_exit "pause the job" 0 "$PAL" pause --job rp.all --reason "ramp test"
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
	     SELECT 'rp.all', 1, t, 0, 'schedule', 'default', 'default', t, 0
	     FROM (SELECT date_trunc('second', now()) - (60 + g) * interval '1 second' AS t
	           FROM generate_series(1, $_rh_n) g) x"
	lead_shards 20 "$@"
}

# misfire_cluster NODE [EXECUTOR]: the cluster of the tests of what a
# pause held past the misfire threshold: two shards (SHARDS=2; misfire
# threshold 3 s, lookahead 1 s, overlap 2 s) led by NODE, a controller,
# and an executor too when EXECUTOR, its settings (e.g. "lease: 5s,
# heartbeat: 1s"), is given; the job file on stdin applied (the check
# "apply").  Returns as lead_shards.  The caller starts the sink first
# (sink_up): the job file names $SINK_ADDR.
misfire_cluster() {
	SHARDS=2
	if [ $# -gt 1 ]; then
		MISFIRE=3s LOOKAHEAD=1s OVERLAP=2s write_exec_conf "$CLUSTER_CONF" "executor: {$2}"
	else
		MISFIRE=3s LOOKAHEAD=1s OVERLAP=2s write_conf "$CLUSTER_CONF"
	fi
	apply_jobs apply
	lead_shards 20 "$1"
}

# old_ranges_cluster: the set-up of the tests of what retention dropped: a
# fresh database (it_db) with the ranges of triggers of an installation
# that had them for 3 days (old_ranges: D, R2, R3, M, F set), the sink
# (SINK, its binary, for its own retention), and $CLUSTER_CONF for one
# shard (SHARDS=1), a controller and executor (lease 5 s, heartbeat 1 s).
old_ranges_cluster() {
	it_db
	sink_up
	SINK=$PALISADE_BIN/palisade-sink
	old_ranges "3 days"
	SHARDS=1
	write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
}

# OUR_SLEEP: the SQL condition (over pg_stat_activity) of a backend of the
# test's own database in pg_sleep, a statement a test's row trigger holds.
# The harness runs tests side by side on one PostgreSQL server: a condition
# without the database sees (and pg_terminate_backend cuts off) another
# test's held statements and sql_samples.
OUR_SLEEP="wait_event = 'PgSleep' and datname = current_database()"

# ---- the controller's insert of triggers held (the apply race) -------------------
# hold_inserts_setup: a statement trigger of the test's database that holds
# every insert into triggers for the seconds hold_inserts set (0 at first);
# insert_held: such an insert is being held now.
hold_inserts_setup() {
	sql "create table it_slow (n int);
create function it_slow_tick() returns trigger language plpgsql as \$\$
begin perform pg_sleep(coalesce((select max(n) from it_slow), 0)); return null; end \$\$;
create trigger it_slow before insert on triggers for each statement execute function it_slow_tick();" >/dev/null
}
hold_inserts() { sql "delete from it_slow; insert into it_slow select $1 where $1 > 0" >/dev/null; }
insert_held() { [ "$(sql "select count(*) from pg_stat_activity where $OUR_SLEEP and query like 'INSERT INTO triggers%'")" -ge 1 ]; }

# ---- a node cut off behind a veth link -------------------------------------------
# netns_up NAME: the network namespace palisade-NAME-PID joined to the host by
# a veth pair on a random 10.x.y.0/24; sets NS, HV (the host side, the link
# to set down for a partition), HIP (its address) and NIP (the namespace
# side's).  Needs root (CAP_NET_ADMIN): fails the check and returns 1 when
# any step fails (the reason in $NODE_DIR/netns.err).  The caller's EXIT
# trap calls netns_down, which ends the forwarders and removes the link and
# the namespace (both of which outlive the test otherwise).
FWD_PIDS=()
netns_up() {
	local net=10.$((200 + RANDOM % 50)).$((RANDOM % 250))
	NS=palisade-$1-$$ HV=p${1:0:1}h$$ NV=p${1:0:1}n$$ HIP=$net.1 NIP=$net.2
	if ! { ip netns add "$NS" && ip link add "$HV" type veth peer name "$NV" &&
		ip link set "$NV" netns "$NS" && ip addr add "$HIP/24" dev "$HV" && ip link set "$HV" up &&
		ip -n "$NS" addr add "$NIP/24" dev "$NV" && ip -n "$NS" link set "$NV" up &&
		ip -n "$NS" link set lo up; } 2>"$NODE_DIR/netns.err"; then
		fail "network namespace and veth pair set up (needs root and CAP_NET_ADMIN): $(head -1 "$NODE_DIR/netns.err")"
		return 1
	fi
	pass "network namespace $NS with a veth link ($HIP <-> $NIP)"
}
netns_down() {
	local p
	for p in "${FWD_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${HV:-}" ] && ip link del "$HV" 2>/dev/null
	[ -n "${NS:-}" ] && ip netns del "$NS" 2>/dev/null
	return 0
}

# netns_forward LOG HOST:PORT: a TCP forwarder (slowlane.py) listening on the
# link's host side, HIP, to HOST:PORT (reachable from the namespace, which
# has no path to the host's loopback); sets FWD_PORT, logs to
# $NODE_DIR/fwd_LOG.log, which says "ready" once it listens.
netns_forward() {
	FWD_PORT=$(free_port)
	python3 tests/integration/slowlane.py --host "$HIP" --listen "$FWD_PORT" --to "$2" \
		>"$NODE_DIR/fwd_$1.log" 2>&1 &
	FWD_PIDS+=($!)
}
# netns_forwarders_ready N: N forwarders say they listen.
netns_forwarders_ready() { [ "$(cat "$NODE_DIR"/fwd_*.log 2>/dev/null | grep -c ready)" -ge "$1" ]; }

# netns_forward_cluster: forwarders to the harness's PostgreSQL and ZooKeeper
# (FWD_PG_PORT, FWD_ZK_PORT), waited for; NS_PG and NS_ZK are the connection
# strings a node inside the namespace uses.
netns_forward_cluster() {
	netns_forward pg "127.0.0.1:$(sed -n 's/.*port=\([0-9]*\).*/\1/p' <<<"$PALISADE_PG")"
	FWD_PG_PORT=$FWD_PORT
	netns_forward zk "127.0.0.1:${PALISADE_ZK##*:}"
	FWD_ZK_PORT=$FWD_PORT
	wait_until "forwarders up" 10 netns_forwarders_ready 2
	NS_PG=$(sed "s/host=[^ ]*/host=$HIP/; s/port=[0-9]*/port=$FWD_PG_PORT/" <<<"$PALISADE_PG")
	NS_ZK=$HIP:$FWD_ZK_PORT
}

# Of the new-job row-cap tests (cap.* jobs, every second, 1 shard).
# cap_leader DB [MINUTES]: a fresh database DB, the sink, and f1 leading
# with a lookahead of MINUTES (2), its watermark that far ahead.
cap_leader() {
	local m=${2:-2}
	fresh_db "$1"
	"$PAL" migrate >/dev/null
	start_sink || { fail "sink starts"; finish; exit 1; }
	SHARDS=1 SCAN=4s LOOKAHEAD=${m}m MISFIRE=15m
	write_conf "$CLUSTER_CONF"
	start_node f1
	wait_until "shards led" 40 all_shards_led
	wait_until "the watermark is ~$m min ahead" 30 cap_wm_ahead $((m * 60 - 20))
}
# cap_reapply IDS: the cap.* jobs of $NODE_DIR/a.yaml listed in file IDS
# applied again with a timeout of 3 s (a second version).
cap_reapply() {
	awk 'NR == FNR { w["  - id: " $0]; next } /^  - id: / { keep = $0 in w }
	     /^jobs:/ || keep { sub(/timeout: 2s/, "timeout: 3s"); print }' "$1" "$NODE_DIR/a.yaml" >"$NODE_DIR/b.yaml"
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml" >/dev/null
}
# cap_waiting: the cap.* jobs none of whose versions is activated yet.
cap_waiting() {
	sql "select job_id from job_versions where job_id like 'cap.%' group by job_id having bool_and(effective_from is null) order by job_id"
}
cap_wm_ahead() { [ "$(sql "select (watermark > now() + interval '$1 s')::int from shards")" = 1 ]; }
# cap_wm: the shard's watermark (epoch seconds).
cap_wm() { sql "select extract(epoch from watermark)::bigint from shards"; }
# cap_undecided FROM [WHERE]: instants (partition 0) of the cap.* jobs
# (those WHERE holds) in (FROM, watermark] with neither a trigger nor a
# misfire; FROM and WHERE are SQL over v (the job's activated
# job_versions row), e.g. a number.
cap_undecided() {
	sql "select count(*) from job_versions v cross join lateral
	       generate_series(($1)::bigint + 1, $(cap_wm)) g
	      where v.job_id like 'cap.%' and v.effective_from is not null and (${2:-true})
	        and not exists (select 1 from trigger_jobs t where t.job_id = v.job_id and t.partition = 0
	                         and extract(epoch from t.scheduled_at)::bigint = g)
	        and not exists (select 1 from misfires m where m.job_id = v.job_id
	                         and g between extract(epoch from m.range_from)::bigint and extract(epoch from m.range_to)::bigint)"
}
# cap_twice: cap.* instants with two triggers.
cap_twice() {
	sql "select count(*) from (select 1 from trigger_jobs where job_id like 'cap.%' group by job_id, partition, scheduled_at having count(*) > 1) d"
}
