# tests/integration/pgbouncer_lib.sh - PgBouncer (Debian 12's 1.18) in
# transaction pooling mode in front of the harness's PostgreSQL, for the
# tests of nodes and commands behind a pooler (test_pgbouncer*.sh).
# Sourced after lib.sh and cluster.sh.  Every PgBouncer is tracked by PID
# (PGB_PID).
#
#   pgb_cluster DB [YAML...]  a fresh database DB migrated directly (DIRECT:
#                         PostgreSQL itself), PgBouncer in front of it
#                         (POOLED; PGB_POOL server connections, 4), the
#                         sink, and $CLUSTER_CONF for nodes with both roles
#                         whose pooled connections go through it
#                         (postgres.pool_mode: $POOL_MODE, transaction; YAML:
#                         more lines of it); stops all at exit.  1 (the test
#                         failed) when something does not start
#   pgb_jobs N            apply N jobs firing every second into the sink
#   start_pgbouncer       start it again after stop_pgbouncer
#   stop_pgbouncer        SIGTERM and wait: its clients' connections drop
#   pgb_cleanup           stop it, keep its log in $NODE_DIR, remove PGB_DIR
#   pgb_up                true when it answers a query
#   pgb_show WHAT         its admin console's SHOW WHAT, rows as a|b|c
PGBOUNCER=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
PGB_POOL=${PGB_POOL:-4}
PGB_PID=

# pgb_setup DB: PGB_DIR, PGB_PORT, its pgbouncer.ini, POOLED.
pgb_setup() {
	local db=$1
	# It refuses to run as root: as root it switches to postgres (-u), so its
	# directory is that user's (outside the harness's private one).
	PGB_DIR=$(mktemp -d /tmp/palisade-pgbouncer.XXXXXX)
	PGB_PORT=$(free_port)
	PGB_USER=()
	[ "$(id -u)" -eq 0 ] && PGB_USER=(-u postgres)
	echo '"palisade" ""' >"$PGB_DIR/users.txt"
	# The session settings a pooled palisade connection does not make itself
	# (docs/operations.md): on every server connection, by connect_query.
	cat >"$PGB_DIR/pgbouncer.ini" <<PGB_INI
[databases]
$db = host=127.0.0.1 port=$PALISADE_PG_PORT dbname=$db user=palisade connect_query='SET jit = off; SET idle_in_transaction_session_timeout = 5000'
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir =
auth_type = trust
auth_file = $PGB_DIR/users.txt
admin_users = palisade
pool_mode = transaction
default_pool_size = $PGB_POOL
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
query_timeout = 30
idle_transaction_timeout = 5
logfile = $PGB_DIR/pgbouncer.log
stats_period = 1
PGB_INI
	[ "$(id -u)" -eq 0 ] && chown -R postgres: "$PGB_DIR"
	POOLED="host=127.0.0.1 port=$PGB_PORT user=palisade dbname=$db"
}

start_pgbouncer() {
	"$PGBOUNCER" "${PGB_USER[@]}" "$PGB_DIR/pgbouncer.ini" >>"$NODE_DIR/pgbouncer.out" 2>&1 &
	PGB_PID=$!
}
stop_pgbouncer() {
	[ -n "${PGB_PID:-}" ] || return 0
	kill "$PGB_PID" 2>/dev/null
	wait "$PGB_PID" 2>/dev/null
	PGB_PID=
}
pgb_cleanup() {
	stop_pgbouncer
	cp "$PGB_DIR/pgbouncer.log" "$NODE_DIR/pgbouncer.log" 2>/dev/null
	rm -rf "$PGB_DIR"
}
pgb_up() { "$PSQL" "$POOLED" -XAtqc "select 1" >/dev/null 2>&1; }
pgb_show() { "$PSQL" "host=127.0.0.1 port=$PGB_PORT user=palisade dbname=pgbouncer" -XAtqc "SHOW $1"; }

pgb_cluster() {
	local db=$1; shift
	if [ ! -x "$PGBOUNCER" ]; then
		fail "pgbouncer is installed (bash ops/deps.sh)"
		return 1
	fi
	fresh_db "$db"
	DIRECT=$PALISADE_PG
	expect_exit "migrate (direct)" 0 "$PAL" migrate
	pgb_setup "$db"
	start_pgbouncer
	trap 'stop_all_nodes; stop_sink; pgb_cleanup' EXIT
	wait_until "PgBouncer answers on :$PGB_PORT" 10 pgb_up || return 1
	start_sink || { fail "sink starts"; return 1; }
	write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s, batch: 64, max_inflight: 128}" \
		"postgres: {conninfo: \"$POOLED\", pool_mode: ${POOL_MODE:-transaction}, direct_conninfo: \"$DIRECT\"}" \
		"$@"
	sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
}

pgb_jobs() {
	gen_sink_jobs "$NODE_DIR/jobs.yaml" "$1" "* * * * * ?" t1 load
	expect_exit "apply $1 jobs every second" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
}
