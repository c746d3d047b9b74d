#!/usr/bin/env bash
# ops/devcluster.sh - a local PostgreSQL 15 and a ZooKeeper (one standalone
# server by default, or an ensemble of 3 or 5) for development, tests, drills
# and the demo, on loopback ports, under a state directory.
#
#   ops/devcluster.sh up|down|status|env|destroy [--state DIR] [--zk N] [--pg single|ha|ha-async] [--only zk|pg]
#   ops/devcluster.sh zk-kill|zk-stop|zk-cont|zk-start I [--state DIR]
#   ops/devcluster.sh zk-modes [--state DIR]
#
#   up      start both (idempotent: a running server is left alone), create the
#           database, and print `export PALISADE_PG=...` / `export PALISADE_ZK=...`
#           lines meant for `eval "$(ops/devcluster.sh up)"`.
#   down    stop what `up` started, by the PIDs it recorded (never by name).
#   status  say what runs; exit 0 only when both run.
#   env     print the export lines only.
#   --zk N  ZooKeeper servers: 1 (default: a standalone server, as always), 3
#           or 5 (an ensemble: QuorumPeerMain per server, each with its own
#           data directory, myid, zoo.cfg and PID under STATE/zk/sI/).  The
#           size is recorded at the first `up`; later commands use it.
#   --pg ha three PostgreSQL members under Patroni (Debian's patroni and
#           python3-kazoo), synchronous replication, this state's ZooKeeper as
#           the DCS; PALISADE_PG is then a multi-host conninfo
#           (host=a,b,c port=p1,p2,p3 target_session_attrs=read-write).
#           Recorded at the first `up` like --zk.  Default: single (as always).
#   --pg ha-async  the same three members with asynchronous replication
#           (synchronous_mode off: a commit returns before any replica has
#           it; a failover can lose the last acknowledged commits, up to
#           maximum_lag_on_failover, 1 MiB).
#   --only  start/stop only ZooKeeper or only PostgreSQL.
#   pg-kill I     kill -9 of member I's Patroni and PostgreSQL; pg-stop I
#                 stops it cleanly, pg-start I starts it again; pg-roles:
#                 "I PORT primary|replica|down" per member.
#   zk-kill I     kill -9 ensemble server I (1-based); zk-stop/zk-cont I send
#                 SIGSTOP/SIGCONT; zk-start I starts it again (same data).
#   zk-modes      one line per server: "I PORT leader|follower|standalone|down".
#
# Environment: PALISADE_STATE (default .state), PALISADE_PG_PORT (54329),
# PALISADE_ZK_PORT (21819: the client port of server 1; the other ports of
# an ensemble are free ports chosen at the first `up` and recorded in
# STATE/zk/ports), PALISADE_ZK_TICK_MS (tickTime, default 500; lower
# allows short session timeouts in tests), PALISADE_PG_FAST=1 (fsync off, and
# the data directory copied from a template made by initdb once per machine:
# for throwaway test clusters only), PALISADE_PG_OPTS (more server options
# at start, e.g. "-c shared_preload_libraries=pg_stat_statements" for the
# bench's statement profile).
#
# PostgreSQL refuses to run as root; when run as root the server runs as the
# `postgres` system user.  If that user cannot reach the state directory
# (e.g. it sits below a 0700 mktemp directory), the data directory goes to
# /var/tmp/palisade-pg.<hash> and .state/pg records where.
set -euo pipefail

cmd=${1:-}
shift || true
STATE=${PALISADE_STATE:-.state}
ZK_N=
PG_MODE=
ONLY=
ARG=
case "$cmd" in zk-kill | zk-stop | zk-cont | zk-start | pg-kill | pg-start | pg-stop) ARG=${1:-}; shift || true ;; esac
while [ $# -gt 0 ]; do
	case "$1" in
	--state) STATE=$2; shift 2 ;;
	--state=*) STATE=${1#*=}; shift ;;
	--zk) ZK_N=$2; shift 2 ;;
	--zk=*) ZK_N=${1#*=}; shift ;;
	--pg) PG_MODE=$2; shift 2 ;;
	--pg=*) PG_MODE=${1#*=}; shift ;;
	--only) ONLY=$2; shift 2 ;;
	--only=*) ONLY=${1#*=}; shift ;;
	*) echo "devcluster: unknown argument $1" >&2; exit 64 ;;
	esac
done
case "$ONLY" in "" | zk | pg) ;; *) echo "devcluster: --only zk or --only pg" >&2; exit 64 ;; esac
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
# The ensemble size: recorded at the first `up`, then fixed for the state.
if [ -f "$STATE/zk/servers" ]; then
	rec=$(cat "$STATE/zk/servers")
	if [ -n "$ZK_N" ] && [ "$ZK_N" != "$rec" ]; then
		echo "devcluster: $STATE holds a ZooKeeper of $rec server(s); destroy it first to use --zk $ZK_N" >&2
		exit 64
	fi
	ZK_N=$rec
fi
ZK_N=${ZK_N:-1}
# The PostgreSQL kind: single (default) or ha (Patroni), recorded likewise.
if [ -f "$STATE/pg.mode" ]; then
	rec=$(cat "$STATE/pg.mode")
	if [ -n "$PG_MODE" ] && [ "$PG_MODE" != "$rec" ]; then
		echo "devcluster: $STATE holds a PostgreSQL of kind $rec; destroy it first to use --pg $PG_MODE" >&2
		exit 64
	fi
	PG_MODE=$rec
fi
PG_MODE=${PG_MODE:-single}
case "$PG_MODE" in single | ha | ha-async) ;; *) echo "devcluster: --pg takes single, ha or ha-async" >&2; exit 64 ;; esac
# ha and ha-async are both Patroni clusters; they differ in synchronous_mode.
pg_ha() { [ "$PG_MODE" = ha ] || [ "$PG_MODE" = ha-async ]; }
PGHA_SYNC=true
[ "$PG_MODE" = ha-async ] && PGHA_SYNC=false
case "$ZK_N" in 1 | 3 | 5) ;; *) echo "devcluster: --zk takes 1, 3 or 5" >&2; exit 64 ;; esac
PG_PORT=${PALISADE_PG_PORT:-54329}
ZK_PORT=${PALISADE_ZK_PORT:-21819}
ZK_TICK=${PALISADE_ZK_TICK_MS:-500}
PGBIN=/usr/lib/postgresql/15/bin
JAVA=/usr/share/java
ZK_CP="$JAVA/zookeeper.jar:$JAVA/zookeeper-jute.jar:$JAVA/slf4j-api.jar:$JAVA/slf4j-simple.jar:$JAVA/metrics-core.jar:$JAVA/snappy-java.jar"
for j in netty-handler netty-common netty-buffer netty-transport netty-codec netty-resolver \
	netty-transport-native-epoll netty-transport-native-unix-common; do
	ZK_CP="$ZK_CP:$JAVA/$j.jar"
done

log() { echo "devcluster: $*" >&2; }

# Run a command as the PostgreSQL owner: ourselves, or `postgres` when root.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_datadir() {
	if [ -f "$STATE/pg.path" ]; then cat "$STATE/pg.path"; return; fi
	local d="$STATE/pg"
	if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$STATE" 2>/dev/null; then
		d="/var/tmp/palisade-pg.$(echo -n "$STATE" | sha1sum | cut -c1-12)"
	fi
	echo "$d" > "$STATE/pg.path"
	echo "$d"
}

pg_running() {
	local d; d=$(pg_datadir)
	[ -f "$d/data/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$d/data" status >/dev/null 2>&1
}

zk_pid() { [ -f "$STATE/zk/zk.pid" ] && cat "$STATE/zk/zk.pid"; }
zk_running() {
	local p; p=$(zk_pid) || return 1
	kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" | grep -q ZooKeeperServerMain
}
zk_ok() { [ "$(echo srvr | nc -q1 -w2 127.0.0.1 "$ZK_PORT" 2>/dev/null | grep -c '^Mode:')" -ge 1 ]; }

# pg_initdb DATA LOG: DATA (absent) made a new data directory, initdb's
# output in LOG.  With PALISADE_PG_FAST=1 (throwaway test clusters) DATA
# is a copy of a template that initdb made once per machine, PostgreSQL
# version and owner (/var/tmp/palisade-pg-template.KEY): a copy takes
# ~0.5 s where initdb takes 3-6 s on a loaded 2-core box, and a CI run
# starts four clusters.  The template appears by a rename of a complete
# directory, so harnesses started side by side never copy half of one.
INITDB_ARGS=(-U palisade --auth=trust -E UTF8 --locale=C.UTF-8)
pg_initdb() {
	local data=$1 out=$2 key tmpl tmp
	if [ "${PALISADE_PG_FAST:-0}" = 1 ]; then
		key=$({ "$PGBIN/initdb" --version; echo "${INITDB_ARGS[*]}"; id -u; } | sha1sum | cut -c1-12)
		tmpl=/var/tmp/palisade-pg-template.$key
		if [ ! -f "$tmpl/PG_VERSION" ]; then
			log "initdb $tmpl (a template for test clusters)"
			tmp=$(mktemp -d "$tmpl.new.XXXXXX")
			[ "$(id -u)" -eq 0 ] && chown postgres: "$tmp"
			if as_pg "$PGBIN/initdb" -D "$tmp/data" "${INITDB_ARGS[@]}" >"$out" 2>&1; then
				mv -T "$tmp/data" "$tmpl" 2>/dev/null || true # another harness's came first
			fi
			rm -rf "$tmp"
		fi
		if [ -f "$tmpl/PG_VERSION" ]; then
			log "copy $tmpl to $data"
			as_pg cp -a "$tmpl" "$data" && return 0
			rm -rf "$data"
		fi
	fi
	log "initdb $data"
	as_pg "$PGBIN/initdb" -D "$data" "${INITDB_ARGS[@]}" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
}

pg_up() {
	local d; d=$(pg_datadir)
	if pg_running; then return 0; fi
	mkdir -p "$d"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$d"
	if [ ! -f "$d/data/PG_VERSION" ]; then
		pg_initdb "$d/data" "$d/initdb.log"
		{
			echo "listen_addresses = '127.0.0.1'"
			echo "unix_socket_directories = '$d'"
			echo "max_connections = 200"
			echo "shared_buffers = 256MB"
			echo "log_min_messages = warning"
			echo "logging_collector = off"
			if [ "${PALISADE_PG_FAST:-0}" = 1 ]; then
				echo "fsync = off"; echo "synchronous_commit = off"; echo "full_page_writes = off"
			fi
		} >> "$d/data/postgresql.conf"
	fi
	log "starting PostgreSQL on 127.0.0.1:$PG_PORT"
	as_pg "$PGBIN/pg_ctl" -D "$d/data" -l "$d/postgres.log" -o "-p $PG_PORT ${PALISADE_PG_OPTS:-}" -w -t 60 start >/dev/null \
		|| { tail -20 "$d/postgres.log" >&2; exit 1; }
	if ! as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U palisade -d postgres -Atqc \
		"select 1 from pg_database where datname='palisade'" | grep -q 1; then
		as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U palisade palisade
	fi
}

zk_up() {
	if zk_running; then return 0; fi
	mkdir -p "$STATE/zk/data"
	cat > "$STATE/zk/zoo.cfg" <<CFG
tickTime=$ZK_TICK
dataDir=$STATE/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
minSessionTimeout=$((ZK_TICK * 2))
maxSessionTimeout=120000
4lw.commands.whitelist=srvr,stat,ruok,mntr,cons
CFG
	log "starting ZooKeeper on 127.0.0.1:$ZK_PORT"
	setsid java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$ZK_CP" \
		org.apache.zookeeper.server.ZooKeeperServerMain "$STATE/zk/zoo.cfg" \
		>"$STATE/zk/zookeeper.log" 2>&1 </dev/null &
	echo $! > "$STATE/zk/zk.pid"
	for _ in $(seq 1 100); do
		zk_ok && return 0
		kill -0 "$(zk_pid)" 2>/dev/null || break
		sleep 0.2
	done
	log "ZooKeeper did not come up; see $STATE/zk/zookeeper.log"
	tail -20 "$STATE/zk/zookeeper.log" >&2
	exit 1
}

# ---- ZooKeeper ensemble (--zk 3|5) ----------------------------------------------
# Server I lives in STATE/zk/sI: zoo.cfg, data/myid, zk.pid, zookeeper.log.
# STATE/zk/ports holds "I client peer election" per server, chosen once.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ens_ports() {
	if [ ! -s "$STATE/zk/ports" ]; then
		mkdir -p "$STATE/zk"
		local i c
		for i in $(seq 1 "$ZK_N"); do
			if [ "$i" = 1 ]; then c=$ZK_PORT; else c=$(free_port); fi
			echo "$i $c $(free_port) $(free_port)"
		done > "$STATE/zk/ports.tmp"
		mv "$STATE/zk/ports.tmp" "$STATE/zk/ports"
	fi
	cat "$STATE/zk/ports"
}
ens_client_port() { ens_ports | awk -v i="$1" '$1 == i { print $2 }'; }
ens_pid() { [ -f "$STATE/zk/s$1/zk.pid" ] && cat "$STATE/zk/s$1/zk.pid"; }
ens_running() {
	local p; p=$(ens_pid "$1") || return 1
	kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" | grep -q QuorumPeerMain
}
# ens_mode I: leader, follower, standalone or down (as the server says).
ens_mode() {
	local m
	m=$(echo srvr | nc -q1 -w2 127.0.0.1 "$(ens_client_port "$1")" 2>/dev/null | sed -n 's/^Mode: //p')
	echo "${m:-down}"
}
ens_quorum_ok() {
	local i n=0
	for i in $(seq 1 "$ZK_N"); do
		case "$(ens_mode "$i")" in leader | follower) n=$((n + 1)) ;; esac
	done
	[ "$n" -gt $((ZK_N / 2)) ]
}
ens_start() { # ens_start I: start server I (idempotent)
	local i=$1 d="$STATE/zk/s$1"
	ens_running "$i" && return 0
	mkdir -p "$d/data"
	echo "$i" > "$d/data/myid"
	{
		echo "tickTime=$ZK_TICK"
		echo "initLimit=20"
		echo "syncLimit=10"
		echo "dataDir=$d/data"
		echo "clientPort=$(ens_client_port "$i")"
		echo "clientPortAddress=127.0.0.1"
		echo "admin.enableServer=false"
		echo "minSessionTimeout=$((ZK_TICK * 2))"
		echo "maxSessionTimeout=120000"
		echo "4lw.commands.whitelist=srvr,stat,ruok,mntr,cons"
		echo "reconfigEnabled=false"
		ens_ports | while read -r j c p e; do echo "server.$j=127.0.0.1:$p:$e"; done
	} > "$d/zoo.cfg"
	log "starting ZooKeeper server $i of $ZK_N on 127.0.0.1:$(ens_client_port "$i")"
	setsid java -Xmx128m -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
		-Dzookeeper.jmx.log4j.disable=true -cp "$ZK_CP" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" \
		>>"$d/zookeeper.log" 2>&1 </dev/null &
	echo $! > "$d/zk.pid"
}
ens_stop() { # ens_stop I: SIGTERM, then SIGKILL after 5 s
	local p
	ens_running "$1" || { rm -f "$STATE/zk/s$1/zk.pid"; return 0; }
	p=$(ens_pid "$1"); log "stopping ZooKeeper server $1 (pid $p)"
	kill -CONT "$p" 2>/dev/null || true
	kill "$p"
	for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$p" 2>/dev/null || true
	rm -f "$STATE/zk/s$1/zk.pid"
}
ens_up() {
	local i
	for i in $(seq 1 "$ZK_N"); do ens_start "$i"; done
	for _ in $(seq 1 300); do
		ens_quorum_ok && return 0
		sleep 0.2
	done
	log "the ZooKeeper ensemble formed no quorum; see $STATE/zk/s*/zookeeper.log"
	for i in $(seq 1 "$ZK_N"); do tail -5 "$STATE/zk/s$i/zookeeper.log" >&2; done
	exit 1
}
ens_connect() { ens_ports | awk '{ printf "%s127.0.0.1:%s", (NR > 1 ? "," : ""), $2 }'; }

# ---- PostgreSQL under Patroni (--pg ha) ---------------------------------------------
# Three members, each a Patroni process (which runs its PostgreSQL) with its
# own data directory, PostgreSQL port and REST port, using this state's
# ZooKeeper (start it first: `up --zk 3`, or the default standalone server)
# as its DCS, synchronous replication (synchronous_mode; off for --pg
# ha-async), pg_rewind on.
# Member I lives in PGHA/mI (PGHA: STATE/pgha, or /var/tmp/palisade-pgha.<hash>
# when run as root and the postgres user cannot reach STATE); STATE/pgha.ports
# holds "I pgport restport".  Patroni runs as the postgres user when root.
pgha_dir() {
	if [ -f "$STATE/pgha.path" ]; then cat "$STATE/pgha.path"; return; fi
	local d="$STATE/pgha"
	if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$STATE" 2>/dev/null; then
		d="/var/tmp/palisade-pgha.$(echo -n "$STATE" | sha1sum | cut -c1-12)"
	fi
	echo "$d" > "$STATE/pgha.path"
	echo "$d"
}
pgha_ports() {
	if [ ! -s "$STATE/pgha.ports" ]; then
		local i p
		for i in 1 2 3; do
			if [ "$i" = 1 ]; then p=$PG_PORT; else p=$(free_port); fi
			echo "$i $p $(free_port)"
		done > "$STATE/pgha.ports.tmp"
		mv "$STATE/pgha.ports.tmp" "$STATE/pgha.ports"
	fi
	cat "$STATE/pgha.ports"
}
pgha_port() { pgha_ports | awk -v i="$1" '$1 == i { print $2 }'; }
pgha_rest() { pgha_ports | awk -v i="$1" '$1 == i { print $3 }'; }
pgha_pid() { [ -f "$(pgha_dir)/m$1/patroni.pid" ] && cat "$(pgha_dir)/m$1/patroni.pid"; }
pgha_running() {
	local p; p=$(pgha_pid "$1") || return 1
	kill -0 "$p" 2>/dev/null && tr '\0' ' ' < "/proc/$p/cmdline" | grep -q patroni
}
# pgha_role I: primary, replica or down (Patroni's REST API).
pgha_role() {
	local r
	r=$(curl -s --max-time 2 "http://127.0.0.1:$(pgha_rest "$1")/patroni" 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("role","down") if j.get("state")=="running" else "down")' 2>/dev/null)
	case "$r" in master | primary) echo primary ;; replica | standby_leader) echo replica ;; *) echo down ;; esac
}
pgha_primary() {
	local i
	for i in 1 2 3; do [ "$(pgha_role "$i")" = primary ] && { echo "$i"; return 0; }; done
	return 1
}
pgha_start() { # pgha_start I (idempotent)
	local i=$1 d; d="$(pgha_dir)/m$1"
	pgha_running "$i" && return 0
	mkdir -p "$d"
	local hosts; hosts=$(zk_connect | tr ',' '\n' | sed "s/.*/'&'/" | paste -sd, -)
	cat > "$d/patroni.yml" <<YML
scope: palisade
namespace: /palisade-patroni/
name: m$i
restapi:
  listen: 127.0.0.1:$(pgha_rest "$i")
  connect_address: 127.0.0.1:$(pgha_rest "$i")
zookeeper:
  hosts: [$hosts]
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: $PGHA_SYNC
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
        max_connections: 200
        shared_buffers: 128MB
  initdb: [{encoding: UTF8}, {locale: C.UTF-8}]
  pg_hba:
    - local all all trust
    - host replication palisade 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$(pgha_port "$i")
  connect_address: 127.0.0.1:$(pgha_port "$i")
  data_dir: $d/data
  bin_dir: $PGBIN
  pgpass: $d/pgpass
  authentication:
    superuser: {username: palisade}
    replication: {username: palisade}
    rewind: {username: palisade}
  parameters:
    unix_socket_directories: '$d'
    log_min_messages: warning
log:
  level: WARNING
YML
	if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$d"; chmod 0700 "$d"; fi
	log "starting Patroni member m$i (PostgreSQL 127.0.0.1:$(pgha_port "$i"), REST :$(pgha_rest "$i"))"
	if [ "$(id -u)" -eq 0 ]; then
		setsid setpriv --reuid=postgres --regid=postgres --init-groups -- patroni "$d/patroni.yml" \
			>>"$d/patroni.log" 2>&1 </dev/null &
	else
		setsid patroni "$d/patroni.yml" >>"$d/patroni.log" 2>&1 </dev/null &
	fi
	echo $! > "$d/patroni.pid"
}
pgha_kill() { # pgha_kill I: kill -9 of member I's Patroni and its PostgreSQL
	local d p pm; d="$(pgha_dir)/m$1"
	p=$(pgha_pid "$1") || true
	pm=$(head -1 "$d/data/postmaster.pid" 2>/dev/null) || true
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	[ -n "$pm" ] && kill -9 "$pm" 2>/dev/null
	rm -f "$d/patroni.pid"
	log "killed Patroni member m$1 (patroni ${p:-none}, postmaster ${pm:-none})"
}
pgha_stop() {
	local p
	pgha_running "$1" || { rm -f "$(pgha_dir)/m$1/patroni.pid"; return 0; }
	p=$(pgha_pid "$1"); log "stopping Patroni member m$1 (pid $p)"
	kill "$p"
	for _ in $(seq 1 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$p" 2>/dev/null || true
	rm -f "$(pgha_dir)/m$1/patroni.pid"
}
pgha_up() {
	command -v patroni >/dev/null || { log "patroni is not installed (apt-get install -y patroni python3-kazoo)"; exit 1; }
	local i p
	for i in 1 2 3; do pgha_start "$i"; done
	for _ in $(seq 1 300); do p=$(pgha_primary) && break; sleep 0.5; done
	[ -n "${p:-}" ] || { log "no Patroni primary; see $(pgha_dir)/m*/patroni.log"; tail -5 "$(pgha_dir)"/m*/patroni.log >&2; exit 1; }
	for _ in $(seq 1 300); do
		[ "$(for i in 1 2 3; do pgha_role "$i"; done | grep -c replica)" = 2 ] && break
		sleep 0.5
	done
	if ! as_pg "$PGBIN/psql" -h 127.0.0.1 -p "$(pgha_port "$p")" -U palisade -d postgres -Atqc \
		"select 1 from pg_database where datname='palisade'" | grep -q 1; then
		as_pg "$PGBIN/createdb" -h 127.0.0.1 -p "$(pgha_port "$p")" -U palisade palisade
	fi
}
pgha_conninfo() {
	echo "host=127.0.0.1,127.0.0.1,127.0.0.1 port=$(pgha_ports | awk '{print $2}' | paste -sd, -) user=palisade dbname=palisade target_session_attrs=read-write"
}

zk_connect() { if [ "$ZK_N" = 1 ]; then echo "127.0.0.1:$ZK_PORT"; else ens_connect; fi; }

print_env() {
	if [ "$ONLY" = zk ]; then :
	elif pg_ha; then echo "export PALISADE_PG='$(pgha_conninfo)'"
	else echo "export PALISADE_PG='host=127.0.0.1 port=$PG_PORT user=palisade dbname=palisade'"
	fi
	[ "$ONLY" = pg ] || echo "export PALISADE_ZK='$(zk_connect)'"
}

zk_all_up() {
	mkdir -p "$STATE/zk"
	echo "$ZK_N" > "$STATE/zk/servers"
	if [ "$ZK_N" = 1 ]; then zk_up; else ens_up; fi
}
zk_all_down() {
	if [ "$ZK_N" = 1 ]; then
		if zk_running; then
			p=$(zk_pid); log "stopping ZooKeeper (pid $p)"
			kill "$p"
			for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
			kill -9 "$p" 2>/dev/null || true
		fi
		rm -f "$STATE/zk/zk.pid"
	else
		for i in $(seq 1 "$ZK_N"); do ens_stop "$i"; done
	fi
}
server_arg() {
	case "$ARG" in '' | *[!0-9]*) echo "devcluster: $cmd takes a server number 1..$ZK_N" >&2; exit 64 ;; esac
	[ "$ZK_N" -gt 1 ] && [ "$ARG" -ge 1 ] && [ "$ARG" -le "$ZK_N" ] \
		|| { echo "devcluster: $cmd needs an ensemble (--zk 3|5) and a server 1..$ZK_N" >&2; exit 64; }
}

case "$cmd" in
up)
	# A single PostgreSQL starts beside ZooKeeper (its initdb or copy and
	# the JVM's start overlap); Patroni needs ZooKeeper first, its DCS.
	zk_job=
	if [ "$ONLY" != pg ]; then
		if [ "$ONLY" != zk ] && ! pg_ha; then
			zk_all_up &
			zk_job=$!
			# a PostgreSQL that fails leaves ZooKeeper started and its
			# PID recorded, for the caller's `down`
			trap 'wait "$zk_job" 2>/dev/null' EXIT
		else
			zk_all_up
		fi
	fi
	if [ "$ONLY" != zk ]; then
		echo "$PG_MODE" > "$STATE/pg.mode"
		if pg_ha; then pgha_up; else pg_up; fi
	fi
	[ -z "$zk_job" ] || wait "$zk_job" || exit 1
	print_env
	;;
down)
	if pg_ha && [ "$ONLY" != zk ]; then
		for i in 1 2 3; do pgha_stop "$i"; done
	fi
	# ZooKeeper's JVM and PostgreSQL stop side by side.
	zk_job=
	[ "$ONLY" = pg ] || { zk_all_down & zk_job=$!; }
	if [ "$ONLY" != zk ] && pg_running; then
		log "stopping PostgreSQL"
		as_pg "$PGBIN/pg_ctl" -D "$(pg_datadir)/data" -m fast -w stop >/dev/null
	fi
	[ -z "$zk_job" ] || wait "$zk_job"
	;;
destroy)
	if [ -n "$ONLY" ]; then
		"$0" down --state "$STATE" --only "$ONLY"
		if [ "$ONLY" = zk ]; then rm -rf "$STATE/zk"; else rm -rf "$(pg_datadir)" "$STATE/pg.path"; fi
	else
		"$0" down --state "$STATE"
		d=$(pg_datadir)
		pg_ha && rm -rf "$(pgha_dir)"
		rm -rf "$d" "$STATE"
	fi
	;;
zk-kill) server_arg; p=$(ens_pid "$ARG") && kill -9 "$p" 2>/dev/null; rm -f "$STATE/zk/s$ARG/zk.pid"; log "killed ZooKeeper server $ARG (pid ${p:-none})" ;;
zk-stop) server_arg; p=$(ens_pid "$ARG") && kill -STOP "$p" ;;
zk-cont) server_arg; p=$(ens_pid "$ARG") && kill -CONT "$p" ;;
zk-start) server_arg; ens_start "$ARG" ;;
pg-kill | pg-start | pg-stop)
	pg_ha && case "$ARG" in 1 | 2 | 3) ;; *) false ;; esac \
		|| { echo "devcluster: $cmd needs --pg ha|ha-async and a member 1..3" >&2; exit 64; }
	case "$cmd" in pg-kill) pgha_kill "$ARG" ;; pg-start) pgha_start "$ARG" ;; pg-stop) pgha_stop "$ARG" ;; esac
	;;
pg-roles)
	pg_ha || { echo "devcluster: pg-roles needs --pg ha or ha-async" >&2; exit 64; }
	for i in 1 2 3; do echo "$i $(pgha_port "$i") $(pgha_role "$i")"; done
	;;
zk-modes)
	if [ "$ZK_N" = 1 ]; then
		m=$(echo srvr | nc -q1 -w2 127.0.0.1 "$ZK_PORT" 2>/dev/null | sed -n 's/^Mode: //p')
		echo "1 $ZK_PORT ${m:-down}"
	else
		for i in $(seq 1 "$ZK_N"); do echo "$i $(ens_client_port "$i") $(ens_mode "$i")"; done
	fi
	;;
status)
	rc=0
	if [ "$ONLY" != zk ] && pg_ha; then
		for i in 1 2 3; do
			if pgha_running "$i"; then echo "postgresql m$i/3: $(pgha_role "$i") on 127.0.0.1:$(pgha_port "$i") (patroni pid $(pgha_pid "$i"))"
			else echo "postgresql m$i/3: stopped"; rc=1; fi
		done
	elif [ "$ONLY" != zk ]; then
		if pg_running; then echo "postgresql: running on 127.0.0.1:$PG_PORT ($(pg_datadir)/data)"; else echo "postgresql: stopped"; rc=1; fi
	fi
	if [ "$ONLY" = pg ]; then :
	elif [ "$ZK_N" = 1 ]; then
		if zk_running; then echo "zookeeper: running on 127.0.0.1:$ZK_PORT (pid $(zk_pid))"; else echo "zookeeper: stopped"; rc=1; fi
	else
		for i in $(seq 1 "$ZK_N"); do
			if ens_running "$i"; then echo "zookeeper $i/$ZK_N: $(ens_mode "$i") on 127.0.0.1:$(ens_client_port "$i") (pid $(ens_pid "$i"))"
			else echo "zookeeper $i/$ZK_N: stopped"; rc=1; fi
		done
	fi
	exit $rc
	;;
env) print_env ;;
*)
	echo "usage: ops/devcluster.sh up|down|status|env|destroy [--state DIR] [--zk 1|3|5] [--only zk|pg]" >&2
	echo "       ops/devcluster.sh zk-kill|zk-stop|zk-cont|zk-start I | zk-modes [--state DIR]" >&2
	echo "       ops/devcluster.sh pg-kill|pg-stop|pg-start I | pg-roles [--state DIR]   (--pg ha|ha-async)" >&2
	exit 64
	;;
esac
