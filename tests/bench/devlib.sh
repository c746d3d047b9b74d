# shellcheck shell=bash
# tests/bench/devlib.sh - the common start of the bench scripts that run one
# node by hand on a dev cluster of their own (ops/devcluster.sh: PostgreSQL
# and ZooKeeper on free loopback ports) rather than under run.sh, which has
# tests/bench/lib.sh.  Sourced with the checkout as the working directory.
#
#   dev_cluster_up NAME  a state directory /tmp/palisade-NAME.XXXXXX
#                        (PALISADE_STATE), free ports, the cluster started and
#                        its PALISADE_PG / PALISADE_ZK set; on exit the node
#                        whose PID is in $PID (if any) is stopped, then the
#                        cluster, and the directory removed.  Set extra
#                        PALISADE_* variables (ZK tick, fast PostgreSQL) first.
#   sql SQL              one statement on PALISADE_PG, unaligned rows
#   ms                   host clock, epoch milliseconds
#   ts_ms EVENT LOG      the time of the first EVENT line of node log LOG, epoch ms
source tests/ports.sh

dev_cluster_down() {
	[ -n "${PID:-}" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	bash ops/devcluster.sh down >/dev/null 2>&1
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}

dev_cluster_up() {
	PALISADE_STATE=$(mktemp -d "/tmp/palisade-$1.XXXXXX")
	export PALISADE_STATE
	chmod 755 "$PALISADE_STATE"
	PALISADE_PG_PORT=$(free_port)
	PALISADE_ZK_PORT=$(free_port)
	export PALISADE_PG_PORT PALISADE_ZK_PORT
	PID=
	trap dev_cluster_down EXIT
	eval "$(bash ops/devcluster.sh up 2>/dev/null)"
}

sql() { psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
ms() { date +%s%3N; }
ts_ms() { date -d "$(grep -m1 "\"event\":\"$1\"" "$2" | sed 's/.*"ts":"\([^"]*\)".*/\1/')" +%s%3N; }
