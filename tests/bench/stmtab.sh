#!/usr/bin/env bash
# tests/bench/stmtab.sh - the executor's two hot statements, the claim
# (palisade_claim_batch, every statement inside it) and the result commit
# (src/store/exec.c SQL_COMMIT), measured apart from the executor, the
# sink and HTTP: in a PostgreSQL of its own (fsync off) with
# pg_stat_statements, on a fresh database migrated by each tree's binary,
# ROUNDS claims of 256 due triggers, each followed by the commit of its
# 256 successes (the same parameters an executor sends, one batch left in
# flight), in one session.  Per tree and run: the server's CPU per fire
# (every process of it, as the bench's "database CPU per fire") and the
# least time of each statement over the rounds, in ms per 256 fires - the
# least, since on a shared machine the mean is the neighbours' as much as
# the statement's.  The figures of docs/performance.md, "Steps in the
# database's work", come from here; the trees run alternated, RUNS times.
#
#   bash tests/bench/stmtab.sh TREE [TREE...]   (each a built checkout: its
#                                               bin/palisade and its exec.c)
#   STMTAB_ROUNDS (120), STMTAB_RUNS (2), STMTAB_SQL (statements run in the
#   database before the rounds, e.g. to disable a trigger), STMTAB_PERF=DIR
#   (perf record --call-graph dwarf of the session's backend over the
#   rounds, DIR/TREE.RUN.perf: where a fire's CPU goes by C function;
#   frame-pointer stacks, -g, lose the server's callers)
# Asserts nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${STMTAB_ROUNDS:-120}
RUNS=${STMTAB_RUNS:-2}
TREES=()
for t in "$@"; do TREES+=("$(cd "$t" && pwd)"); done
[ ${#TREES[@]} -gt 0 ] || TREES=("$PWD")

source tests/ports.sh
export PALISADE_STATE=$(mktemp -d /tmp/palisade-stmtab.XXXXXX)
chmod 755 "$PALISADE_STATE"
export PALISADE_PG_PORT=$(free_port) PALISADE_PG_FAST=1
export PALISADE_PG_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
cleanup() {
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}
trap cleanup EXIT
eval "$(bash ops/devcluster.sh up --only pg 2>/dev/null)" || { echo "stmtab: PostgreSQL did not start" >&2; exit 0; }
ADMIN="host=127.0.0.1 port=$PALISADE_PG_PORT user=palisade dbname=postgres"
PG="host=127.0.0.1 port=$PALISADE_PG_PORT user=palisade dbname=stmtab"
B_PG_PID=$(head -1 "$(psql "$ADMIN" -XAtq -c "SHOW data_directory")/postmaster.pid")
source <(sed -n '/^pg_cpu_us()/,/^}/p' tests/bench/lib.sh) # pg_cpu_us, the bench's own

# commit_sql TREE: the text of SQL_COMMIT as TREE's exec.c builds it.
commit_sql() {
	gcc -E -I"$1/include" -I/usr/include/zookeeper -I/usr/include/postgresql \
		$(pkg-config --cflags glib-2.0) -DTHREADED -D_GNU_SOURCE "$1/src/store/exec.c" |
		python3 -c '
import ast, re, sys
s = sys.stdin.read()
m = re.search(r"static const char SQL_COMMIT\[\] =(.*?);\n", s, re.S)
print("".join(ast.literal_eval("\"" + l + "\"") for l in re.findall(r"\"((?:[^\"\\\\]|\\\\.)*)\"", m.group(1))))'
}

fill() { echo "array_fill($1, ARRAY[:n])"; } # a batch-long parameter array
# run TREE: one measurement; prints its line.
run() {
	local tree=$1 commit c0 c1 f
	commit=$(commit_sql "$tree") || return 1
	psql "$ADMIN" -XAtq -c "DROP DATABASE IF EXISTS stmtab WITH (FORCE)" -c "CREATE DATABASE stmtab" >/dev/null 2>&1
	PALISADE_PG=$PG "$tree/bin/palisade" migrate >/dev/null || return 1
	printf 'jobs:\n  - {id: bench.exec, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/e"}}\n' \
		>"$PALISADE_STATE/job.yaml"
	PALISADE_PG=$PG "$tree/bin/palisade" apply "$PALISADE_STATE/job.yaml" >/dev/null || return 1
	psql "$PG" -XAtq -v ON_ERROR_STOP=1 \
		-c "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0" \
		-c "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
		    SELECT 'bench.exec', 1, t, 0, 'schedule', 'default', 'default', t, 0
		    FROM (SELECT now() - interval '10 minutes' + g * interval '1 microsecond' AS t
		          FROM generate_series(1, $(((ROUNDS + 2) * 256 + 5000))) g) x" \
		-c "VACUUM ANALYZE triggers" -c "CHECKPOINT" -c "CREATE EXTENSION pg_stat_statements" >/dev/null || return 1
	[ -z "${STMTAB_SQL:-}" ] || psql "$PG" -XAtq -v ON_ERROR_STOP=1 -c "$STMTAB_SQL" >/dev/null || return 1
	local claim="SELECT * FROM palisade_claim_batch('node-a', 30000, 256, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true)"
	local i
	{
		echo "SET jit = off;" # as palisade's connections (src/store/conn.c)
		echo "PREPARE c(bigint[], bigint[], text[], text[], int[], bigint[], int[], text[], text[], boolean[],"
		echo "  text[], text[], bigint, float8, float8, bigint[], text[], text[], text[], boolean[]) AS $commit;"
		echo "CREATE TEMP TABLE cl AS SELECT * FROM ($claim) x WHERE false;"
		echo "SELECT count(*) FROM ($claim) x;" # a batch in flight, as in a live node
		echo "SELECT pg_stat_statements_reset();"
		for ((i = 0; i < ROUNDS; i++)); do
			echo "TRUNCATE cl; INSERT INTO cl $claim;"
			echo "SELECT array_agg(id) AS ids, array_agg(fence) AS fences, count(*) AS n, max(fence) AS mf FROM cl WHERE id IS NOT NULL \\gset"
			echo "SELECT min(extract(epoch FROM scheduled_at)) AS lo, max(extract(epoch FROM scheduled_at)) + 1 AS hi FROM triggers WHERE id = ANY(:'ids') \\gset"
			echo "SET enable_nestloop = off;" # the result connection's (pal_store_prepare_commits)
			echo "EXECUTE c(:'ids', :'fences', $(fill "'succeeded'::text"), $(fill "''::text"),"
			echo "  $(fill 200), $(fill "-1::bigint"), $(fill 1), $(fill "''::text"),"
			echo "  $(fill "''::text"), $(fill false), $(fill "''::text"), $(fill "''::text"),"
			echo "  :mf, :lo, :hi, :'fences', $(fill "'{}'::text"), $(fill "'application/json'::text"),"
			echo "  $(fill "'7b226170706c696564223a747275657d'::text"), $(fill false));"
			echo "RESET enable_nestloop;"
		done
	} >"$PALISADE_STATE/rounds.sql"
	local pp="" bp
	rm -f "$PALISADE_STATE/bpid"
	if [ -n "${STMTAB_PERF:-}" ]; then # the backend, found by its PID
		{ echo "SELECT pg_backend_pid() \\g $PALISADE_STATE/bpid"; echo "SELECT pg_sleep(1);"; cat "$PALISADE_STATE/rounds.sql"; } >"$PALISADE_STATE/rounds.p.sql"
		mv "$PALISADE_STATE/rounds.p.sql" "$PALISADE_STATE/rounds.sql"
	fi
	c0=$(pg_cpu_us)
	psql "$PG" -XAtq -v ON_ERROR_STOP=1 -f "$PALISADE_STATE/rounds.sql" >/dev/null &
	local ps=$!
	if [ -n "${STMTAB_PERF:-}" ]; then
		while [ ! -s "$PALISADE_STATE/bpid" ] && kill -0 $ps 2>/dev/null; do sleep 0.05; done
		bp=$(head -1 "$PALISADE_STATE/bpid")
		mkdir -p "$STMTAB_PERF"
		perf record -q -F 999 --call-graph dwarf,16384 -o "$STMTAB_PERF/$(basename "$tree").$r.perf" -p "$bp" 2>/dev/null &
		pp=$!
	fi
	wait $ps || { [ -z "$pp" ] || kill -INT $pp; return 1; }
	c1=$(pg_cpu_us)
	[ -z "$pp" ] || { kill -INT $pp 2>/dev/null; wait $pp 2>/dev/null; }
	f=$(psql "$PG" -XAtq -c "SELECT count(*) FROM triggers WHERE state = 'succeeded'")
	echo "$(basename "$tree"): $f fires, server CPU $(((c1 - c0) / f)) us/fire; least ms per 256: $(psql "$PG" -XAtq -c "
	  SELECT string_agg(k || ' ' || to_char(m, 'FM990.00'), ', ' ORDER BY o) FROM (
	    SELECT CASE WHEN query LIKE 'INSERT INTO cl%' THEN 'claim' WHEN query LIKE 'WITH prev%' THEN 'claim-update'
	        WHEN query LIKE 'WITH gated%' THEN 'candidates' WHEN query LIKE 'WITH pick%' THEN 'pick'
	        WHEN query LIKE 'PREPARE c%' THEN 'commit' END AS k,
	      min(CASE WHEN query LIKE 'INSERT INTO cl%' THEN 1 WHEN query LIKE 'WITH gated%' THEN 2
	        WHEN query LIKE 'WITH pick%' THEN 3 WHEN query LIKE 'WITH prev%' THEN 4 ELSE 5 END) AS o,
	      min(min_exec_time) AS m
	    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'stmtab')
	    GROUP BY 1) x WHERE k IS NOT NULL"); load $(cut -d' ' -f1 /proc/loadavg)"
}

for ((r = 1; r <= RUNS; r++)); do
	for t in "${TREES[@]}"; do
		run "$t" || echo "$(basename "$t"): failed"
	done
done
exit 0
