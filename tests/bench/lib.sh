# tests/bench/lib.sh - helpers of `make bench` (tests/bench/run.sh), sourced
# with the checkout as the working directory after BIN, B_STATE and
# B_RESULTS are set; new_db and settle need PALISADE_PG_ADMIN and B_PG_BASE
# (the server's connection string without a database).  The integration tests' helpers do the common work
# (tests/integration/lib.sh: sql, fresh_db; cluster.sh: start_node,
# stop_node, kill9_node, stop_all_nodes, metric, start_sink, stop_sink);
# this file adds what only the bench needs.  Every process is started by
# those helpers or here and tracked by PID; nothing is ever killed by name.
#
#   ms                         host clock, epoch milliseconds
#   new_db NAME                a fresh database bench_NAME (migrated), PALISADE_PG
#                              pointed at it
#   record NAME VALUE UNIT TARGET BETTER [NOTE] [K=V...]   one figure (report.py add)
#   not_run NAME UNIT TARGET BETTER NOTE                   a figure with value null
#   node_conf FILE CLUSTER ROLES [yaml lines...]            a node configuration
#   metric_sum NAME ID...      a sample summed over nodes' /metrics
#   bench_sink [args...]       start_sink with BENCH_SINK_ARGS first
#   reap PID [SECS]            wait for PID to exit, then kill -9
#   write_jobs_sql N PREFIX IDLE_TPL [BURST_N BURST_TPL]    N jobs written with SQL
#                              (B_ACTIVATE=1: versions already active)
#   wait_planned ID T0_MS SECS every shard led by ID, watermark past T0; prints ms
#   lateness_stats LABEL T0 T1 lateness of sink effects under /effects/LABEL with
#                              scheduled instants in [T0, T1): "n p50 p99 max"
#   pg_cpu_us                  CPU time (user + sys) the bench's PostgreSQL server
#                              has used so far, every process of it, in us
#   stmt_reset, stmt_top FIRES [N]   the statement profile (pg_stat_statements)
#                              of the current database since stmt_reset, per fire

export PALISADE_BIN=$BIN PALISADE_TEST_TMP=$B_STATE
NODE_DIR=$B_STATE/logs
source tests/integration/lib.sh
source tests/integration/cluster.sh
trap - EXIT # run.sh sets its own

ms() { date +%s%3N; }
say() { echo "bench: $*" >&2; }

# Seconds left before the run's own deadline (B_DEADLINE, epoch ms).
left_s() { echo $(((B_DEADLINE - $(ms)) / 1000)); }

new_db() {
	fresh_db "bench_$1"
	"$PAL" migrate >/dev/null
}

# Before a section: the databases of the sections before it are dropped and
# the server is left to finish their work (a checkpoint; the autovacuum
# workers done, at most 30 s), so that no figure pays for its predecessor.
# Without it the execution figure of a full quick run read 2,993
# triggers/s where the section alone read 7,987: it ran while autovacuum
# digested the ~54,000 triggers the planning section had just written.
settle() {
	local dbs d i
	dbs=$(psql "$B_PG_BASE dbname=postgres" -XAtq -c "SELECT datname FROM pg_database WHERE datname LIKE 'bench\_%'")
	for d in $dbs; do
		PGOPTIONS="-c client_min_messages=warning" psql "$B_PG_BASE dbname=postgres" -XAtq \
			-c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null
	done
	psql "$B_PG_BASE dbname=postgres" -XAtq -c "CHECKPOINT" >/dev/null
	for i in $(seq 1 60); do
		[ "$(psql "$B_PG_BASE dbname=postgres" -XAtq -c "SELECT count(*) FROM pg_stat_activity
		      WHERE backend_type = 'autovacuum worker'")" = 0 ] && break
		sleep 0.5
	done
}

record() {
	python3 tests/bench/report.py add "$B_RESULTS" "$@"
	local v=$2
	say "$(printf '%-58s %s %s (target %s)' "$1" "$v" "$3" "$4")"
}
not_run() { record "$1" null "$2" "$3" "$4" "$5"; }

# node_conf FILE CLUSTER ROLES [yaml lines...]: ROLES like "controller, executor".
node_conf() {
	local f=$1 cluster=$2 roles=$3
	shift 3
	{
		echo "node: {roles: [$roles]}"
		echo "cluster: {name: $cluster, shards: 16}"
		echo "zookeeper: {session_timeout: ${B_SESSION}s, root: /bench}"
		for l in "$@"; do echo "$l"; done
		[ -z "${BENCH_NODE_CONF:-}" ] || echo "$BENCH_NODE_CONF"
	} >"$f"
}

# reap PID [SECS]: wait for PID to exit, at most SECS (default 30), then kill -9.
reap() {
	local pid=$1 secs=${2:-30} i
	for i in $(seq 1 $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	# (bash forgets the status of a child that ended long ago: no message)
	{ wait "$pid"; } 2>/dev/null
}

metric_sum() {
	local name=$1 id s=0 v
	shift
	for id in "$@"; do
		v=$(metric "$id" "$name")
		s=$((s + ${v%.*}))
	done
	echo "$s"
}
# Wait until a node serves /healthz (at most SECS).
node_up() {
	local id=$1 secs=${2:-20} i
	for i in $(seq 1 $((secs * 10))); do
		curl -sf --max-time 1 "http://${NODE_ADMIN[$id]}/healthz" >/dev/null 2>&1 && return 0
		kill -0 "${NODE_PID[$id]:-0}" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# bench_sink [--port P] [args...]: start_sink with BENCH_SINK_ARGS (e.g.
# "--group-max 1", to A/B group commit) before ARGS, which win.  Nodes are
# started with start_node, their configuration in CLUSTER_CONF.
bench_sink() {
	local port=()
	if [ "${1:-}" = --port ]; then port=(--port "$2"); shift 2; fi
	# shellcheck disable=SC2086 # BENCH_SINK_ARGS is a list of words
	start_sink "${port[@]}" ${BENCH_SINK_ARGS:-} "$@" || { say "the sink did not start"; return 1; }
}

# write_jobs_sql N PREFIX TPL [BURST_N BURST_TPL]: jobs PREFIX.job-1..N written
# straight into jobs/job_versions as copies of the applied template job TPL
# (its canonical spec with the id substituted; shard = FNV-1a 64 of the id
# mod 16, as pal_job_shard computes it) and an idle cron: once a year, about
# six months ahead, at a minute, hour and day spread over the jobs, in six
# time zones.  The first BURST_N copy BURST_TPL as it is (its cron too).
# With B_ACTIVATE=1 every version is written as activated a minute ago at
# epoch 0 (a cluster in its steady state); otherwise every version is still
# to be activated, as right after an apply.  Much faster than `palisade
# apply` today; the apply rate is measured on its own.  The templates are
# deleted afterwards.  Then VACUUM ANALYZE and a checkpoint; with
# B_AS_APPLIED=1 only the checkpoint, as right after an apply: no
# statistics, no visibility map (every index-only scan reads the heap).
write_jobs_sql() {
	local n=$1 prefix=$2 tpl=$3 bn=${4:-0} btpl=${5:-} act=NULL
	[ "${B_ACTIVATE:-0}" = 1 ] && act=1
	python3 - "$n" "$prefix" "$bn" >"$B_STATE/ids.csv" <<'PY'
import sys
n, prefix, bn = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
w = sys.stdout.write
for i in range(1, n + 1):
    jid = "%s.job-%d" % (prefix, i)
    h = 0xcbf29ce484222325
    for b in jid.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    w("%s,%d,%d,%d\n" % (jid, h % 16, 1 if i <= bn else 0, i))
PY
	sql "CREATE UNLOGGED TABLE bench_ids (job_id text, shard int, burst int, i int)" || return 1
	psql "$PALISADE_PG" -XAtq -c "\\copy bench_ids FROM '$B_STATE/ids.csv' CSV" || return 1
	sql "
INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version, active_version)
  SELECT b.job_id, j.tenant, j.resource_group, b.shard, 1, $act FROM bench_ids b
  JOIN jobs j ON j.job_id = CASE WHEN b.burst = 1 THEN '$btpl' ELSE '$tpl' END;
INSERT INTO job_versions (job_id, version, spec, digest, cron, timezone, misfire_policy,
  catchup_window_ms, max_catchup, overlap_policy, priority, deadline_ms, max_in_flight,
  idempotency_key, retry, resource_group, target, target_host, partitions, created_by,
  activated_at, activated_epoch, effective_from)
  SELECT b.job_id, 1,
    CASE WHEN b.burst = 1 THEN jsonb_set(v.spec, '{id}', to_jsonb(b.job_id))
    ELSE jsonb_set(jsonb_set(jsonb_set(v.spec, '{id}', to_jsonb(b.job_id)),
      '{schedule,cron}', to_jsonb(c.cron)), '{schedule,timezone}', to_jsonb(c.tz)) END,
    md5(b.job_id), CASE WHEN b.burst = 1 THEN v.cron ELSE c.cron END,
    CASE WHEN b.burst = 1 THEN v.timezone ELSE c.tz END,
    v.misfire_policy, v.catchup_window_ms, v.max_catchup, v.overlap_policy,
    v.priority, v.deadline_ms, v.max_in_flight, v.idempotency_key, v.retry, v.resource_group,
    v.target, v.target_host, v.partitions, v.created_by,
    CASE WHEN $act = 1 THEN now() END, CASE WHEN $act = 1 THEN 0 END,
    CASE WHEN $act = 1 THEN now() - interval '1 minute' END
  FROM bench_ids b JOIN job_versions v
    ON v.job_id = CASE WHEN b.burst = 1 THEN '$btpl' ELSE '$tpl' END AND v.version = 1
  CROSS JOIN LATERAL (SELECT
    format('0 %s %s %s %s ?', b.i % 60, (b.i / 60) % 24, 1 + (b.i / 1440) % 28,
      (extract(month FROM now())::int + 5) % 12 + 1) AS cron,
    (ARRAY['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney',
      'America/Sao_Paulo'])[b.i % 6 + 1] AS tz) c;
DELETE FROM job_versions WHERE job_id IN ('$tpl', '$btpl');
DELETE FROM jobs WHERE job_id IN ('$tpl', '$btpl'); DELETE FROM audit_log;
DROP TABLE bench_ids" >/dev/null || return 1
	if [ "${B_AS_APPLIED:-0}" != 1 ]; then
		sql "VACUUM ANALYZE jobs" && sql "VACUUM ANALYZE job_versions" || return 1
	fi
	sql "CHECKPOINT"
}

# wait_planned ID T0_MS SECS: every shard led by ID in PostgreSQL with a
# watermark past T0 (so planned by ID after T0); prints the epoch ms when
# seen, or nothing after SECS.  Asked every 0.1 s on one session of its own:
# a psql per poll (Debian's wrapper is a Perl script, then a new backend)
# took about a third of a core from the start it was timing.  Should that
# session fail (a write to it, or no answer within 10 s), the rest of the
# wait polls with sql() as before.
wait_planned() {
	local id=$1 t0=$2 lim=$(($(ms) + $3 * 1000)) n rc=1 pipe q
	q="SELECT count(*) FROM shards WHERE leader = '$id' AND watermark > to_timestamp($t0 / 1000.0)"
	pipe=$(trap -p PIPE)
	trap '' PIPE # a session that died fails the write instead of killing the shell
	coproc WP { exec "$PSQL" "$PALISADE_PG" -XAtq 2>/dev/null; }
	local pid=$WP_PID in=${WP[1]} out=${WP[0]} live=1
	while [ "$(ms)" -lt $lim ]; do
		n=
		if [ $live = 1 ]; then
			if ! echo "$q;" >&"$in" 2>/dev/null || ! read -r -t 10 n <&"$out"; then
				live=0
				n=
			fi
		fi
		[ $live = 1 ] || n=$(sql_try "$q" 2>/dev/null)
		if [ "$n" = 16 ]; then
			ms
			rc=0
			break
		fi
		sleep 0.1
	done
	exec {in}>&- {out}<&-
	reap "$pid" 5
	eval "${pipe:-trap - PIPE}"
	return $rc
}

# lateness_stats LABEL T0 T1 (epoch seconds): effect applied (the sink's
# sink_effects.applied_at, clock_timestamp() of the applying transaction)
# minus the scheduled instant, in ms, for the effects of /effects/LABEL.
lateness_stats() {
	sql "SELECT extract(epoch FROM applied_at - scheduled_at) * 1000 FROM sink_effects
	     WHERE path = '/effects/$1' AND scheduled_at >= to_timestamp($2)
	     AND scheduled_at < to_timestamp($3)" | python3 tests/bench/report.py stats
}

# pg_cpu_us: the CPU time (user + sys) of the bench's PostgreSQL server so
# far, in microseconds: the postmaster (B_PG_PID) with what it reaped of
# its children that ended (cutime + cstime of /proc/PID/stat), plus every
# live child (backends, autovacuum, walwriter, checkpointer...).  The
# difference of two readings is the server's CPU between them, whatever
# connected and left meanwhile.  Clock ticks are 10 ms per process: read
# over a run of thousands of fires.
pg_cpu_us() {
	python3 - "$B_PG_PID" <<'PY'
import os, sys
pm, hz, t = sys.argv[1], os.sysconf("SC_CLK_TCK"), 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        continue  # ended meanwhile: the postmaster's cutime has it
    # f[0] is field 3 (state): ppid is field 4, utime..cstime 14..17
    if pid == pm:
        t += sum(int(x) for x in f[11:15])
    elif f[1] == pm:
        t += int(f[11]) + int(f[12])
print(t * 1000000 // hz)
PY
}

# The statement profile: pg_stat_statements, when the server loaded it
# (run.sh asks for it at start; track = all, so the statements inside SQL
# functions are counted as well as the calls that ran them).  stmt_reset
# creates the extension in the current database and zeroes its counters;
# stmt_top FIRES [N] prints the N (default 8) statements of the current
# database with the most execution time since, one line each: ms per 1,000
# fires, calls per fire, "top" or "nested" (run inside a function, whose
# own line counts it again) and the statement's start.  Nothing when the
# library is not loaded.
stmt_reset() {
	[ "$(sql "SHOW shared_preload_libraries" 2>/dev/null)" = pg_stat_statements ] || return 0
	sql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
}
stmt_top() {
	local fires=$1 n=${2:-8}
	[ "$(sql "SHOW shared_preload_libraries" 2>/dev/null)" = pg_stat_statements ] || return 0
	[ "${fires:-0}" -gt 0 ] || return 0
	sql "SELECT to_char(total_exec_time * 1000 / $fires, 'FM99990.00') || ' ms/1000 fires, '
	       || to_char(calls::numeric / $fires, 'FM9990.000') || ' calls/fire, '
	       || CASE WHEN toplevel THEN 'top' ELSE 'nested' END || ': '
	       || left(regexp_replace(query, '\s+', ' ', 'g'), 110)
	     FROM pg_stat_statements
	     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	     ORDER BY total_exec_time DESC LIMIT $n"
}
