#!/usr/bin/env bash
# tests/bench/run.sh [BIN] - `make bench`: every figure of the performance
# targets (docs/performance.md) next to its target and ratio, measured on
# this machine against PostgreSQL's and the HTTP stack's own ceilings in the
# same run, everything co-located: its own PostgreSQL 15 (fsync on) and
# ZooKeeper (ops/devcluster.sh on free ports under a temporary directory),
# the nodes, the sink, the load tools.
#
# Besides time, what a fire costs: bytes per fire in triggers and attempts,
# WAL per fire, the database server's CPU per fire with its statement
# profile (pg_stat_statements), bytes per effect in the sink
# (docs/performance.md, "What a fire costs").
#
# Prints one table row per figure (figure, value, unit, target, ratio, met)
# and writes .state/bench/latest.json: {figure: {value, unit, target, ratio,
# met, ...}}.  Asserts nothing and always exits 0.
#
#   BENCH_QUICK=1          a ~3-minute subset (shorter windows, fewer runs,
#                          20,000 jobs for the scale figures and the burst;
#                          no 3-node execution or 200,000-job handoffs)
#   BENCH_SOAK=1           also the soak (BENCH_SOAK_MINUTES, default 30, at
#                          BENCH_SOAK_RATE fires/s, default 5000); "not run"
#                          otherwise.  BENCH_SOAK_SINK=durable: the reference
#                          sink instead of the no-op one; BENCH_SOAK_SQL:
#                          statements run in its database before the node
#                          starts (A/B of a storage setting)
#   BENCH_EXEC_SQL="..."   statements run in the database of each run of
#                          sections planning and exec (the rates and the
#                          fire-cost run) before it: an A/B of a storage
#                          setting
#   BENCH_ONLY="a b"       run only these sections: ceilings planning exec
#                          lateness lease handoff apply scale burst
#                          burst_spread handoff200k soak; sink: the
#                          reference sink's part of ceilings alone
#   BENCH_BURST_SPREAD=600 the spread (seconds) of burst_spread: the same
#                          aligned burst with `spread` on every job; it runs
#                          for the spread plus the burst's wait, so it is
#                          "not run" when the time budget has less left
#   BENCH_PERF=FILE        perf record -g of the server's processes over the
#                          window of the 1-node execution run, into FILE
#                          (perf report -i FILE: where the server's CPU goes)
#   BENCH_PGSS=0           no pg_stat_statements in the server (it is loaded
#                          for the statement profile of the fire-cost run
#                          when Debian's postgresql-15 ships it)
#   BENCH_SESSION=4        ZooKeeper session timeout of every node, seconds
#   BENCH_NODE_CONF="..."  one more line of every node's palisade.yaml, e.g.
#                          'postgres: {pool_mode: transaction}' to measure the
#                          pooled store (unnamed claims and renewals) against
#                          PostgreSQL itself (with PGOPTIONS='-c jit=off' in
#                          place of the pooler's connect_query)
#   BENCH_BURST_SINKS="durable noop"
#                          the burst's runs: with the reference sink, with the
#                          no-op sink (both by default)
#   BENCH_SINK_ARGS="..."  extra arguments of every reference sink the run
#                          starts, e.g. '--group-max 1' to A/B group commit in
#                          the lateness and burst sections (tests/bench/lib.sh)
#   BENCH_SCALE_JOBS, BENCH_BIG_JOBS, BENCH_BURST_JOBS, BENCH_APPLY_BUDGET,
#   BENCH_HANDOFF_RUNS
#                          override the sizes and budgets chosen below
#
# Heavy figures have time budgets: each measures as many jobs or runs as fit
# and records how many in its entry ("n", "note"), so that the whole run
# stays under 15 minutes while parts of palisade are still slow.
set -o pipefail
cd "$(dirname "$0")/../.."
# bash reports every node the run kills with -9 ("line N: PID Killed ...")
# and children whose status it forgot: expected here, kept off the output.
exec 2> >(grep --line-buffered -v -e '^tests/bench/run.sh: line [0-9]*: *[0-9]* Killed' \
	-e 'wait_for: No record of process' >&2)
BIN=$(cd "${1:-bin}" && pwd)
PAL=$BIN/palisade
QUICK=${BENCH_QUICK:-0}
B_SESSION=${BENCH_SESSION:-4}
OUT_DIR=.state/bench
mkdir -p "$OUT_DIR"
OUT_JSON=$OUT_DIR/latest.json

source tests/ports.sh # free_port
B_STATE=$(mktemp -d /tmp/palisade-bench.XXXXXX)
chmod 755 "$B_STATE" # PostgreSQL runs as `postgres` when we are root
B_RESULTS=$B_STATE/results.jsonl
: >"$B_RESULTS"
export PALISADE_STATE=$B_STATE/cluster
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port) PALISADE_ZK_TICK_MS=200
source tests/bench/lib.sh

T_START=$(ms)
B_DEADLINE=$((T_START + ${BENCH_DEADLINE_S:-$([ "$QUICK" = 1 ] && echo 240 || echo 870)} * 1000))

if [ "$QUICK" = 1 ]; then
	# The subset: no 3-node execution, 200,000-job handoffs or soak; 20,000
	# jobs for the scale figures and the burst.
	CEIL_S=2 EXEC_N=10000 EXEC_LOW=10000 EXEC_W=5 EXEC3=0 PLAN_JOBS=1000 PLAN_LOOK=60 LAT_W=6 DRAIN_S=10 HO_RUNS=2
	APPLY_BUDGET=${BENCH_APPLY_BUDGET:-4} APPLY1_BUDGET=3 APPLY_RUN_FILES=4 SCALE_JOBS=${BENCH_SCALE_JOBS:-20000} BURST_JOBS=${BENCH_BURST_JOBS:-20000}
	COLD_BUDGET=30 START_BUDGET=25 TICK_S=3 BURST_WAIT=25 BIG_JOBS=${BENCH_BIG_JOBS:-0}
else
	CEIL_S=5 EXEC_N=20000 EXEC_LOW=20000 EXEC_W=12 EXEC3=1 PLAN_JOBS=2000 PLAN_LOOK=120 LAT_W=20 DRAIN_S=40 HO_RUNS=5
	APPLY_BUDGET=${BENCH_APPLY_BUDGET:-40} APPLY1_BUDGET=20 APPLY_RUN_FILES=40 SCALE_JOBS=${BENCH_SCALE_JOBS:-1000000} BURST_JOBS=${BENCH_BURST_JOBS:-100000}
	COLD_BUDGET=90 START_BUDGET=120 TICK_S=10 BURST_WAIT=60 BIG_JOBS=${BENCH_BIG_JOBS:-200000}
fi
HO_RUNS=${BENCH_HANDOFF_RUNS:-$HO_RUNS}
SECTIONS=${BENCH_ONLY:-ceilings planning exec lateness lease handoff apply scale burst burst_spread handoff200k soak}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }

cleanup() {
	stop_all_nodes
	stop_sink
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$B_STATE"
}
# A node started with & is a copy of this shell until it execs palisade: a
# signal in that window would run these traps there.  Only the main shell
# reports and cleans up.
B_MAIN=$BASHPID
finish() {
	[ "$BASHPID" = "$B_MAIN" ] || exit 0
	echo
	echo "bench: $(nproc) cores, PostgreSQL 15 fsync on, ZooKeeper session ${B_SESSION} s;" \
		"wall time $((($(ms) - T_START) / 1000)) s$([ "$QUICK" = 1 ] && echo " (BENCH_QUICK=1)")"
	python3 tests/bench/report.py render "$B_RESULTS" "$OUT_JSON"
	rm -rf "$OUT_DIR/logs"
	cp -r "$B_STATE/logs" "$OUT_DIR/logs" 2>/dev/null
	echo "bench: wrote $OUT_JSON (node and sink logs of the run in $OUT_DIR/logs)"
	cleanup
}
trap finish EXIT
trap 'exit 0' INT TERM

if [ "${BENCH_PGSS:-1}" = 1 ] && [ -f /usr/lib/postgresql/15/lib/pg_stat_statements.so ]; then
	export PALISADE_PG_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
fi
eval "$(bash ops/devcluster.sh up 2>/dev/null)" || { say "dev cluster did not start"; exit 0; }
export PALISADE_PG_ADMIN="host=127.0.0.1 port=$PALISADE_PG_PORT user=palisade"
B_PG_BASE=$PALISADE_PG_ADMIN
# The postmaster, whose process tree is the server's CPU (pg_cpu_us).
B_PG_PID=$(head -1 "$(psql "$B_PG_BASE dbname=postgres" -XAtq -c "SHOW data_directory")/postmaster.pid")
say "PostgreSQL 15 on 127.0.0.1:$PALISADE_PG_PORT (fsync on), ZooKeeper on $PALISADE_ZK, $(nproc) cores, sections: $SECTIONS"
command -v wrk >/dev/null || bash ops/deps.sh --bench >/dev/null 2>&1 || true

# ---- ceilings -----------------------------------------------------------------------------
# Two shapes.  The same statement shapes as src/store/plan.c (planning
# insert) and the executor's claim (palisade_claim(): its UPDATE of the
# locked candidates and INSERT of the attempts) and complete
# (pal_store_commit_results), on scratch copies of triggers and attempts,
# partitioned like them, with every index, the storage parameters and the
# G7 edge check (tests/bench/ceiling.sql): what palisade's code adds.  And
# the minimal shape (tests/bench/minimal.sql, minimal_ceilings): what the
# tables add as well.
INS_CEIL= DB_CEIL= HTTP_CEIL= COMB_CEIL=
section_ceilings() {
	new_db ceil
	psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f tests/bench/ceiling.sql >/dev/null 2>&1 || {
		say "ceiling tables failed"; return; }
	local d=$B_STATE/pgbench
	mkdir -p "$d"
	# A schema with triggers.job_ref (041): the insert sets it, as the
	# planning insert does (one more int array); before 041 it has none.
	python3 - "$d/insert.sql" "$(sql "SELECT count(*) FROM pg_attribute WHERE attrelid = 'triggers'::regclass AND attname = 'job_ref'")" <<'PY'
import sys
n = 1000
arr = lambda xs: "'{" + ",".join(xs) + "}'"
jobs = arr("bench.job-%d" % i for i in range(1, n + 1))
ones, zeros = arr(["1"] * n), arr(["0"] * n)
ref = sys.argv[2] == "1"
refs = arr(str(i) for i in range(1, n + 1))
open(sys.argv[1], "w").write(
    "SELECT nextval('bench_tick') AS tick \\gset\n"
    "INSERT INTO bench_triggers (job_id, version, scheduled_at, partition, source, priority,"
    " due_at, shard, epoch, tenant, resource_group%s)"
    " SELECT u.j, u.v, to_timestamp(u.a), u.p, u.s, u.pr, to_timestamp(u.a), 0, 1, u.te, u.g%s"
    " FROM unnest(%s::text[], %s::int[], array_fill(:tick::bigint, ARRAY[%d]), %s::int[],"
    " %s::text[], %s::int[], %s::text[], %s::text[]%s) AS u(j, v, a, p, s, pr, te, g%s)"
    " ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING;\n"
    % (", job_ref" if ref else "", ", u.r" if ref else "", jobs, ones, n, zeros,
       arr(["schedule"] * n), zeros, arr(["default"] * n), arr(["default"] * n),
       (", %s::int[]" % refs) if ref else "", ", r" if ref else ""))
PY
	cat >"$d/claim.sql" <<'SQL'
WITH locked AS (SELECT t.id FROM bench_triggers t
   WHERE t.tenant = 'default' AND t.state IN ('pending', 'retry_wait', 'unknown')
   AND coalesce(t.next_attempt_at, t.due_at) <= clock_timestamp()
   ORDER BY coalesce(t.next_attempt_at, t.due_at) LIMIT 100 FOR UPDATE SKIP LOCKED),
 upd AS (UPDATE bench_triggers t SET state = 'running', fence = nextval('bench_fence'),
   lease_owner = 'bench-' || :client_id,
   lease_until = clock_timestamp() + 30000 * interval '1 millisecond',
   attempt_count = t.attempt_count + 1, updated_at = clock_timestamp()
   FROM locked l WHERE t.id = l.id RETURNING t.id, t.fence, t.scheduled_at),
 att AS (INSERT INTO bench_attempts (trigger_id, fence, node, scheduled_at)
   SELECT id, fence, 'bench-' || :client_id, scheduled_at FROM upd)
SELECT coalesce(array_agg(id)::text, '{}') AS ids, coalesce(array_agg(fence)::text, '{}') AS fences FROM upd \gset
WITH u AS (SELECT * FROM unnest(':ids'::bigint[], ':fences'::bigint[]) AS u(id, fence)),
 upd AS (UPDATE bench_triggers t SET state = 'succeeded', last_error_class = NULL,
   attempt_count = t.attempt_count, next_attempt_at = NULL, lease_owner = NULL,
   lease_until = NULL, finished_at = clock_timestamp(), updated_at = clock_timestamp()
   FROM u WHERE t.id = u.id AND t.fence = u.fence AND t.state IN ('running', 'pausing', 'cancelling')
   RETURNING t.id, t.fence, t.state, t.job_id),
 att AS (UPDATE bench_attempts a SET ended_at = clock_timestamp(), outcome = 'succeeded',
   error_class = NULL, http_status = 200, duration_ms = 1, idempotency_key = 'bench/' || u.id
   FROM u WHERE a.fence = u.fence)
SELECT count(*) FROM upd;
SQL
	tps() { pgbench -n -f "$1" -c "$2" -j "$2" -T "$CEIL_S" "$PALISADE_PG" 2>/dev/null |
		awk '/^tps/ {print int($3)}'; }
	sql "CREATE SEQUENCE bench_tick START 1700000000"
	local t
	t=$(tps "$d/insert.sql" 1)
	[ -n "$t" ] && INS_CEIL=$((t * 1000))
	record "ceiling: planning insert, 1000-row unnest ON CONFLICT, triggers' indexes" "${INS_CEIL:-null}" \
		rows/s null higher "pgbench 1 client ${CEIL_S} s"
	# Enough due rows for both claim runs, then the claim + complete pair.
	local seed=$((CEIL_S * 2 * 60000))
	sql "TRUNCATE bench_attempts, bench_triggers;
	     INSERT INTO bench_triggers (job_id, version, scheduled_at, partition, source, tenant,
	       resource_group, due_at, shard)
	     SELECT 'bench.job-' || (g % 1000), 1, now() - interval '1 day' + g * interval '1 ms', 0,
	       'schedule', 'default', 'default', now() - interval '1 day' + g * interval '1 ms', 0
	     FROM generate_series(1, $seed) g" && sql "VACUUM ANALYZE bench_triggers"
	local c2 c4
	c2=$(tps "$d/claim.sql" 2)
	c4=$(tps "$d/claim.sql" 4)
	c2=$((${c2:-0} * 100)) c4=$((${c4:-0} * 100))
	record "ceiling: DB, claim 100 + complete 100, 2 clients" "$c2" rows/s null higher \
		"pgbench ${CEIL_S} s; the claim UPDATE + attempt INSERT of palisade_claim(), the complete of pal_store_commit_results; G7 guard on"
	record "ceiling: DB, claim 100 + complete 100, 4 clients" "$c4" rows/s null higher \
		"pgbench ${CEIL_S} s, seeded $seed due rows"
	DB_CEIL=$((c2 > c4 ? c2 : c4))
	sql "DROP TABLE bench_attempts, bench_triggers"
	minimal_ceilings "$d"
	# HTTP: no-op POSTs with the protocol's headers, a unique key per request.
	if command -v wrk >/dev/null && bench_sink --noop; then
		local w
		w=$(wrk -t2 -c64 -d"${CEIL_S}s" -s tests/bench/post.lua "http://$SINK_ADDR/" 2>&1)
		HTTP_CEIL=$(awk '/^Requests\/sec/ {print int($2)}' <<<"$w")
		local bad
		bad=$(awk '/Non-2xx/ {print $NF}' <<<"$w")
		record "ceiling: HTTP no-op POST with protocol headers, 64 connections" "${HTTP_CEIL:-null}" \
			req/s null higher "wrk -t2 -c64 ${CEIL_S} s against palisade-sink --noop${bad:+; $bad non-2xx}"
		stop_sink
	else
		record "ceiling: HTTP no-op POST with protocol headers, 64 connections" null req/s null higher \
			"wrk missing (apt-get install wrk) or the sink did not start"
	fi
	if [ -n "$HTTP_CEIL" ] && [ "${DB_CEIL:-0}" -gt 0 ]; then
		COMB_CEIL=$(python3 -c "print(int(1 / (1 / $DB_CEIL + 1 / $HTTP_CEIL)))")
	fi
	record "ceiling: combined 1/(1/db + 1/http)" "${COMB_CEIL:-null}" /s null higher \
		"db = the better of 2 and 4 clients"
	if [ -n "$HTTP_CEIL" ] && [ "${MIN_DB_CEIL:-0}" -gt 0 ]; then
		MIN_COMB_CEIL=$(python3 -c "print(int(1 / (1 / $MIN_DB_CEIL + 1 / $HTTP_CEIL)))")
	fi
	record "ceiling, minimal shape: combined 1/(1/db + 1/http)" "${MIN_COMB_CEIL:-null}" /s null higher \
		"db = the minimal shape's claim + complete, 4 clients; http = the no-op POST above"
	want sink || section_sink
}

# The sink's part of the ceilings; BENCH_ONLY=sink runs it alone.
SINK_CEIL=
section_sink() {
	# The reference sink applying for real (its own database on the same
	# server): the bound of every figure measured at the sink (lateness,
	# the aligned burst).  Group commit (the default, many effects per
	# durable transaction) and --group-max 1 (one durable transaction per
	# effect) alternated, twice each, on a fresh database each; the row is
	# the better run of each.
	local one=0 grp=0 n_one=0 n_grp=0 r gm bytes= rels= walsplit= cpu= cpu1= group=
	if command -v wrk >/dev/null; then
		for r in 1 2; do
			for gm in 1 64; do
				sink_ceil_run "$gm" || continue
				say "sink ceiling, --group-max $gm: $SC_RPS req/s; CPU per effect (us): sink ${SC_CPU% *}, PostgreSQL ${SC_CPU#* }${SC_GROUP:+; mean group $SC_GROUP}"
				if [ "$gm" = 1 ]; then
					[ "$SC_RPS" -gt "$one" ] && one=$SC_RPS n_one=$SC_N cpu1=$SC_CPU
				else
					[ "$SC_RPS" -gt "$grp" ] && grp=$SC_RPS n_grp=$SC_N bytes=$SC_BYTES \
						rels=$SC_RELS walsplit=$SC_WAL cpu=$SC_CPU group=$SC_GROUP
				fi
			done
		done
	fi
	[ "$grp" -gt 0 ] && SINK_CEIL=$grp
	record "ceiling: reference sink, durable applies, 64 connections" "${SINK_CEIL:-null}" req/s null higher \
		"wrk -t2 -c64 ${CEIL_S} s against palisade-sink (group commit: --group-max 64, --group-wait-ms 2, 4 committers) with its database (fsync on), a new key per request; better of 2 runs alternated with --group-max 1; $n_grp effects stored; CPU per effect: sink ${cpu%% *} us, PostgreSQL ${cpu##* } us; mean group ${group:-?}" \
		applied="$n_grp" sink_cpu_us="${cpu:+${cpu%% *}}" pg_cpu_us="${cpu:+${cpu##* }}" group="${group:-null}"
	record "ceiling: reference sink, durable applies, one transaction per effect (--group-max 1)" \
		"$([ "$one" -gt 0 ] && echo "$one" || echo null)" req/s null higher \
		"the same with --group-max 1 (one durable transaction per effect, as before group commit); better of 2 runs; $n_one effects stored; CPU per effect: sink ${cpu1%% *} us, PostgreSQL ${cpu1##* } us" \
		applied="$n_one" sink_cpu_us="${cpu1:+${cpu1%% *}}" pg_cpu_us="${cpu1:+${cpu1##* }}"
	local tot= heap= idx= wal=
	[ -n "$bytes" ] && read -r tot heap idx wal <<<"$bytes"
	say "bytes per effect by relation: ${rels:-?}"
	say "WAL per effect by resource manager: ${walsplit:-?}"
	record "bytes per effect: the sink's tables with their indexes" "${tot:-null}" B 400 lower \
		"the sink's tables after the better group-commit run above ($n_grp effects, each a new key): heap ${heap:-?} B, indexes ${idx:-?} B; WAL ${wal:-?} B per effect" \
		heap="${heap:-null}" indexes="${idx:-null}" wal="${wal:-null}"
}

# minimal_ceilings DIR: the ceilings of the least a scheduler must write per
# fire (tests/bench/minimal.sql), measured beside the same-shape ones: a
# 1,000-row insert with ON CONFLICT DO NOTHING (planning's statement), and
# claim 100 (FOR UPDATE SKIP LOCKED) then complete 100 by the plan key with
# 4 clients (execution's database half).  Sets MIN_INS_CEIL, MIN_DB_CEIL.
MIN_INS_CEIL= MIN_DB_CEIL= MIN_COMB_CEIL=
minimal_ceilings() {
	local d=$1 t c4
	psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f tests/bench/minimal.sql >/dev/null 2>&1 || {
		say "minimal-shape tables failed"; return; }
	python3 - "$d/min-insert.sql" <<'PY'
import sys
n = 1000
open(sys.argv[1], "w").write(
    "SELECT nextval('min_tick') AS tick \\gset\n"
    "INSERT INTO min_triggers (job, instant, due_at)"
    " SELECT u.j, to_timestamp(:tick), to_timestamp(:tick)"
    " FROM unnest('{%s}'::int[]) AS u(j) ON CONFLICT DO NOTHING;\n"
    % ",".join(str(i) for i in range(1, n + 1)))
PY
	cat >"$d/min-claim.sql" <<'SQL'
WITH c AS (SELECT job, instant FROM min_triggers WHERE state = 0 AND due_at <= clock_timestamp()
   ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED),
 upd AS (UPDATE min_triggers t SET state = 1, token = nextval('min_token'),
   lease_until = clock_timestamp() + interval '30 s'
   FROM c WHERE t.job = c.job AND t.instant = c.instant RETURNING t.job, t.instant, t.token)
SELECT coalesce(array_agg(job)::text, '{}') AS jobs, coalesce(array_agg(instant)::text, '{}') AS instants,
 coalesce(array_agg(token)::text, '{}') AS tokens FROM upd \gset
UPDATE min_triggers t SET state = 2, lease_until = NULL
 FROM unnest(':jobs'::int[], ':instants'::timestamptz[], ':tokens'::bigint[]) AS u(job, instant, token)
 WHERE t.job = u.job AND t.instant = u.instant AND t.token = u.token AND t.state = 1;
SQL
	t=$(tps "$d/min-insert.sql" 1)
	[ -n "$t" ] && MIN_INS_CEIL=$((t * 1000))
	record "ceiling, minimal shape: planning insert, 1000 rows ON CONFLICT DO NOTHING" "${MIN_INS_CEIL:-null}" \
		rows/s null higher "pgbench 1 client ${CEIL_S} s; tests/bench/minimal.sql"
	local seed=$((CEIL_S * 80000))
	sql "TRUNCATE min_triggers;
	     INSERT INTO min_triggers (job, instant, due_at)
	     SELECT g % 1000, now() - interval '1 day' + g * interval '1 ms',
	       now() - interval '1 day' + g * interval '1 ms'
	     FROM generate_series(1, $seed) g" && sql "VACUUM ANALYZE min_triggers"
	c4=$(tps "$d/min-claim.sql" 4)
	[ -n "$c4" ] && MIN_DB_CEIL=$((c4 * 100))
	record "ceiling, minimal shape: DB, claim 100 + complete 100, 4 clients" "${MIN_DB_CEIL:-null}" \
		rows/s null higher "pgbench ${CEIL_S} s, seeded $seed due rows; SKIP LOCKED claim, complete by the plan key and token"
	minimal_cost "$d"
	sql "DROP TABLE min_triggers"
}

# minimal_cost DIR: what the minimal shape leaves behind per fire, measured
# as fire_cost_run measures palisade's tables: EXEC_N due rows planted with
# one INSERT into the emptied table after a CHECKPOINT, then claimed 100 at
# a time and completed, each claim and each completion a transaction of its
# own (one client); the table's heap and index growth, dead row versions
# included and before any VACUUM, and the server's WAL and CPU (every
# process of it, pg_cpu_us) over the run, per fire.  The least the job
# needs in bytes and database work, beside palisade's figures.
MIN_COST_B= MIN_COST_WAL= MIN_COST_CPU=
minimal_cost() {
	local d=$1 n=$EXEC_N s0 s1 lsn lsn1 i c0 c1
	sql "TRUNCATE min_triggers; CHECKPOINT" >/dev/null || return
	{
		for ((i = 0; i < n / 100; i++)); do
			echo "WITH c AS (SELECT job, instant FROM min_triggers WHERE state = 0 AND due_at <= clock_timestamp()
			   ORDER BY due_at LIMIT 100 FOR UPDATE SKIP LOCKED)
			 UPDATE min_triggers t SET state = 1, token = nextval('min_token'),
			   lease_until = clock_timestamp() + interval '30 s'
			 FROM c WHERE t.job = c.job AND t.instant = c.instant;"
			echo "UPDATE min_triggers SET state = 2, lease_until = NULL WHERE state = 1;"
		done
	} >"$d/min-cost.sql"
	s0=$(sql "SELECT pg_table_size('min_triggers') + pg_indexes_size('min_triggers')")
	lsn=$(sql "SELECT pg_current_wal_lsn()")
	c0=$(pg_cpu_us)
	sql "INSERT INTO min_triggers (job, instant, due_at)
	     SELECT g, date_trunc('second', now()), now() - interval '1 s' FROM generate_series(1, $n) g" >/dev/null &&
		psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f "$d/min-cost.sql" >/dev/null || return
	c1=$(pg_cpu_us)
	lsn1=$(sql "SELECT pg_current_wal_lsn()")
	s1=$(sql "SELECT pg_table_size('min_triggers') || ' ' || pg_indexes_size('min_triggers')")
	[ "$(sql "SELECT count(*) FROM min_triggers WHERE state = 2")" = "$n" ] || return
	read -r i s1 <<<"$s1"
	MIN_COST_B=$(((i + s1 - s0) / n))
	MIN_COST_WAL=$(($(sql "SELECT pg_wal_lsn_diff('$lsn1', '$lsn')::bigint") / n))
	record "ceiling, minimal shape: bytes per fire, heap and indexes" "$MIN_COST_B" B null lower \
		"$n due rows planted, claimed 100 at a time and completed (one client, a transaction each), what the table grew by, dead row versions included, before any VACUUM: heap $((i / n)) + indexes $((s1 / n)) (tests/bench/minimal.sql)"
	record "ceiling, minimal shape: WAL bytes per fire" "$MIN_COST_WAL" B null lower \
		"the same run, pg_current_wal_lsn from before the INSERT to the last completion"
	MIN_COST_CPU=$(((c1 - c0) / n))
	record "ceiling, minimal shape: database CPU per fire" "$MIN_COST_CPU" us null lower \
		"the same run, user + sys CPU of every process of the server (/proc/PID/stat of the postmaster and its children) from before the INSERT to the last completion"
}

# sink_cpu_us: CPU time (user + sys) the running sink has used, in us.
sink_cpu_us() {
	awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000000 / hz) }' "/proc/$SINK_PID/stat"
}
# sink_metric NAME: a sample of the running sink's /metrics (0 when absent).
sink_metric() {
	curl -s --max-time 5 "http://$SINK_ADMIN/metrics" | awk -v m="$1" '$1 == m { v = $2 } END { print v + 0 }'
}

# sink_ceil_run GROUP_MAX: wrk against a durable sink with --group-max
# GROUP_MAX on a fresh database; sets SC_RPS (req/s), SC_N (effects stored)
# and SC_BYTES ("total heap indexes wal": the sink's tables with their
# indexes and the server's WAL over the run, in bytes per stored effect;
# the run is the only writer on the server), SC_RELS (each table and index
# of the sink in bytes per effect, largest first, as the execution cost's
# breakdown), SC_WAL (the WAL by resource manager, per effect), SC_CPU
# ("SINK PG": CPU per stored effect over the wrk run, in us, of the
# sink's process and of the whole PostgreSQL server) and SC_GROUP (the
# mean group, from the sink's counters; empty with --group-max 1).
sink_ceil_run() {
	local w lsn lsn1 c0 c1 p0 p1 g0 g1 e0 e1
	SC_RPS= SC_N=0 SC_BYTES= SC_RELS= SC_WAL= SC_CPU= SC_GROUP=
	new_db sinkceil
	bench_sink --threads 64 --group-max "$1" || return 1
	lsn=$(sql "SELECT pg_current_wal_lsn()")
	c0=$(sink_cpu_us) p0=$(pg_cpu_us) g0=$(sink_metric palisade_sink_groups_total)
	e0=$(sink_metric palisade_sink_group_requests_total)
	w=$(wrk -t2 -c64 -d"${CEIL_S}s" -s tests/bench/post.lua "http://$SINK_ADDR/" 2>&1)
	c1=$(sink_cpu_us) p1=$(pg_cpu_us) g1=$(sink_metric palisade_sink_groups_total)
	e1=$(sink_metric palisade_sink_group_requests_total)
	stop_sink
	lsn1=$(sql "SELECT pg_current_wal_lsn()")
	SC_RPS=$(awk '/^Requests\/sec/ {print int($2)}' <<<"$w")
	SC_N=$(sql "SELECT count(*) FROM sink_effects")
	[ "${SC_N:-0}" -gt 0 ] && SC_CPU="$(((c1 - c0) / SC_N)) $(((p1 - p0) / SC_N))"
	[ "$((g1 - g0))" -gt 0 ] && SC_GROUP=$(((e1 - e0) / (g1 - g0)))
	[ "${SC_N:-0}" -gt 0 ] && SC_BYTES=$(sql "SELECT round(sum(pg_total_relation_size(c.oid)) / $SC_N),
	       round(sum(pg_relation_size(c.oid)) / $SC_N), round(sum(pg_indexes_size(c.oid)) / $SC_N),
	       round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn') / $SC_N)
	     FROM pg_class c WHERE c.relkind = 'r' AND c.relname LIKE 'sink\_%'
	       AND c.relname <> 'sink_schema_migrations'" | tr '|' ' ')
	[ "${SC_N:-0}" -gt 0 ] && SC_RELS=$(sql "SELECT string_agg(r.name || ' ' || r.b, ', ' ORDER BY r.b DESC, r.name)
	     FROM (SELECT c.relname AS name, round(pg_relation_size(c.oid) / $SC_N.0) AS b
		   FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') AND pg_relation_size(c.oid) > 0
		     AND (c.relname LIKE 'sink\_%' AND c.relname NOT LIKE 'sink\_schema\_%')) r") &&
		cost_wal_split "$lsn" "$lsn1" "$SC_N" effect && SC_WAL=$R_COST_WAL
	[ -n "$SC_RPS" ]
}

# ---- planning -----------------------------------------------------------------------------
section_planning() {
	new_db plan
	bench_exec_sql || return 1
	local conf=$B_STATE/plan.yaml
	node_conf "$conf" plan controller \
		"controller: {lookahead: ${PLAN_LOOK}s, overlap: 10s, misfire_threshold: $((PLAN_LOOK + 60))s}"
	{
		echo "jobs:"
		for i in $(seq 1 "$PLAN_JOBS"); do
			echo "  - {id: plan.job-$i, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:1/x\"}}"
		done
	} >"$B_STATE/plan-jobs.yaml"
	"$PAL" apply --config "$conf" "$B_STATE/plan-jobs.yaml" >/dev/null || { say "plan apply failed"; return; }
	local want=$((PLAN_JOBS * PLAN_LOOK * 9 / 10)) n=0 ta= na= tb nb lim
	CLUSTER_CONF=$conf start_node plan-c
	lim=$(($(ms) + 60000))
	while [ "$(ms)" -lt $lim ]; do
		n=$(metric_sum palisade_controller_triggers_planned_total plan-c)
		if [ -z "$ta" ] && [ "${n:-0}" -gt 0 ]; then ta=$(ms) na=$n; fi
		[ "${n:-0}" -ge "$want" ] && break
		sleep 0.1
	done
	tb=$(ms) nb=$n
	stop_node plan-c
	local rate=null
	[ -n "$ta" ] && [ "$tb" -gt "$ta" ] && [ "$nb" -gt "$na" ] && rate=$(((nb - na) * 1000 / (tb - ta)))
	local tgt=null
	[ -n "$INS_CEIL" ] && tgt=$((INS_CEIL * 8 / 10))
	record "planning, 1 controller" "$rate" rows/s "$tgt" higher \
		"$PLAN_JOBS every-second jobs, ${PLAN_LOOK} s lookahead, 16 shards; rows committed between the first and the ${want}th; target 80% of the insert ceiling" \
		n=$((nb - na))
	record "planning / insert ceiling, same shape" "$(ratio "$rate" "$INS_CEIL")" x 0.8 higher \
		"the insert on copies of palisade's triggers (tests/bench/ceiling.sql)"
	record "planning / insert ceiling, minimal shape" "$(ratio "$rate" "$MIN_INS_CEIL")" x 0.6 higher \
		"the insert into tests/bench/minimal.sql"
}

# ---- execution ----------------------------------------------------------------------------
EXEC1=
R_RATE= R_N= R_PLANTED=
# exec_setup DB: a fresh database bench_DB with the job bench.exec applied
# and active (a controller does this), the no-op sink started.
# plant N: N more due triggers of bench.exec, a microsecond apart from ten
# minutes ago (EX_PLANTED counts them).
EX_BASE= EX_PLANTED=0
exec_setup() {
	new_db "$1"
	bench_sink --noop || return 1
	cat >"$B_STATE/exec-job.yaml" <<YAML
jobs:
  - {id: bench.exec, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/bench"}}
YAML
	"$PAL" apply "$B_STATE/exec-job.yaml" >/dev/null || return 1
	sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0
	     WHERE job_id = 'bench.exec'" >/dev/null
	EX_BASE=$(($(date +%s) - 600)) EX_PLANTED=0
	bench_exec_sql || return 1
}
# BENCH_EXEC_SQL: statements run in the database of each run of sections
# planning and exec before it (an A/B of a storage setting, e.g. a
# fillfactor).
bench_exec_sql() {
	[ -z "${BENCH_EXEC_SQL:-}" ] || sql "$BENCH_EXEC_SQL" >/dev/null
}
# (With triggers.job_ref, 041, the rows carry it as the planning insert
# writes them.)
plant() {
	local c="" v=""
	[ "$(sql "SELECT count(*) FROM pg_attribute WHERE attrelid = 'triggers'::regclass AND attname = 'job_ref'")" = 1 ] &&
		c=", job_ref" v=", (SELECT ref FROM jobs WHERE job_id = 'bench.exec')"
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant,
	       resource_group, due_at, shard$c)
	     SELECT 'bench.exec', 1, t, 0, 'schedule', 'default', 'default', t, 0$v
	     FROM (SELECT to_timestamp($EX_BASE) + ($EX_PLANTED + g) * interval '1 microsecond' AS t
	           FROM generate_series(1, $1) g) x" >/dev/null
	EX_PLANTED=$((EX_PLANTED + $1))
}
exec_run() { # NODES -> R_RATE R_N
	local nodes=$1 conf=$B_STATE/exec.yaml ids=() i
	exec_setup "exec$nodes" || return 1
	# The backlog is kept between EXEC_LOW and EXEC_LOW + EXEC_N (a claim's
	# cost depends on it; a cluster that keeps up has a small one).
	refill() {
		[ "$(sql "SELECT count(*) FROM triggers WHERE state IN ('pending', 'retry_wait', 'unknown')")" -lt "$EXEC_LOW" ] &&
			plant "$EXEC_N"
	}
	plant $((EXEC_LOW + EXEC_N))
	sql "VACUUM ANALYZE triggers"
	node_conf "$conf" "exec$nodes" executor
	for i in $(seq 1 "$nodes"); do
		CLUSTER_CONF=$conf start_node "exec$nodes-$i"
		ids+=("exec$nodes-$i")
	done
	for i in "${ids[@]}"; do node_up "$i"; done
	# Past a warm-up (1,000 results or 20 s), count results for EXEC_W seconds.
	local n ta na tb nb lim=$(($(ms) + 20000)) m='palisade_executor_results_total{state="succeeded"}'
	while [ "$(ms)" -lt $lim ]; do
		n=$(metric_sum "$m" "${ids[@]}")
		[ "$n" -ge 1000 ] && break
		sleep 0.2
	done
	ta=$(ms) na=$(metric_sum "$m" "${ids[@]}")
	local perf=
	if [ -n "${BENCH_PERF:-}" ] && [ "$nodes" = 1 ]; then
		perf record -q -F 499 -g -o "$BENCH_PERF" -p "$(pgrep -P "$B_PG_PID" | paste -sd,)" \
			-- sleep "$EXEC_W" >/dev/null 2>&1 &
		perf=$!
	fi
	while [ $(($(ms) - ta)) -lt $((EXEC_W * 1000)) ]; do
		sleep 0.5
		refill
	done
	tb=$(ms) nb=$(metric_sum "$m" "${ids[@]}")
	[ -z "$perf" ] || wait "$perf"
	R_PLANTED=$EX_PLANTED
	for i in "${ids[@]}"; do stop_node "$i"; done
	stop_sink
	R_RATE= R_N=$((nb - na))
	[ "$tb" -gt "$ta" ] && [ "$nb" -gt "$na" ] && R_RATE=$(((nb - na) * 1000 / (tb - ta)))
}
# ratio A B: A / B to three places, or null when either is missing.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a == "" || b == "" || a == "null" || b == "null" || b + 0 == 0) print "null"; else printf "%.3f\n", a / b }'; }

# fire_cost_run N: what a fire leaves behind.  In a fresh database, N due
# triggers planted with one INSERT, then one executor with the no-op sink
# until all N succeeded (at most 120 s); sets R_COST to "fires wal th ti ah
# ai": the server's WAL from before the INSERT to the last result
# (pg_current_wal_lsn, the run being the only writer), and what the heap
# (pg_table_size) and the indexes of every partition of triggers and of
# attempts grew by over the run, as it left them, each in bytes per
# succeeded trigger, and the server's CPU over the same window (every
# process of it, pg_cpu_us) in microseconds per succeeded trigger, with
# the statement profile of the window (R_COST_STMTS).  WAL_BASELINE is that WAL per fire on the storage
# as it stood at schema 22 (436312e): 2,228 and 2,241 B with 10,000 fires
# (BENCH_QUICK=1), 2,230 B with 20,000, three runs; the target is half.
WAL_BASELINE=2230
R_COST= R_COST_RELS= R_COST_ROWS= R_COST_WAL= R_COST_STMTS=
cost_sizes() { # -> "triggers_heap triggers_indexes attempts_heap attempts_indexes responses_heap responses_indexes", bytes
	sql "WITH p AS (SELECT relid, 'triggers' AS parent FROM pg_partition_tree('triggers') WHERE isleaf
	       UNION ALL SELECT relid, 'attempts' FROM pg_partition_tree('attempts') WHERE isleaf
	       UNION ALL SELECT relid, 'attempt_responses' FROM pg_partition_tree('attempt_responses') WHERE isleaf)
	     SELECT sum(pg_table_size(relid)) FILTER (WHERE parent = 'triggers'),
	       sum(pg_indexes_size(relid)) FILTER (WHERE parent = 'triggers'),
	       sum(pg_table_size(relid)) FILTER (WHERE parent = 'attempts'),
	       sum(pg_indexes_size(relid)) FILTER (WHERE parent = 'attempts'),
	       coalesce(sum(pg_table_size(relid)) FILTER (WHERE parent = 'attempt_responses'), 0),
	       coalesce(sum(pg_indexes_size(relid)) FILTER (WHERE parent = 'attempt_responses'), 0) FROM p" | tr '|' ' '
}
# cost_rels: bytes of every relation of triggers, attempts and
# attempt_responses (what attempts kept of the answers), summed over
# their partitions: "name bytes" lines, the heap as triggers/attempts
# (pg_table_size) and each index by its name on the parent (a partition's
# index is named after its partition: the parent's name is the one read).
cost_rels() {
	sql "WITH p AS (SELECT relid, 'triggers' AS parent FROM pg_partition_tree('triggers') WHERE isleaf
	       UNION ALL SELECT relid, 'attempts' FROM pg_partition_tree('attempts') WHERE isleaf
	       UNION ALL SELECT relid, 'attempt_responses' FROM pg_partition_tree('attempt_responses') WHERE isleaf)
	     SELECT p.parent, sum(pg_table_size(p.relid)) FROM p GROUP BY 1
	     UNION ALL
	     SELECT coalesce(pi.relname, ci.relname), sum(pg_relation_size(i.indexrelid))
	     FROM p JOIN pg_index i ON i.indrelid = p.relid JOIN pg_class ci ON ci.oid = i.indexrelid
	     LEFT JOIN pg_inherits h ON h.inhrelid = i.indexrelid
	     LEFT JOIN pg_class pi ON pi.oid = h.inhparent
	     GROUP BY 1 ORDER BY 1" | tr '|' ' '
}
# cost_wal_split FROM TO N [WHAT]: the WAL between two LSNs by resource
# manager (pg_waldump --stats: heap, heap2 (HOT and pruning), btree,
# transaction commits, full-page images), bytes per WHAT (fire) of N, into
# R_COST_WAL.
cost_wal_split() {
	local dd wd
	dd=$(sql "SHOW data_directory") wd=$(command -v pg_waldump || echo /usr/lib/postgresql/15/bin/pg_waldump)
	R_COST_WAL=$("$wd" --stats -p "$dd/pg_wal" -s "$1" -e "$2" 2>/dev/null |
		awk -v n="$3" '$2 ~ /^[0-9]+$/ && $1 != "Total" {
		    gsub(/[()]/, " "); split($0, f, " +")
		    if (f[2] + 0 > 0) printf "%s %d (FPI %d)\n", f[1], f[8] / n, f[6] / n }' |
		sort -k2,2nr | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $0 }')
	[ -n "${4:-}" ] || say "WAL per fire by resource manager: ${R_COST_WAL:-(pg_waldump unavailable)}"
}
fire_cost_run() {
	local n=$1 conf=$B_STATE/cost.yaml lsn lsn1 lim got=0 m='palisade_executor_results_total{state="succeeded"}'
	local s0 s1 a b c d e f g h i j k l c0 c1
	R_COST= R_COST_STMTS=
	exec_setup cost || return 1
	sql "CHECKPOINT" >/dev/null
	s0=$(cost_sizes)
	cost_rels >"$B_STATE/cost-rels0"
	lsn=$(sql "SELECT pg_current_wal_lsn()")
	stmt_reset
	c0=$(pg_cpu_us)
	plant "$n"
	node_conf "$conf" cost executor
	CLUSTER_CONF=$conf start_node cost-1
	lim=$(($(ms) + 120000))
	while [ "$(ms)" -lt $lim ]; do
		got=$(metric_sum "$m" cost-1)
		[ "$got" -ge "$n" ] && break
		sleep 0.2
	done
	c1=$(pg_cpu_us)
	lsn1=$(sql "SELECT pg_current_wal_lsn()")
	cost_wal_split "$lsn" "$lsn1" "$n"
	stop_node cost-1
	stop_sink
	got=$(sql "SELECT count(*) FROM triggers WHERE state = 'succeeded'")
	[ "${got:-0}" -gt 0 ] || return 1
	s1=$(cost_sizes)
	# The breakdown per relation, bytes per fire, largest first.
	R_COST_RELS=$(cost_rels | awk -v n="$got" 'NR == FNR { b[$1] = $2; next }
	    { printf "%s %d\n", $1, ($2 - b[$1]) / n }' "$B_STATE/cost-rels0" - |
		sort -k2,2nr | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')
	say "bytes per fire by relation: $R_COST_RELS"
	# Row widths as left (the last version of each row) and the updates
	# that stayed HOT (no new index entry), from the statistics collector.
	R_COST_ROWS=$(sql "SELECT 'triggers row ' || (SELECT round(avg(pg_column_size(t.*))) FROM triggers t)
	    || ' B, attempts row ' || coalesce((SELECT round(avg(pg_column_size(a.*))) FROM attempts a)::text, '-')
	    || ' B; updates (HOT): ' || string_agg(s.parent || ' ' || s.upd || ' (' || s.hot || ')', ', ')
	  FROM (SELECT CASE WHEN st.relname LIKE 'triggers%' THEN 'triggers' ELSE 'attempts' END AS parent,
	      sum(st.n_tup_upd) AS upd, sum(st.n_tup_hot_upd) AS hot
	    FROM pg_stat_user_tables st
	    WHERE st.relname LIKE 'triggers_p%' OR st.relname LIKE 'attempts_p%' GROUP BY 1) s")
	say "rows: $R_COST_ROWS"
	read -r a b c d i j <<<"$s0"
	read -r e f g h k l <<<"$s1"
	R_COST="$got $(($(sql "SELECT pg_wal_lsn_diff('$lsn1', '$lsn')::bigint") / got))"
	R_COST+=" $(((e - a) / got)) $(((f - b) / got)) $(((g - c) / got)) $(((h - d) / got))"
	R_COST+=" $(((k - i) / got)) $(((l - j) / got)) $(((c1 - c0) / got))"
	# Where the server's time went: the statements of the window, most
	# time first (the profile that says what to cut).
	R_COST_STMTS=$(stmt_top "$got" 12)
	[ -z "$R_COST_STMTS" ] || say "statements by time, per fire:"$'\n'"$R_COST_STMTS"
}
section_exec_cost() {
	local fires wal th ti ah ai rh ri cpu tot
	fire_cost_run "$EXEC_N"
	[ -n "$R_COST" ] && read -r fires wal th ti ah ai rh ri cpu <<<"$R_COST" && tot=$((th + ti + ah + ai))
	record "bytes per fire: triggers and attempts with their indexes" "${tot:-null}" B 300 lower \
		"$EXEC_N due triggers run to completion by one executor (no-op sink), what the tables grew by, as it left them (dead row versions included, before any VACUUM): triggers heap ${th:-?} + indexes ${ti:-?}, attempts heap ${ah:-?} + indexes ${ai:-?}" \
		fires="${fires:-null}" triggers_heap="${th:-null}" triggers_indexes="${ti:-null}" \
		attempts_heap="${ah:-null}" attempts_indexes="${ai:-null}" by_relation="${R_COST_RELS:-}" rows="${R_COST_ROWS:-}"
	record "bytes per fire / minimal shape" "$(ratio "${tot:-}" "$MIN_COST_B")" x null lower \
		"the row above over the minimal shape's bytes per fire of the same run (section ceilings; null when it did not run)"
	# What the attempts kept of the no-op sink's answer ({"applied":true},
	# the default keep_body): apart, so that the row above keeps its meaning.
	record "bytes per fire: kept answers (attempt_responses) with their index" \
		"$([ -n "$rh" ] && echo $((rh + ri)) || echo null)" B null lower \
		"the same run: what attempt_responses grew by per fire (heap ${rh:-?} + index ${ri:-?}); the no-op sink answers a 16-byte body, which the default target.keep_body keeps" \
		responses_heap="${rh:-null}" responses_indexes="${ri:-null}"
	local wt=null
	[ -n "$WAL_BASELINE" ] && wt=$((WAL_BASELINE / 2))
	record "WAL bytes per fire" "${wal:-null}" B "$wt" lower \
		"pg_current_wal_lsn from before the INSERT of the same run to its last result, divided by its fires (the INSERT, claims, attempts, results, autovacuum in the window, full-page images after a CHECKPOINT); target half of ${WAL_BASELINE:-the baseline (not recorded)}" \
		baseline="${WAL_BASELINE:-null}" by_rmgr="${R_COST_WAL:-}"
	record "WAL bytes per fire / minimal shape" "$(ratio "${wal:-}" "$MIN_COST_WAL")" x null lower \
		"the row above over the minimal shape's WAL per fire of the same run (section ceilings; null when it did not run)"
	record "database CPU per fire" "${cpu:-null}" us null lower \
		"the same run and window: user + sys CPU of every process of the server (/proc/PID/stat of the postmaster, with what it reaped, and of its children: backends, autovacuum, walwriter, checkpointer), divided by its fires; the statements behind it in statements" \
		statements="$(tr '\n' ';' <<<"${R_COST_STMTS:-}")"
	record "database CPU per fire / minimal shape" "$(ratio "${cpu:-}" "$MIN_COST_CPU")" x null lower \
		"the row above over the minimal shape's database CPU per fire of the same run (section ceilings; null when it did not run)"
}
section_exec() {
	local tgt=10000 note="target max(10000, 50% of the combined ceiling)"
	[ -n "$COMB_CEIL" ] && [ $((COMB_CEIL / 2)) -gt $tgt ] && tgt=$((COMB_CEIL / 2))
	[ -z "$COMB_CEIL" ] && note="target 10000 (no combined ceiling measured)"
	exec_run 1
	EXEC1=$R_RATE
	record "execution, 1 node, no-op sink" "${EXEC1:-null}" triggers/s "$tgt" higher \
		"claimed, called over HTTP, committed; backlog kept at $EXEC_LOW-$((EXEC_LOW + EXEC_N)) due triggers ($R_PLANTED planted), ${EXEC_W} s after a warm-up; $note" \
		n="$R_N"
	record "execution / combined ceiling, same shape" "$(ratio "$EXEC1" "$COMB_CEIL")" x null higher \
		"palisade's tables copied (tests/bench/ceiling.sql): what the C code and the protocol add"
	record "execution / combined ceiling, minimal shape" "$(ratio "$EXEC1" "$MIN_COMB_CEIL")" x 0.6 higher \
		"tests/bench/minimal.sql: what the tables add as well"
	settle
	section_exec_cost
	if [ "$EXEC3" != 1 ] || [ "$(left_s)" -lt 60 ]; then
		not_run "execution, 3 executor nodes on the same database" triggers/s null higher \
			"not run ($([ "$EXEC3" != 1 ] && echo BENCH_QUICK=1 || echo "time budget"))"
		return
	fi
	# The 1-node run leaves a database with ~200,000 updated triggers for
	# autovacuum and a checkpoint's worth of WAL: settled first, as between
	# sections, or the 3-node figure pays for them (0.60-0.77 of its target
	# without it; docs/performance.md, "Method", on settling).
	settle
	exec_run 3
	local t3=null
	[ -n "$EXEC1" ] && t3=$((EXEC1 * 95 / 100))
	record "execution, 3 executor nodes on the same database" "${R_RATE:-null}" triggers/s "$t3" higher \
		"target 95% of the 1-node figure" n="$R_N"
}

# ---- fire lateness ------------------------------------------------------------------------
# One node (controller + executor, default settings) and the sink with its
# database; lateness = sink_effects.applied_at - the scheduled instant.
R_LAT=
lateness_run() {
	local label=$1 jobs=$2 w=$3 conf=$B_STATE/lat.yaml t0 t1 start end
	new_db "$label"
	bench_sink --threads 64 || return 1
	node_conf "$conf" "$label" "controller, executor"
	# The jobs fire from 2 s before the window (schedule.start: a short
	# warm-up, no backlog of earlier instants ahead of the window) to its
	# end (schedule.end), so that what is still late can drain afterwards
	# without new load.
	t0=$(($(date +%s) + 12))
	t1=$((t0 + w))
	start=$(date -u -d "@$((t0 - 2))" +%Y-%m-%dT%H:%M:%SZ)
	end=$(date -u -d "@$t1" +%Y-%m-%dT%H:%M:%SZ)
	{
		echo "jobs:"
		for i in $(seq 1 "$jobs"); do
			echo "  - {id: $label.job-$i, schedule: {cron: \"* * * * * ?\", start: \"$start\", end: \"$end\"}, misfire: skip, target: {url: \"http://$SINK_ADDR/effects/$label\", timeout: 5s}}"
		done
	} >"$B_STATE/$label-jobs.yaml"
	"$PAL" apply --config "$conf" "$B_STATE/$label-jobs.yaml" >/dev/null || return 1
	CLUSTER_CONF=$conf start_node "$label-n"
	node_up "$label-n"
	while [ "$(date +%s)" -lt $((t1 + 2)) ]; do sleep 0.5; done
	# Drain: until every instant of the window has its effect, or nothing
	# new arrived for 5 s since the first, or DRAIN_S passed.
	local got=0 prev=-1 still=0 lim=$(($(date +%s) + DRAIN_S))
	while [ "$(date +%s)" -lt $lim ]; do
		got=$(sql "SELECT count(*) FROM sink_effects WHERE path = '/effects/$label'
		           AND scheduled_at >= to_timestamp($t0) AND scheduled_at < to_timestamp($t1)")
		[ "$got" -ge $((jobs * w)) ] && break
		if [ "$got" = "$prev" ] && [ "$got" -gt 0 ]; then still=$((still + 1)); else still=0; fi
		[ $still -ge 5 ] && break
		prev=$got
		sleep 1
	done
	# The executor's own share: its histogram of call start - instant
	# (palisade_executor_fire_lateness_seconds), as bucket bounds.
	R_START=$(curl -s --max-time 2 "http://${NODE_ADMIN[$label-n]}/metrics" | python3 -c '
import sys
b = []
for l in sys.stdin:
    if l.startswith("palisade_executor_fire_lateness_seconds_bucket"):
        le = l.split("le=\"")[1].split("\"")[0]
        b.append((float("inf") if le == "+Inf" else float(le), float(l.split()[-1])))
if not b or b[-1][1] == 0:
    print("?"); sys.exit()
def q(p):
    for le, c in b:
        if c >= p * b[-1][1]:
            return "<= %g ms" % (le * 1000) if le != float("inf") else "> 60 s"
print("p50 %s, p99 %s" % (q(0.5), q(0.99)))')
	stop_node "$label-n"
	local s
	s=$(lateness_stats "$label" "$t0" "$t1")
	got=${s%% *}
	stop_sink
	R_LAT="$s $((jobs * w - got))"
}
section_lateness() {
	local n p50 p99 mx miss
	R_LAT=
	lateness_run lat20 20 "$LAT_W"
	if [ -n "$R_LAT" ]; then
		read -r n p50 p99 mx miss <<<"$R_LAT"
		record "fire lateness p99, 20 jobs every second" "$( [ "$n" = 0 ] && echo null || echo "$p99")" ms 10 lower \
			"effect applied (sink) - scheduled instant, ${LAT_W} s of instants, 1 node (controller + executor, defaults); p50 $p50 ms, max $mx ms, $miss missing; call start - instant (executor histogram): ${R_START:-?}" \
			n="$n" p50="$p50" max="$mx" missing="$miss"
	fi
	[ "$(left_s)" -gt 60 ] || return
	R_LAT=
	lateness_run lat1k 1000 "$LAT_W"
	if [ -n "$R_LAT" ]; then
		read -r n p50 p99 mx miss <<<"$R_LAT"
		record "fire lateness p99, 1,000 jobs every second" "$( [ "$n" = 0 ] && echo null || echo "$p99")" ms 150 lower \
			"${LAT_W} s of instants; p50 $p50 ms, max $mx ms; call start - instant (executor histogram): ${R_START:-?}" n="$n" p50="$p50" max="$mx"
		record "fire lateness missing, 1,000 jobs every second" "$miss" instants 0 lower \
			"instants of the window without an applied effect once drained (nothing new for 5 s, at most ${DRAIN_S} s after the window)" expected=$((1000 * LAT_W))
	fi
}

# ---- lease takeover -----------------------------------------------------------------------
# Executor A holds 20 calls to a sink that delays every commit 60 s; B runs
# beside it with nothing to claim.  kill -9 of A; the figure is kill -> the
# last of A's triggers claimed again by B (attempts.claimed_at, the
# database clock, on the same host).
section_lease() {
	local lease=4 conf=$B_STATE/lease.yaml k=20
	new_db lease
	bench_sink --delay-ms 60000 || return
	cat >"$B_STATE/lease-job.yaml" <<YAML
jobs:
  - {id: bench.lease, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/lease", timeout: 90s}}
YAML
	"$PAL" apply "$B_STATE/lease-job.yaml" >/dev/null || return
	sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0
	     WHERE job_id = 'bench.lease';
	     INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant,
	       resource_group, due_at, shard)
	     SELECT 'bench.lease', 1, t, 0, 'schedule', 'default', 'default', t, 0
	     FROM (SELECT date_trunc('second', now()) - g * interval '1 s' AS t
	           FROM generate_series(1, $k) g) x" >/dev/null
	node_conf "$conf" lease executor "executor: {lease: ${lease}s, heartbeat: $((lease / 2))s}"
	CLUSTER_CONF=$conf start_node lease-a
	local lim=$(($(ms) + 20000))
	while [ "$(ms)" -lt $lim ]; do
		[ "$(sql "SELECT count(*) FROM triggers WHERE state = 'running' AND lease_owner = 'lease-a'")" = $k ] && break
		sleep 0.2
	done
	CLUSTER_CONF=$conf start_node lease-b
	node_up lease-b
	sleep 2 # B has made its first (empty) claims
	local t0
	t0=$(ms)
	kill9_node lease-a
	lim=$(($(ms) + lease * 1000 + 30000))
	while [ "$(ms)" -lt $lim ]; do
		[ "$(sql "SELECT count(DISTINCT trigger_id) FROM attempt_ledger WHERE node = 'lease-b'")" -ge $k ] && break
		sleep 0.1
	done
	local v
	v=$(sql "SELECT CASE WHEN count(DISTINCT trigger_id) >= $k THEN
	           round(extract(epoch FROM max(claimed_at)) * 1000 - $t0) END
	         FROM attempt_ledger WHERE node = 'lease-b'")
	stop_node lease-b
	stop_sink
	record "lease takeover after kill -9 of an executor" "${v:-null}" ms $((lease * 1000 + 1000)) lower \
		"kill -9 -> the last of its $k running triggers claimed by the other executor; lease ${lease} s, heartbeat $((lease / 2)) s"
}

# ---- handoff and failover ----------------------------------------------------------------
# Two controller nodes X-a and X-b sharing the 16 shards.  One run: the
# victim (alternating) is stopped with SIGTERM (drain: graceful handoff) or
# kill -9 (crash failover); the figure is the stop instant -> the latest
# controller.shard_acquired line (claimed in PostgreSQL with the new epoch,
# its jobs loaded; the first planning tick follows in the same pass) of the
# survivor for the shards the victim led.  Then the victim restarts and the
# shards are rebalanced before the next run.
balanced() { # A B SECS
	local lim=$(($(ms) + $3 * 1000)) c
	while [ "$(ms)" -lt $lim ]; do
		c=$(sql "SELECT count(*) FILTER (WHERE leader = '$1') >= 6 AND count(*) FILTER (WHERE leader = '$2') >= 6
		         AND count(*) FILTER (WHERE leader IN ('$1', '$2')) = 16 FROM shards")
		[ "$c" = t ] && return 0
		sleep 0.2
	done
	return 1
}
HO_D=
one_handoff() { # KIND VICTIM SURVIVOR CONF -> HO_D (ms, or empty)
	local kind=$1 v=$2 s=$3 conf=$4 shards n t0 lim pid=${NODE_PID[$2]}
	shards=$(sql "SELECT string_agg(shard_id::text, ',') FROM shards WHERE leader = '$v'")
	n=$(sql "SELECT count(*) FROM shards WHERE leader = '$v'")
	t0=$(ms)
	if [ "$kind" = graceful ]; then kill -TERM "$pid"; else kill -9 "$pid"; fi
	lim=$(($(ms) + (B_SESSION + 60) * 1000))
	while [ "$(ms)" -lt $lim ]; do
		[ "$(sql "SELECT count(*) FROM shards WHERE leader = '$s' AND shard_id IN ($shards)")" = "$n" ] && break
		sleep 0.05
	done
	# The log line follows the claim by the job load (longer with many jobs).
	HO_D=
	lim=$(($(ms) + 30000))
	while [ -z "$HO_D" ] && [ "$(ms)" -lt $lim ]; do
		sleep 0.2
		HO_D=$(python3 tests/bench/report.py acquired "$NODE_DIR/$s.log" "$t0" "$shards")
	done
	reap "$pid" 30
	unset "NODE_PID[$v]"
	CLUSTER_CONF=$conf start_node "$v"
}
HO_G=() HO_C=()
handoff_runs() { # LABEL CONF RUNS BUDGET_S
	local a=$1-a b=$1-b conf=$2 runs=$3 end=$(($(ms) + $4 * 1000)) r v s
	HO_G=() HO_C=()
	for r in $(seq 1 "$runs"); do
		[ "$(ms)" -lt $end ] || break
		if [ $((r % 2)) = 1 ]; then v=$a s=$b; else v=$b s=$a; fi
		balanced "$a" "$b" 90 || { say "handoff $1: not balanced"; break; }
		sleep 1
		one_handoff graceful "$v" "$s" "$conf"
		[ -n "$HO_D" ] && HO_G+=("$HO_D")
		[ "$(ms)" -lt $end ] || break
		balanced "$a" "$b" 90 || { say "handoff $1: not balanced"; break; }
		sleep 1
		one_handoff crash "$v" "$s" "$conf"
		[ -n "$HO_D" ] && HO_C+=("$HO_D")
	done
}
record_handoffs() { # SUFFIX NOTE
	local sfx=$1 note=$2 st n p50 mx
	st=$(printf '%s\n' "${HO_G[@]}" | python3 tests/bench/report.py stats)
	read -r n p50 _ mx <<<"$st"
	[ "$n" = 0 ] && p50=null mx=null
	record "graceful handoff p50$sfx" "$p50" ms 500 lower "$note; $n runs" n="$n"
	record "graceful handoff max$sfx" "$mx" ms 500 lower "SIGTERM (drain) -> survivor leads all the node's shards" n="$n"
	st=$(printf '%s\n' "${HO_C[@]}" | python3 tests/bench/report.py stats)
	read -r n p50 _ mx <<<"$st"
	[ "$n" = 0 ] && p50=null mx=null
	record "crash failover p50$sfx" "$p50" ms $((B_SESSION * 1000 + 1000)) lower \
		"kill -9 -> survivor leads all the node's shards; session ${B_SESSION} s; $n runs" n="$n"
	record "crash failover max$sfx" "$mx" ms $((B_SESSION * 1000 + 1000)) lower "target session timeout + 1 s" n="$n"
}
section_handoff() {
	new_db ho
	local conf=$B_STATE/ho.yaml
	node_conf "$conf" ho controller
	{
		echo "jobs:"
		for i in $(seq 1 1000); do
			echo "  - {id: ho.job-$i, schedule: {cron: \"$((i % 60)) * * * * ?\"}, misfire: skip, target: {url: \"http://127.0.0.1:1/x\"}}"
		done
	} >"$B_STATE/ho-jobs.yaml"
	"$PAL" apply --config "$conf" "$B_STATE/ho-jobs.yaml" >/dev/null || return
	CLUSTER_CONF=$conf start_node ho-a
	CLUSTER_CONF=$conf start_node ho-b
	handoff_runs ho "$conf" "$HO_RUNS" $((HO_RUNS * 25))
	stop_node ho-a
	stop_node ho-b
	record_handoffs "" "1,000 jobs (one instant each a minute)"
}

# ---- 1,000,000 jobs -----------------------------------------------------------------------
# apply: jobs of the bench's shape (spread crons, six zones) in files of
# 5,000 new jobs, written before each run (not timed), in two ways:
#   - the figure with the target: the way docs/jobs.md gives for a large
#     set, many files in one `palisade apply` (one transaction): runs of
#     APPLY_RUN_FILES files until APPLY_BUDGET seconds of applying or
#     1,000,000 jobs;
#   - one file per `palisade apply`, as a stream of small applies: each run
#     pays the process start, its connection and its commit's flush (about
#     a third of a 5,000-job run here); for APPLY1_BUDGET seconds, in a
#     database of its own.
apply_files() { # DIR FROM COUNT: DIR/jobs-N.yaml for N in FROM..FROM+COUNT-1,
	# each with the jobs apply.job-(N*5000+1)..(N*5000+5000)
	python3 - "$1" "$2" "$3" <<'PY'
import sys
d, lo, cnt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
zones = ["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Sao_Paulo"]
for f in range(lo, lo + cnt):
    with open("%s/jobs-%d.yaml" % (d, f), "w") as o:
        o.write("jobs:\n")
        for i in range(f * 5000 + 1, f * 5000 + 5001):
            o.write('  - {id: apply.job-%d, schedule: {cron: "0 %d %d %d 6 ?", timezone: %s}, '
                    'target: {url: "http://127.0.0.1:1/x"}}\n'
                    % (i, i % 60, (i // 60) % 24, 1 + (i // 1440) % 28, zones[i % 6]))
PY
}
# apply_runs FILES_PER_RUN BUDGET_S: prints "jobs ms rc ms-per-run..."
apply_runs() {
	local per=$1 budget=$2 f=0 k n=0 spent=0 t0 rc=0 runs=() files
	rm -rf "$B_STATE/apply" && mkdir -p "$B_STATE/apply"
	while [ $spent -lt $((budget * 1000)) ] && [ $n -lt 1000000 ]; do
		apply_files "$B_STATE/apply" "$f" "$per" || { rc=1; break; }
		files=()
		for k in $(seq 1 "$per"); do
			files+=("$B_STATE/apply/jobs-$f.yaml")
			f=$((f + 1))
		done
		t0=$(ms)
		"$PAL" apply "${files[@]}" >/dev/null || { rc=1; break; }
		runs+=($(($(ms) - t0)))
		spent=$((spent + ${runs[-1]}))
		n=$((n + per * 5000))
		rm -f "${files[@]}"
	done
	echo "$n $spent $rc ${runs[*]}"
}
section_apply() {
	local n spent rc runs rate=null ck0 ck1 shape=""
	new_db apply
	ck0=$(sql "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
	read -r n spent rc runs <<<"$(apply_runs "$APPLY_RUN_FILES" "$APPLY_BUDGET")"
	ck1=$(sql "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")
	[ "$n" -gt 0 ] && rate=$((n * 1000 / spent))
	# Whether the rate falls as the tables grow: each run's own rate.
	local r per_run=""
	for r in $runs; do per_run+="${per_run:+, }$((APPLY_RUN_FILES * 5000 * 1000 / r))"; done
	record "1,000,000 jobs: palisade apply rate" "$rate" jobs/s 20000 higher \
		"$n jobs applied, $APPLY_RUN_FILES files of 5,000 new jobs per palisade apply (one transaction each, as docs/jobs.md gives for a large set), $spent ms of apply (budget ${APPLY_BUDGET} s); jobs/s per run: ${per_run:-none}; $((ck1 - ck0)) checkpoints$([ "$rc" = 1 ] && echo "; an apply failed")" n="$n"
	new_db apply1
	read -r n spent rc runs <<<"$(apply_runs 1 "$APPLY1_BUDGET")"
	rate=null
	[ "$n" -gt 0 ] && rate=$((n * 1000 / spent))
	set -- $runs
	if [ $# -ge 10 ]; then
		local a=0 z=0 all=("$@") i
		for i in 0 1 2 3 4; do a=$((a + all[i])) z=$((z + all[$# - 1 - i])); done
		shape="; first 5 runs $((25000 * 1000 / a)) jobs/s, last 5 $((25000 * 1000 / z)) jobs/s"
	fi
	record "palisade apply rate, one 5,000-job file per apply" "$rate" jobs/s 20000 higher \
		"$n jobs applied, one file of 5,000 new jobs per palisade apply, $spent ms of apply (budget ${APPLY1_BUDGET} s): each run pays its process start, connection and commit$shape$([ "$rc" = 1 ] && echo "; an apply failed")" n="$n"
}

# scale: SCALE_JOBS idle jobs written with SQL, one controller from a cold
# start (every version still to be activated, as right after an apply):
# launch -> every shard led and planned, its peak RSS, and its tick cost
# while every job is idle.  A start that does not finish within
# COLD_BUDGET is recorded as a lower bound (with the RSS reached by then);
# the tick cost is then measured on the 200,000-job controller of
# handoff200k instead.
TICK_DONE=
tick_cost() { # NODE SECS N NOTE: record the tick-cost figure from NODE's /metrics
	local id=$1 secs=$2 jn=$3 note=$4 end=$(($(ms) + $2 * 1000)) st n p50 p99 mx
	st=$(while [ "$(ms)" -lt $end ]; do
		curl -s --max-time 2 "http://${NODE_ADMIN[$id]}/metrics" |
			awk '/^palisade_controller_tick_seconds\{/ {print $2 * 1000}'
		sleep 0.5
	done | python3 tests/bench/report.py stats)
	read -r n p50 p99 mx <<<"$st"
	[ "$n" = 0 ] && p50=null
	record "1,000,000 jobs: tick cost per shard, every job idle" "$p50" ms 5 lower \
		"$jn jobs$note; median of palisade_controller_tick_seconds (the planning transaction) over 16 shards x ${secs} s; p99 $p99 ms, max $mx ms" \
		n="$jn" samples="$n" max="$mx"
	TICK_DONE=1
}
section_scale() {
	new_db scale
	local conf=$B_STATE/scale.yaml t0 t1 tw
	cat >"$B_STATE/scale-tpl.yaml" <<YAML
jobs:
  - {id: tpl.idle, schedule: {cron: "0 0 0 1 1 ?"}, target: {url: "http://127.0.0.1:1/x"}}
YAML
	"$PAL" apply "$B_STATE/scale-tpl.yaml" >/dev/null || return
	t0=$(ms)
	# As right after an apply of them: no statistics, no visibility map
	# (the start of 12-05 read 9,311 ms so, 6,040 ms after VACUUM ANALYZE).
	B_AS_APPLIED=1 write_jobs_sql "$SCALE_JOBS" scale tpl.idle || { say "scale: SQL write failed"; return; }
	say "scale: $SCALE_JOBS jobs written with SQL in $(($(ms) - t0)) ms"
	node_conf "$conf" scale controller
	local budget=$COLD_BUDGET
	[ $((budget + 60)) -gt "$(left_s)" ] && budget=$(($(left_s) - 60))
	[ $budget -lt 10 ] && budget=10
	t0=$(ms)
	CLUSTER_CONF=$conf start_node scale-c
	local led hwm rss
	t1=$(wait_planned scale-c "$t0" "$budget")
	led=$(sql "SELECT count(*) FROM shards WHERE leader = 'scale-c' AND watermark > to_timestamp($t0 / 1000.0)")
	if [ -z "$t1" ]; then
		record "1,000,000 jobs: start until all shards led and planned" $((budget * 1000)) ms 10000 lower \
			"$SCALE_JOBS jobs (SQL), 1 controller, cold start (every version to activate): only $led of 16 shards planned within the ${budget} s budget (a lower bound)" \
			n="$SCALE_JOBS" bound=lower shards_planned="$led"
	else
		record "1,000,000 jobs: start until all shards led and planned" $((t1 - t0)) ms 10000 lower \
			"$SCALE_JOBS jobs (SQL), 1 controller, cold start (every version to activate, tables neither vacuumed nor analysed: as right after an apply); launch -> 16 shards led, watermark past the launch" \
			n="$SCALE_JOBS"
	fi
	local pid=${NODE_PID[scale-c]}
	hwm=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$pid/status" 2>/dev/null)
	rss=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status" 2>/dev/null)
	if [ -n "$t1" ]; then
		record "1,000,000 jobs: controller RSS (peak)" "${hwm:-null}" MiB 1024 lower \
			"$SCALE_JOBS jobs; VmHWM of the controller node once planned (VmRSS $rss MiB)" n="$SCALE_JOBS" rss="${rss:-null}"
		# "Every job idle": after the deferred activations (at most 1000
		# per tick and shard after a cold start) have all been written;
		# sampled during them, the tick cost is the activations' cost.
		# Progress is read from the node's counter: a count(*) of the
		# versions not yet activated is a parallel scan of a 1 GB table,
		# and polled every second it took most of both cores from the
		# activations it waited for (2026-12-04: 216,000 left after 120 s).
		local aw=120 ta=$(ms) acts
		[ $((aw + 60)) -gt "$(left_s)" ] && aw=$(($(left_s) - 60))
		while acts=$(metric_sum palisade_controller_activations_total scale-c) &&
			[ "${acts:-0}" -lt "$SCALE_JOBS" ] && [ $(($(ms) - ta)) -lt $((aw * 1000)) ]; do
			sleep 1
		done
		local waited=$(( ($(ms) - ta) / 1000 ))
		sleep 2
		tick_cost scale-c "$TICK_S" "$SCALE_JOBS" \
			"; sampled from ${waited} s after planning, once the node had activated ${acts:-?} versions"
		say "scale: ${acts:-?} versions activated in ${waited} s (the node's counter)"
		# What the node's other reader of PostgreSQL costs at this size: the
		# cluster gauges (metrics.cluster_interval) of every node.
		say "scale: last cluster-stats refresh $(curl -s --max-time 2 "http://${NODE_ADMIN[scale-c]}/metrics" |
			awk '$1 == "palisade_cluster_stats_refresh_seconds" { printf "%.0f ms", $2 * 1000 }')"
	else
		record "1,000,000 jobs: controller RSS (peak)" "${hwm:-null}" MiB 1024 lower \
			"$SCALE_JOBS jobs; VmHWM at the end of the start budget, not yet planned (VmRSS $rss MiB)" \
			n="$SCALE_JOBS" rss="${rss:-null}" bound=lower
	fi
	stop_node scale-c
}

# burst: BURST_JOBS jobs written with SQL, already activated (a cluster in
# its steady state), all firing on one instant B a little after a
# controller node has planned them; an executor node and the sink with its
# database run beside it.  The figure: the last effect applied (the sink's
# applied_at) minus B.
# One burst: BURST_JOBS jobs due on one instant, effects to the reference
# sink (durable: its applied_at is the effect) or to the no-op sink
# (palisade's own path, as the execution figure: the effect is taken at the
# outcome's commit, finished_at, which comes after the sink's answer).
# -> R_BURST "VALUE GOT DONE_AT PLANNED" (VALUE empty if nothing applied)
burst_run() { # SINKMODE [SPREAD_S]
	local mode=$1 spread=${2:-0} conf=$B_STATE/burst.yaml econf=$B_STATE/burst-exec.yaml sport b t0
	R_BURST= R_SPREAD=
	new_db burst
	sport=$(free_port)
	# B: after the SQL write, the activation and a warm controller start
	# (about 25 s per 100,000 jobs here); a controller still loading at B
	# shows up in the figure.
	b=$(($(date +%s) + BURST_JOBS * 25 / 100000 + 12))
	cat >"$B_STATE/burst-tpl.yaml" <<YAML
jobs:
  - {id: tpl.burst, schedule: {cron: "$(date -u -d "@$b" '+%-S %-M %-H %-d %-m ? %Y')"$([ "$spread" -gt 0 ] && echo ", spread: ${spread}s")}, misfire: fire_all, target: {url: "http://127.0.0.1:$sport/effects/burst", timeout: 60s}}
YAML
	"$PAL" apply "$B_STATE/burst-tpl.yaml" >/dev/null || return
	B_ACTIVATE=1 write_jobs_sql "$BURST_JOBS" burst tpl.burst "$BURST_JOBS" tpl.burst || return
	if [ "$mode" = noop ]; then bench_sink --port "$sport" --noop --threads 64 || return
	else bench_sink --port "$sport" --threads 64 || return; fi
	node_conf "$conf" burst controller
	node_conf "$econf" burst executor
	t0=$(ms)
	CLUSTER_CONF=$conf start_node burst-c
	CLUSTER_CONF=$econf start_node burst-e
	local tp
	tp=$(wait_planned burst-c "$t0" $((b - $(date +%s))))
	say "burst ($mode sink): $BURST_JOBS jobs at $(date -u -d "@$b" +%T); controller planned after $([ -n "$tp" ] && echo $((tp - t0)) ms || echo "(not yet)")"
	local lim=$((b + spread + BURST_WAIT)) got=0 count
	if [ "$mode" = noop ]; then count="SELECT count(*) FROM triggers WHERE state = 'succeeded'"
	else count="SELECT count(*) FROM sink_effects WHERE path = '/effects/burst'"; fi
	while [ "$(date +%s)" -lt $lim ]; do
		sleep 1
		[ "$(date +%s)" -gt "$b" ] || continue
		got=$(sql "$count")
		[ "$got" -ge "$BURST_JOBS" ] && break
	done
	local v done_at planned
	done_at=$(sql "SELECT round(extract(epoch FROM max(finished_at) - to_timestamp($b)) * 1000)
	         FROM triggers WHERE state = 'succeeded'")
	if [ "$mode" = noop ]; then v=$done_at
	else v=$(sql "SELECT round(extract(epoch FROM max(applied_at) - to_timestamp($b)) * 1000)
	         FROM sink_effects WHERE path = '/effects/burst'"); fi
	planned=$(sql "SELECT count(*) FROM triggers")
	# With spread: each job fires on its own instant (the plan key's, moved
	# by its offset); what it costs is the lateness of each against it, and
	# the instants must cover the window.
	[ "$spread" -gt 0 ] && R_SPREAD=$(sql "SELECT round(percentile_cont(0.99) WITHIN GROUP (ORDER BY
	         extract(epoch FROM finished_at - scheduled_at)) * 1000) || ' ' ||
	         round(max(extract(epoch FROM finished_at - scheduled_at)) * 1000) || ' ' ||
	         extract(epoch FROM max(scheduled_at) - min(scheduled_at))::bigint || ' ' ||
	         count(DISTINCT scheduled_at)
	         FROM triggers WHERE state = 'succeeded'")
	# How long the executor's loop sat in blocking reads of job versions
	# (each distinct job's version is read once, per claimed batch).
	local specms
	specms=$(curl -s --max-time 2 "http://${NODE_ADMIN[burst-e]}/metrics" |
		awk '$1 == "palisade_executor_spec_read_seconds_total" { printf "%.0f", $2 * 1000 }')
	stop_node burst-e
	stop_node burst-c
	stop_sink
	R_BURST="${v:-} ${got:-0} ${done_at:-?} $planned ${specms:-?}"
}
# record_burst NAME WHAT NOTE: the row of one burst_run (R_BURST); WHAT is
# what was counted ("applied", "succeeded").
record_burst() {
	local v got done_at planned specms note=$3 extra=()
	[ -n "$R_BURST" ] || return
	read -r v got done_at planned specms <<<"$R_BURST"
	note=${note//@DONE@/$done_at}
	note="$note; $planned triggers planned; the executor loop waited $specms ms in reads of job versions"
	if [ "$got" -lt "$BURST_JOBS" ]; then
		note="only $got of $BURST_JOBS $2 within ${BURST_WAIT} s (value is a lower bound); $note"
		v=$((BURST_WAIT * 1000))
		extra=(bound=lower)
	fi
	record "$1" "${v:-null}" ms 12000 lower "$note" n="$BURST_JOBS" "$2=$got" spec_read_ms="$specms" "${extra[@]}"
}
section_burst() {
	local name="aligned burst: 100,000 jobs due on one second, last effect"
	local name0="aligned burst: 100,000 jobs due on one second, last outcome, no-op sink"
	if [ "$BURST_JOBS" -le 0 ]; then
		not_run "$name" ms 12000 lower "not run (BENCH_QUICK=1)"
		not_run "$name0" ms 12000 lower "not run (BENCH_QUICK=1)"
		return
	fi
	local floor=
	[ -n "${SINK_CEIL:-}" ] && [ "$SINK_CEIL" -gt 0 ] && floor=$((BURST_JOBS * 1000 / SINK_CEIL))
	local sinks=" ${BENCH_BURST_SINKS:-durable noop} "
	[[ $sinks == *" durable "* ]] && burst_run durable &&
	record_burst "$name" applied "$BURST_JOBS jobs (SQL, activated) on one instant; last effect applied (durable reference sink, same cores) - the instant; palisade committed its last result at +@DONE@ ms${floor:+; the sink alone needs >= $floor ms for them at its measured ceiling}"
	[[ $sinks == *" noop "* ]] || return
	[ "$(left_s)" -gt 60 ] || return
	settle
	burst_run noop
	record_burst "$name0" succeeded "the same burst with the no-op sink: palisade's own path (claim, call, commit), as the execution figure; last outcome committed (finished_at, after the sink's answer) - the instant"
}

# burst_spread: the burst's jobs with `spread: BENCH_BURST_SPREAD` (10 min):
# the same 100,000 jobs on one cron instant, each moved by the offset its id
# gives.  Figures: the p99 and max lateness of the outcomes against each
# trigger's own (moved) instant, with the durable sink; the note says how
# far the instants spread and on how many distinct seconds.
section_burst_spread() {
	local sp=${BENCH_BURST_SPREAD:-600}
	local name="aligned burst with spread 10m: 100,000 jobs, lateness p99"
	local namex="aligned burst with spread 10m: 100,000 jobs, lateness max"
	if [ "$BURST_JOBS" -le 0 ] || [ "$(left_s)" -lt $((sp + BURST_WAIT + 60)) ]; then
		not_run "$name" ms 1000 lower "not run: needs $((sp + BURST_WAIT + 60)) s of the time budget ($(left_s) s left); BENCH_ONLY=burst_spread runs it alone"
		not_run "$namex" ms null lower "not run"
		return
	fi
	burst_run durable "$sp" || return
	local v got done_at planned specms p99 mx width nsec
	read -r v got done_at planned specms <<<"$R_BURST"
	read -r p99 mx width nsec <<<"${R_SPREAD:-null null 0 0}"
	local note="$BURST_JOBS jobs (SQL, activated) on one cron instant with spread: ${sp}s; finished_at - scheduled_at of each, durable sink; the instants span $width s on $nsec distinct seconds; $got of $BURST_JOBS applied; last outcome $done_at ms after the cron instant"
	record "$name" "${p99:-null}" ms 1000 lower "$note" n="$BURST_JOBS" applied="$got" spread_s="$sp" span_s="$width" seconds="$nsec"
	record "$namex" "${mx:-null}" ms null lower "$note" n="$BURST_JOBS" applied="$got"
}

# handoff200k: the handoff runs again with BIG_JOBS idle jobs registered.
section_handoff200k() {
	if [ "$BIG_JOBS" -le 0 ]; then
		for f in "graceful handoff p50" "graceful handoff max" "crash failover p50" "crash failover max"; do
			not_run "$f (200,000 jobs)" ms null lower "not run (BENCH_QUICK=1)"
		done
		return
	fi
	new_db big
	cat >"$B_STATE/big-tpl.yaml" <<YAML
jobs:
  - {id: tpl.idle, schedule: {cron: "0 0 0 1 1 ?"}, target: {url: "http://127.0.0.1:1/x"}}
YAML
	"$PAL" apply "$B_STATE/big-tpl.yaml" >/dev/null || return
	B_ACTIVATE=1 write_jobs_sql "$BIG_JOBS" big tpl.idle || return
	local conf=$B_STATE/big.yaml budget t0 t1
	node_conf "$conf" big controller
	t0=$(ms)
	CLUSTER_CONF=$conf start_node big-a
	t1=$(wait_planned big-a "$t0" "$START_BUDGET")
	local warm hwm
	warm=$([ -n "$t1" ] && echo "$((t1 - t0)) ms" || echo "not within ${START_BUDGET} s")
	hwm=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/${NODE_PID[big-a]}/status" 2>/dev/null)
	say "handoff200k: warm start of one controller with $BIG_JOBS jobs: $warm, peak RSS ${hwm:-?} MiB"
	if [ -z "$TICK_DONE" ] && [ -n "$t1" ]; then
		sleep 2
		tick_cost big-a "$TICK_S" "$BIG_JOBS" " (fallback: the 1M controller was not planned in its budget; this controller's warm start $warm, peak RSS ${hwm:-?} MiB)"
	fi
	CLUSTER_CONF=$conf start_node big-b
	budget=$(($(left_s) - 30))
	[ $budget -gt 240 ] && budget=240
	handoff_runs big "$conf" "$HO_RUNS" "$budget"
	stop_node big-a
	stop_node big-b
	record_handoffs " (200,000 jobs)" "$BIG_JOBS idle jobs (SQL), 16 shards; budget ${budget} s"
}

# ---- soak ---------------------------------------------------------------------------------
# RATE every-second jobs on one node (controller + executor) for MINS minutes,
# with the storage an operator at that rate keeps: retention 10 min on 1-min
# ranges (14 days, the default, would be ~6 TB at 5,000 fires/s).  The sink
# answers without its database (--noop, as in the execution figure) unless
# BENCH_SOAK_SINK=durable: the durable reference sink on the same 2 cores
# bounds the rate below 5,000/s by itself (docs/performance.md, "Figures").
# Read from the triggers table while the run goes on, each minute W one
# minute after it ended: fires/s = triggers succeeded with finished_at (the
# outcome's commit, after the effect) in W; p99 lateness of the instants of W
# (finished_at - scheduled_at, unfinished counted at the time of the read).
# The first and the last SOAK_WIN minutes are read the same way as one window.
# The soak reads its figures without disturbing what it measures: a minute's
# lateness values are copied out once (one partition, no JIT, no parallel
# workers) and the percentiles are computed here; throughput is the node's
# own result counter.  The first version ran percentile queries over five
# partitions once a minute: JIT and two parallel workers took both cores for
# 1.4-2 s and the claims fell seconds behind right then.
soak_dump() { # FROM TO FILE: lateness ms and done (0/1) of every instant in [FROM, TO)
	PGOPTIONS="-c jit=off -c max_parallel_workers_per_gather=0" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "COPY (
	   SELECT round((extract(epoch FROM coalesce(finished_at, clock_timestamp()) - scheduled_at) * 1000)::numeric, 1),
	          (state IN ('succeeded', 'failed', 'skipped', 'cancelled', 'manual'))::int
	   FROM triggers WHERE scheduled_at >= to_timestamp($1) AND scheduled_at < to_timestamp($2)) TO STDOUT" >"$3"
}
soak_stats() { # FILE... -> "P99 UNFINISHED N"
	cat "$@" | python3 -c '
import sys
v, u = [], 0
for l in sys.stdin:
    a, d = l.split()
    v.append(float(a)); u += d == "0"
v.sort()
print("%.1f %d %d" % (v[min(len(v) - 1, int(0.99 * len(v)))] if v else float("nan"), u, len(v)))'
}
section_soak() {
	local names=("soak: throughput of the last 5 minutes" "soak: p99 lateness of the last 5 minutes")
	if [ "${BENCH_SOAK:-0}" != 1 ]; then
		not_run "${names[0]}" fires/s null higher "not run (BENCH_SOAK=1 runs it: 30 minutes at 5,000 fires/s)"
		not_run "${names[1]}" ms null lower "not run (BENCH_SOAK=1)"
		return
	fi
	local mins=${BENCH_SOAK_MINUTES:-30} rate=${BENCH_SOAK_RATE:-5000} conf=$B_STATE/soak.yaml
	local sinkmode=${BENCH_SOAK_SINK:-noop}
	local win=$((mins >= 10 ? 5 : (mins + 1) / 2))
	new_db soak
	# BENCH_SOAK_SQL: statements run in the soak's database before the node
	# starts (an A/B of a schema or storage setting)
	if [ -n "${BENCH_SOAK_SQL:-}" ]; then sql "$BENCH_SOAK_SQL" >/dev/null || return; fi
	# The server as an operator writing RATE triggers a second configures
	# it: with the defaults (max_wal_size 1 GB) a checkpoint came every
	# 30-50 s, each followed by full-page images of every page touched
	# again; the box sat 30 % in I/O wait and fell behind within 2 minutes
	# (3,337-3,816 fires/s).  Only this section; reset at its end.
	local s
	for s in "max_wal_size = '16GB'" "checkpoint_timeout = '15min'" "wal_compression = 'lz4'"; do
		sql "ALTER SYSTEM SET $s" >/dev/null
	done
	sql "SELECT pg_reload_conf()" >/dev/null
	if [ "$sinkmode" = durable ]; then bench_sink --threads 64 || return
	else bench_sink --noop --threads 64 || return; fi
	node_conf "$conf" soak "controller, executor" \
		"retention: {triggers: 10m, partition_interval: 1m, ahead: 3m, check_interval: 30s}"
	python3 - "$B_STATE/soak" "$rate" "$SINK_ADDR" <<'PY'
import os, sys
d, n, addr = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(d, exist_ok=True)
for f in range(0, n, 5000):
    with open("%s/jobs-%04d.yaml" % (d, f // 5000), "w") as o:
        o.write("jobs:\n")
        for i in range(f + 1, min(n, f + 5000) + 1):
            o.write('  - {id: soak.job-%d, schedule: {cron: "* * * * * ?"}, misfire: skip, '
                    'target: {url: "http://%s/effects/soak", timeout: 5s}}\n' % (i, addr))
PY
	"$PAL" apply --config "$conf" "$B_STATE"/soak/jobs-*.yaml >/dev/null || return
	CLUSTER_CONF=$conf start_node soak-n
	node_up soak-n
	sleep 10
	local t0=$(($(date +%s) + 1))
	local t1=$((t0 + mins * 60)) m w tsv=$B_STATE/soak/minutes.tsv res=succeeded
	local c=() p99 unf n mb
	say "soak: $rate jobs every second for $mins minutes (sink: $sinkmode; per minute: fires/s, p99 ms, unfinished, MB)"
	: >"$tsv"
	# c[k]: the node's succeeded results at t0 + 60 k; minute m's lateness
	# is read at t0 + 60 m + 120, when its instants have had a minute.
	for ((m = 0; m <= mins + 1; m++)); do
		w=$((t0 + m * 60))
		while [ "$(date +%s)" -lt "$w" ]; do sleep 0.2; done
		[ "$m" -le "$mins" ] && c[m]=$(metric_sum "palisade_executor_results_total{state=\"$res\"}" soak-n)
		[ "$m" -ge 2 ] || continue
		soak_dump $((w - 120)) $((w - 60)) "$B_STATE/soak/lat-$((m - 2)).txt"
		read -r p99 unf n <<<"$(soak_stats "$B_STATE/soak/lat-$((m - 2)).txt")"
		mb=$(sql "SELECT round(pg_database_size(current_database()) / 1048576.0)")
		echo "$((m - 2)) $(((c[m - 1] - c[m - 2]) / 60)) $p99 $unf $mb" >>"$tsv"
		say "soak: minute $((m - 2)): $(tail -1 "$tsv" | cut -d' ' -f2-)"
	done
	local l1 f1 fp lp files=()
	f1=$(((c[win] - c[0]) / (win * 60)))
	l1=$(((c[mins] - c[mins - win]) / (win * 60)))
	for ((m = 0; m < win; m++)); do files+=("$B_STATE/soak/lat-$m.txt"); done
	read -r fp _ <<<"$(soak_stats "${files[@]}")"
	files=()
	for ((m = mins - win; m < mins; m++)); do files+=("$B_STATE/soak/lat-$m.txt"); done
	read -r lp _ <<<"$(soak_stats "${files[@]}")"
	stop_node soak-n
	stop_sink
	for s in max_wal_size checkpoint_timeout wal_compression; do sql "ALTER SYSTEM RESET $s" >/dev/null; done
	sql "SELECT pg_reload_conf()" >/dev/null
	local per_min
	per_min=$(awk '{ printf "%s%s", sep, $2; sep = "," }' "$tsv")
	record "${names[0]}" "$l1" fires/s "$(python3 -c "print(round(0.95 * $f1))")" higher \
		"$rate jobs every second for $mins min, 1 node, sink $sinkmode, retention 10 min, WAL 16 GB / checkpoints 15 min / lz4; the node's succeeded results per second; target 95% of the first $win min (${f1}/s); per minute: $per_min" minutes="$mins"
	record "${names[1]}" "$lp" ms "$(python3 -c "print(round(max(1.2 * float('$fp'), float('$fp') + 20), 1))" 2>/dev/null || echo null)" lower \
		"by scheduled instant, finished_at - scheduled_at; flat: at most 1.2 x (at least +20 ms) the p99 of the first $win min ($fp ms); per minute: $(awk '{ printf "%s%s", sep, $3; sep = "," }' "$tsv")" minutes="$mins"
}

# ---- run ------------------------------------------------------------------------------------
# Every figure first as "not measured", in table order; a section that runs
# replaces its rows (report.py keeps the first position of a name).
S1=$((B_SESSION * 1000 + 1000))
while IFS='|' read -r name unit target better; do
	python3 tests/bench/report.py add "$B_RESULTS" "$name" null "$unit" "$target" "$better" \
		"not measured: its section did not run, failed or ran out of time"
done <<EOF
ceiling: planning insert, 1000-row unnest ON CONFLICT, triggers' indexes|rows/s|null|higher
ceiling: DB, claim 100 + complete 100, 2 clients|rows/s|null|higher
ceiling: DB, claim 100 + complete 100, 4 clients|rows/s|null|higher
ceiling: HTTP no-op POST with protocol headers, 64 connections|req/s|null|higher
ceiling: combined 1/(1/db + 1/http)|/s|null|higher
ceiling, minimal shape: planning insert, 1000 rows ON CONFLICT DO NOTHING|rows/s|null|higher
ceiling, minimal shape: DB, claim 100 + complete 100, 4 clients|rows/s|null|higher
ceiling, minimal shape: combined 1/(1/db + 1/http)|/s|null|higher
ceiling, minimal shape: bytes per fire, heap and indexes|B|null|lower
ceiling, minimal shape: WAL bytes per fire|B|null|lower
ceiling, minimal shape: database CPU per fire|us|null|lower
ceiling: reference sink, durable applies, 64 connections|req/s|null|higher
ceiling: reference sink, durable applies, one transaction per effect (--group-max 1)|req/s|null|higher
execution, 1 node, no-op sink|triggers/s|10000|higher
execution / combined ceiling, same shape|x|null|higher
execution / combined ceiling, minimal shape|x|0.6|higher
execution, 3 executor nodes on the same database|triggers/s|null|higher
planning, 1 controller|rows/s|null|higher
planning / insert ceiling, same shape|x|0.8|higher
planning / insert ceiling, minimal shape|x|0.6|higher
bytes per fire: triggers and attempts with their indexes|B|300|lower
bytes per fire / minimal shape|x|null|lower
WAL bytes per fire|B|null|lower
WAL bytes per fire / minimal shape|x|null|lower
database CPU per fire|us|null|lower
database CPU per fire / minimal shape|x|null|lower
bytes per effect: the sink's tables with their indexes|B|400|lower
fire lateness p99, 20 jobs every second|ms|10|lower
fire lateness p99, 1,000 jobs every second|ms|150|lower
fire lateness missing, 1,000 jobs every second|instants|0|lower
aligned burst: 100,000 jobs due on one second, last effect|ms|12000|lower
aligned burst: 100,000 jobs due on one second, last outcome, no-op sink|ms|12000|lower
aligned burst with spread 10m: 100,000 jobs, lateness p99|ms|1000|lower
aligned burst with spread 10m: 100,000 jobs, lateness max|ms|null|lower
graceful handoff p50|ms|500|lower
graceful handoff max|ms|500|lower
crash failover p50|ms|$S1|lower
crash failover max|ms|$S1|lower
graceful handoff p50 (200,000 jobs)|ms|500|lower
graceful handoff max (200,000 jobs)|ms|500|lower
crash failover p50 (200,000 jobs)|ms|$S1|lower
crash failover max (200,000 jobs)|ms|$S1|lower
lease takeover after kill -9 of an executor|ms|5000|lower
1,000,000 jobs: palisade apply rate|jobs/s|20000|higher
palisade apply rate, one 5,000-job file per apply|jobs/s|20000|higher
1,000,000 jobs: controller RSS (peak)|MiB|1024|lower
1,000,000 jobs: start until all shards led and planned|ms|10000|lower
1,000,000 jobs: tick cost per shard, every job idle|ms|5|lower
soak: throughput of the last 5 minutes|fires/s|null|higher
soak: p99 lateness of the last 5 minutes|ms|null|lower
EOF
for s in ceilings sink planning exec lateness lease handoff apply scale burst burst_spread handoff200k soak; do
	want "$s" || continue
	case $s in scale) need=$((COLD_BUDGET / 2 + 60)) ;; burst | handoff200k) need=60 ;; *) need=20 ;; esac
	if [ "$s" != soak ] && [ "$s" != burst_spread ] && [ "$(left_s)" -lt $need ]; then
		say "$s skipped: time budget ($(left_s) s left, $need needed)"
		continue
	fi
	settle
	say "-- $s ($(($(ms) - T_START)) ms)"
	"section_$s"
	stop_all_nodes
done
exit 0
