# tests/integration/lib.sh - helpers sourced by the integration tests.
# The harness (run.sh) has exported PALISADE_PG, PALISADE_ZK, PALISADE_BIN and
# PALISADE_TEST_TMP; each test gets a fresh database (fresh_db).

PAL=${PALISADE_BIN:-bin}/palisade
# Tests talk only to loopback: keep the test tools' own HTTP (curl, Python)
# off any proxy the machine's environment names.
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
# The admin token of every test node and of `palisade drain` (writes need it).
export PALISADE_ADMIN_TOKEN=${PALISADE_ADMIN_TOKEN:-it-admin-token-$$}
T_FAILS=0
T_CHECKS=0

# Name the guarantee the test proves; printed once at the top.
guarantee() { echo "  proves: $*"; }

pass() { sql_errors; T_CHECKS=$((T_CHECKS + 1)); echo "    ok   $*"; }
fail() { sql_errors; T_CHECKS=$((T_CHECKS + 1)); T_FAILS=$((T_FAILS + 1)); echo "    FAIL $*"; }

# check DESC COMMAND...: passes when COMMAND succeeds.
# (Locals of the helpers that run a command are prefixed: a function run by
# them reads its caller's locals by bash's dynamic scope, not ours.)
check() { local _ck_d=$1; shift; if "$@"; then pass "$_ck_d"; else fail "$_ck_d"; fi; }

# expect_eq DESC EXPECTED ACTUAL
expect_eq() {
	if [ "$2" == "$3" ]; then pass "$1"; else fail "$1: expected [$2], got [$3]"; fi
}

# expect_exit DESC CODE COMMAND...: runs COMMAND, output into $OUT (stdout+stderr),
# its exit status into $OUT_RC.
expect_exit() {
	local _ee_d=$1 _ee_want=$2; shift 2
	OUT=$("$@" 2>&1); OUT_RC=$?; local _ee_rc=$OUT_RC
	if [ "$_ee_rc" -eq "$_ee_want" ]; then pass "$_ee_d (exit $_ee_rc)"; else fail "$_ee_d: exit $_ee_rc, want $_ee_want: $(echo "$OUT" | head -5)"; fi
}

# expect_match DESC REGEX TEXT
expect_match() {
	if grep -qE -- "$2" <<<"$3"; then pass "$1"; else fail "$1: no match for /$2/ in: $(echo "$3" | head -5)"; fi
}

# sql QUERY: one value or rows, unaligned.  PostgreSQL 15's own psql when
# installed: Debian's psql is a Perl wrapper that picks the version, twice
# the CPU per call of a loop that polls (the bench's, a test's wait_until).
#
# A query that fails (an error, no connection) fails the test: sql runs
# mostly in a command substitution, a subshell whose fail() would be lost,
# and `expect_eq D "" "$(sql ...)"` would pass on its empty output.  So
# sql passes psql's error on to stderr and appends a line (the query's
# first line, psql's error) to $SQL_ERRORS, a file of this test's own;
# the next pass or fail of the test's shell, and finish, fail the test
# with each such line.  A query meant to fail (a refused write, a query
# polled while the server is down) runs with sql_try: psql's status,
# nothing recorded.  has, seq_scans and sql_samples record as sql does.
PSQL=psql
[ -x /usr/lib/postgresql/15/bin/psql ] && PSQL=/usr/lib/postgresql/15/bin/psql
SQL_ERRORS=$(mktemp "${PALISADE_TEST_TMP:-${TMPDIR:-/tmp}}/sql-errors.XXXXXX")
sql() { sql_run "$1" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
sql_try() { "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# sql_run QUERY COMMAND...: COMMAND (a psql), its stdout passed on, its
# stderr too once it ends; when it fails, the failure of QUERY is recorded
# in $SQL_ERRORS.  Returns COMMAND's status.
sql_run() {
	local _sr_q=$1 _sr_err _sr_rc
	shift
	{ _sr_err=$("$@" 2>&1 >&3 3>&-); } 3>&1
	_sr_rc=$?
	[ -n "$_sr_err" ] && printf '%s\n' "$_sr_err" >&2
	[ "$_sr_rc" -eq 0 ] && return 0
	_sr_q=$(grep -m1 '[^[:space:]]' <<<"$_sr_q" | sed 's/^[[:space:]]*//' | cut -c1-120)
	_sr_err=$(grep -m1 -E 'ERROR|FATAL|error' <<<"$_sr_err" || head -1 <<<"$_sr_err")
	echo "sql failed (psql exit $_sr_rc): $_sr_q: ${_sr_err:-no message}" >>"$SQL_ERRORS"
	return "$_sr_rc"
}

# sql_errors: a fail for each query failure recorded since the last call
# (the same failure recorded N times, as a poll records it, once, with
# "(N times)").  Called by pass, fail and finish; only in the test's own
# shell, where the fail counts.
sql_errors() {
	[ -s "$SQL_ERRORS" ] && [ "$BASHPID" = "$$" ] || return 0
	local _se_l
	mv -f "$SQL_ERRORS" "$SQL_ERRORS.read" || return 0
	while IFS= read -r _se_l; do fail "$_se_l"; done < <(awk '!n[$0]++ { o[++k] = $0 }
		END { for (i = 1; i <= k; i++) print o[i] (n[o[i]] > 1 ? " (" n[o[i]] " times)" : "") }' "$SQL_ERRORS.read")
	rm -f "$SQL_ERRORS.read"
}

# has QUERY: true when QUERY (a count) is above 0, for wait_until.
has() { [ "$(sql "$1")" -gt 0 ]; }

# seq_scans TABLE: how many sequential scans TABLE has had (pg_stat_user_tables,
# this session's counters flushed first).
seq_scans() { sql "SELECT pg_stat_force_next_flush(); SELECT seq_scan FROM pg_stat_user_tables WHERE relname = '$1'" | tail -1; }

# sql_samples N SECONDS QUERY: QUERY run N times, SECONDS apart, in one psql
# session (each run its own statement: a fresh snapshot and clock); prints
# its rows, unaligned, with an empty line after each (the pause's).  A psql
# process per sample stretches the interval several times on a loaded box.
sql_samples() {
	local i
	for ((i = 0; i < $1; i++)); do echo "$3;"; echo "select pg_sleep($2);"; done |
		sql_run "$3" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1
}

# fresh_db NAME: create an empty database NAME and point PALISADE_PG at it.
fresh_db() {
	local name=$1
	PGOPTIONS="-c client_min_messages=warning" psql "$PALISADE_PG_ADMIN dbname=postgres" -XAtq -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" \
		-c "CREATE DATABASE \"$name\"" >/dev/null
	export PALISADE_PG="$PALISADE_PG_ADMIN dbname=$name"
}

# it_db [NAME [ARG...]]: a fresh database it_NAME (default NAME: the
# test's name without test_), migrated by this tree with `migrate ARG...`
# (its output discarded; --before-roll for a database that nodes of an
# older release run on too); returns the migration's status.
it_db() {
	local _id_n=${1:-$(basename "$0" .sh)}
	fresh_db "it_${_id_n#test_}"
	"$PAL" migrate "${@:2}" >/dev/null
}

# old_ranges FIRST: the ranges of triggers of an installation that had
# them from the start, contiguous: the migration's are replaced by a round
# with no keep (hourly ranges from M, this hour, on; nothing is in them
# yet), then [F, R2), [R2, R3) and [R3, M) are made by hand, D being
# today's midnight (UTC), R2 and R3 two days and one day before it, F
# FIRST: -infinity, or how long before D ("3 days").
old_ranges() {
	sql "select 1 from palisade_retention('1 hour', '1 day', '0', 1000)" >/dev/null
	D=$(sql "select date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'")
	R2=$(sql "select '$D'::timestamptz - interval '2 days'")
	R3=$(sql "select '$D'::timestamptz - interval '1 day'")
	M=$(sql "select min(range_from) from palisade_partitions")
	F=$1
	[ "$F" = -infinity ] || F=$(sql "select '$D'::timestamptz - interval '$1'")
	sql "select palisade_partition_create('$F', '$R2'), palisade_partition_create('$R2', '$R3'),
	            palisade_partition_create('$R3', '$M')" >/dev/null
}

# stale_partition JOB: JOB applied (an instant in 2099, so it never fires on
# its own) and its version activated as a controller would; PART: today's
# triggers partition, autovacuum off and analysed while empty, so that its
# statistics stay those of an empty partition (reltuples 0, as a new range
# has until autovacuum comes) whatever is inserted next.
stale_partition() {
	local f=$PALISADE_TEST_TMP/stale-$1.yaml
	printf 'jobs:\n  - {id: %s, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/s"}}\n' \
		"$1" >"$f"
	expect_exit "apply a job" 0 "$PAL" apply "$f"
	sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"
	PART=$(sql "SELECT triggers_part FROM palisade_partitions WHERE now() >= range_from AND now() < range_to")
	sql "ALTER TABLE $PART SET (autovacuum_enabled = off)"
	sql "VACUUM ANALYZE $PART"
}

# add_attempt TRIGGER COLUMNS VALUES: an attempt row of TRIGGER as an
# executor writes it (with the trigger's scheduled_at where the schema
# partitions attempts by it).
add_attempt() {
	sql "DO \$\$ BEGIN
	  IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = 'attempts' AND column_name = 'scheduled_at') THEN
	    INSERT INTO attempts (trigger_id, scheduled_at, $2) SELECT id, scheduled_at, $3 FROM triggers WHERE id = $1;
	  ELSE
	    INSERT INTO attempts (trigger_id, $2) SELECT id, $3 FROM triggers WHERE id = $1;
	  END IF; END \$\$" >/dev/null
}

# due_sql JOB N [FROM]: the INSERT of N due triggers of JOB, microseconds
# apart from FROM (default 0) microseconds after the later of today's
# midnight and a minute ago.
due_sql() {
	echo "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
	      SELECT '$1', 1, t, 0, 'schedule', 'default', 'default', t, 0
	      FROM (SELECT greatest(date_trunc('day', now()), now() - interval '1 minute')
	              + (${3:-0} + g) * interval '1 microsecond' AS t FROM generate_series(1, $2) g) x;"
}

finish() {
	sql_errors
	echo "  $T_CHECKS checks, $T_FAILS failed"
	[ "$T_FAILS" -eq 0 ]
}

# launch_sink BIN LOG PORT [args...]: the palisade-sink BIN listening on
# 127.0.0.1:PORT (empty: a free port) with its admin endpoint on a free
# port, output appended to LOG, waited for until its /healthz answers.  The
# start of cluster.sh's and sink_lib.sh's start_sink.  A port can still be
# taken between free_port (tests/ports.sh, which both source) and the bind:
# a sink that exits at once is started again on other ports (three tries;
# only the admin port changes when PORT is given); what a failed try wrote
# goes from LOG to LOG.failed, so that LOG holds only the sink that runs
# (tests read it as JSON lines).  Sets SINK_PID, SINK_PORT and
# SINK_ADMIN_PORT (those of the last try); returns 1 when no sink came up.
launch_sink() {
	local _ls_bin=$1 _ls_log=$2 _ls_fixed=$3 _ls_try _ls_size
	shift 3
	for _ls_try in 1 2 3; do
		if [ "$_ls_try" -gt 1 ]; then # the failed try's lines, set aside
			tail -c +"$((_ls_size + 1))" "$_ls_log" >>"$_ls_log.failed"
			truncate -s "$_ls_size" "$_ls_log"
		fi
		_ls_size=$(stat -c %s "$_ls_log" 2>/dev/null || echo 0)
		SINK_PORT=${_ls_fixed:-$(free_port)}
		SINK_ADMIN_PORT=$(free_port)
		"$_ls_bin" --listen "127.0.0.1:$SINK_PORT" \
			--admin "127.0.0.1:$SINK_ADMIN_PORT" "$@" >>"$_ls_log" 2>&1 &
		SINK_PID=$!
		for _ in $(seq 1 100); do
			curl -sf "http://127.0.0.1:$SINK_ADMIN_PORT/healthz" >/dev/null 2>&1 && return 0
			kill -0 "$SINK_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$SINK_PID" 2>/dev/null && break
		wait "$SINK_PID" 2>/dev/null
	done
	return 1
}
