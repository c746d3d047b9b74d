#!/usr/bin/env bash
# ops/devcluster.sh - a local PostgreSQL 15 and a standalone ZooKeeper for
# development, tests and the demo, on loopback ports, under a state directory.
#
#   ops/devcluster.sh up|down|status|env [--state DIR]
#
#   up      start both (idempotent: a running server is left alone), create the
#           database, and print `export PALISADE_PG=...` / `export PALISADE_ZK=...`
#           lines meant for `eval "$(ops/devcluster.sh up)"`.
#   down    stop what `up` started, by the PIDs it recorded (never by name).
#   status  say what runs; exit 0 only when both run.
#   env     print the export lines only.
#
# Environment: PALISADE_STATE (default .state), PALISADE_PG_PORT (54329),
# PALISADE_ZK_PORT (21819), PALISADE_ZK_TICK_MS (tickTime, default 500; lower
# allows short session timeouts in tests), PALISADE_PG_FAST=1 (fsync off, for
# throwaway test clusters only).
#
# PostgreSQL refuses to run as root; when run as root the server runs as the
# `postgres` system user.  If that user cannot reach the state directory
# (e.g. it sits below a 0700 mktemp directory), the data directory goes to
# /var/tmp/palisade-pg.<hash> and .state/pg records where.
set -euo pipefail

cmd=${1:-}
shift || true
STATE=${PALISADE_STATE:-.state}
while [ $# -gt 0 ]; do
	case "$1" in
	--state) STATE=$2; shift 2 ;;
	--state=*) STATE=${1#*=}; shift ;;
	*) echo "devcluster: unknown argument $1" >&2; exit 64 ;;
	esac
done
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
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

pg_up() {
	local d; d=$(pg_datadir)
	if pg_running; then return 0; fi
	mkdir -p "$d"
	[ "$(id -u)" -eq 0 ] && chown postgres: "$d"
	if [ ! -f "$d/data/PG_VERSION" ]; then
		log "initdb $d/data"
		as_pg "$PGBIN/initdb" -D "$d/data" -U palisade --auth=trust -E UTF8 --locale=C.UTF-8 >"$d/initdb.log" 2>&1 \
			|| { cat "$d/initdb.log" >&2; exit 1; }
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
	as_pg "$PGBIN/pg_ctl" -D "$d/data" -l "$d/postgres.log" -o "-p $PG_PORT" -w -t 60 start >/dev/null \
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

print_env() {
	echo "export PALISADE_PG='host=127.0.0.1 port=$PG_PORT user=palisade dbname=palisade'"
	echo "export PALISADE_ZK='127.0.0.1:$ZK_PORT'"
}

case "$cmd" in
up)
	pg_up
	zk_up
	print_env
	;;
down)
	if zk_running; then
		p=$(zk_pid); log "stopping ZooKeeper (pid $p)"
		kill "$p"
		for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	fi
	rm -f "$STATE/zk/zk.pid"
	if pg_running; then
		log "stopping PostgreSQL"
		as_pg "$PGBIN/pg_ctl" -D "$(pg_datadir)/data" -m fast -w stop >/dev/null
	fi
	;;
destroy)
	"$0" down --state "$STATE"
	d=$(pg_datadir)
	rm -rf "$d" "$STATE"
	;;
status)
	rc=0
	if pg_running; then echo "postgresql: running on 127.0.0.1:$PG_PORT ($(pg_datadir)/data)"; else echo "postgresql: stopped"; rc=1; fi
	if zk_running; then echo "zookeeper: running on 127.0.0.1:$ZK_PORT (pid $(zk_pid))"; else echo "zookeeper: stopped"; rc=1; fi
	exit $rc
	;;
env) print_env ;;
*)
	echo "usage: ops/devcluster.sh up|down|status|env|destroy [--state DIR]" >&2
	exit 64
	;;
esac
