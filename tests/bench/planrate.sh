#!/usr/bin/env bash
# tests/bench/planrate.sh BIN... - planning throughput next to its own
# ceiling, on one PostgreSQL 15 (fsync on), once per BIN directory (each
# holding `palisade`; they must share one schema).
#
#   ceiling   pgbench, 1 client: 1000-row INSERT ... ON CONFLICT DO NOTHING
#             into a copy of `triggers` (LIKE ... INCLUDING ALL: the same
#             columns, defaults, identity, checks, unique keys and partial
#             indexes) writing the columns the planner writes
#   planning  one controller node (16 shards) catching up a 120 s lookahead
#             of JOBS every-second jobs: trigger rows over the time from the
#             first shard acquired to the last row committed (and, for
#             comparison with run.sh, from node start)
#
# Prints figures and the ratio; asserts nothing.  BENCH_JOBS (2000),
# BENCH_LOOKAHEAD (120), BENCH_SECONDS (5, per pgbench run).
set -uo pipefail
cd "$(dirname "$0")/../.."
BINS=()
for b in "$@"; do BINS+=("$(cd "$b" && pwd)"); done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: planrate.sh BIN..." >&2; exit 2; }
JOBS=${BENCH_JOBS:-2000}
LOOKAHEAD=${BENCH_LOOKAHEAD:-120}
SECS=${BENCH_SECONDS:-5}

source tests/bench/devlib.sh # dev_cluster_up, sql, ms, ts_ms
export PALISADE_ZK_TICK_MS=100
dev_cluster_up planrate
PGBENCH=/usr/lib/postgresql/15/bin/pgbench

"${BINS[0]}/palisade" migrate >/dev/null || exit 1
conf=$PALISADE_STATE/node.yaml
cat >"$conf" <<YAML
node: {roles: [controller]}
cluster: {shards: 16}
controller: {lookahead: ${LOOKAHEAD}s, overlap: 10s, misfire_threshold: $((LOOKAHEAD + 60))s}
admin: {listen: "127.0.0.1:0"}
YAML
{
	echo "jobs:"
	for i in $(seq 1 "$JOBS"); do
		echo "  - {id: bench.job-$i, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:1/x\"}}"
	done
} >"$PALISADE_STATE/jobs.yaml"
"${BINS[0]}/palisade" apply --config "$conf" "$PALISADE_STATE/jobs.yaml" >/dev/null || exit 1

# ---- the ceiling: the planner's insert shape, the real indexes ---------------------------
sql "CREATE TABLE bench_triggers (LIKE triggers INCLUDING ALL);
     CREATE SEQUENCE bench_batch" >/dev/null
d=$PALISADE_STATE
cat >"$d/ceiling.sql" <<SQL
INSERT INTO bench_triggers (job_id, version, scheduled_at, partition, source, priority, due_at,
  shard, epoch, tenant, resource_group)
SELECT 'bench.job-' || (g % $JOBS), 1, to_timestamp(1800000000 + b.n * 1000 + g / $JOBS), 0,
  'schedule', 0, to_timestamp(1800000000 + b.n * 1000 + g / $JOBS), 0, 1, 'default', 'default'
  FROM (SELECT nextval('bench_batch') AS n) b, generate_series(0, 999) g
ON CONFLICT (job_id, scheduled_at, partition) WHERE request_id IS NULL DO NOTHING;
SQL
# The same with the batch the planner writes here: one shard's first tick,
# JOBS / 16 jobs x LOOKAHEAD s.
BIG=$((JOBS * LOOKAHEAD / 16))
sed -e "s/generate_series(0, 999)/generate_series(0, $((BIG - 1)))/" -e "s/b.n \* 1000/b.n * $BIG/" \
	"$d/ceiling.sql" >"$d/ceiling_big.sql"
tps() { "$PGBENCH" -n -f "$1" -c 1 -j 1 -T "$SECS" "$PALISADE_PG" 2>/dev/null | awk '/^tps/ {print $3}'; }
CEIL=$(awk "BEGIN {printf \"%d\", $(tps "$d/ceiling.sql") * 1000}")
CEIL_BIG=$(awk "BEGIN {printf \"%d\", $(tps "$d/ceiling_big.sql") * $BIG}")
echo "planrate: ceiling  1000-row INSERT ... ON CONFLICT DO NOTHING into a copy of triggers: $CEIL rows/s"
echo "planrate: ceiling  the same, $BIG-row batches (the planner's batch here): $CEIL_BIG rows/s"
sql "DROP TABLE bench_triggers" >/dev/null

# ---- palisade ----------------------------------------------------------------------------
want=$((JOBS * LOOKAHEAD * 9 / 10))
for bin in "${BINS[@]}"; do
	sql "TRUNCATE triggers CASCADE" >/dev/null 2>&1
	sql "UPDATE shards SET epoch = 0, leader = NULL, watermark = NULL;
	     UPDATE job_versions SET effective_from = NULL, activated_at = NULL, activated_epoch = NULL;
	     UPDATE jobs SET active_version = NULL; TRUNCATE misfires" >/dev/null
	sql "VACUUM ANALYZE triggers" >/dev/null
	sql CHECKPOINT >/dev/null
	log=$d/ctl.log
	t0=$(ms)
	"$bin/palisade" node --config "$conf" --node-id bench-ctl >"$log" 2>&1 &
	PID=$!
	# The node's own counter (a count(*) per poll would compete for the CPU).
	until grep -q admin.listening "$log" 2>/dev/null; do sleep 0.05; done
	port=$(grep -m1 admin.listening "$log" | sed 's/.*"port":\([0-9]*\).*/\1/')
	planned() { curl -s --noproxy '*' "http://127.0.0.1:$port/metrics" |
		awk '/^palisade_controller_triggers_planned_total/ {print int($2)} END {print 0}' | head -1; }
	while [ "$(planned)" -lt "$want" ]; do sleep 0.05; done
	t1=$(ms)
	rows=$(sql "select count(*) from triggers")
	ta=$(ts_ms controller.shard_acquired "$log")
	P=$((rows * 1000 / (t1 - ta)))
	printf 'planrate: %-36s %7d rows/s from the first shard acquired (%d rows in %d ms; %d rows/s from node start)\n' \
		"$bin" "$P" "$rows" "$((t1 - ta))" "$((rows * 1000 / (t1 - t0)))"
	echo "planrate: ratio planning / 1000-row ceiling = $(awk "BEGIN {printf \"%.2f\", $P / $CEIL}")," \
		"/ $BIG-row ceiling = $(awk "BEGIN {printf \"%.2f\", $P / $CEIL_BIG}")"
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	PID=
done
