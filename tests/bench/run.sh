#!/usr/bin/env bash
# tests/bench/run.sh BIN - `make bench`: palisade's throughput next to this
# machine's own PostgreSQL ceiling, measured in the same run on the same
# (durable: fsync on) server.  Prints figures and ratios; asserts nothing.
#
#   ceiling 1  single-row commits/s (pgbench, 1 client)     -> commit latency
#   ceiling 2  rows/s of 1000-row INSERT ... SELECT          -> planning ceiling
#   ceiling 3  rows/s of 100-row UPDATE ... SKIP LOCKED      -> claim ceiling
#   palisade   planning: rows/s a controller writes catching up a 120 s lookahead
#   palisade   execution: triggers/s claimed, called (no-op sink) and committed
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=$(cd "${1:-bin}" && pwd)
PAL=$BIN/palisade
JOBS=${BENCH_JOBS:-2000}
LOOKAHEAD=${BENCH_LOOKAHEAD:-120}
EXEC_TRIGGERS=${BENCH_TRIGGERS:-20000}
SECS=${BENCH_SECONDS:-5}

source tests/ports.sh # free_port (the working directory is the checkout)
export PALISADE_STATE=$(mktemp -d /tmp/palisade-bench.XXXXXX)
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}
trap cleanup EXIT
eval "$(bash ops/devcluster.sh up 2>/dev/null)"
sql() { psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
ms() { date +%s%3N; }
PGBENCH=/usr/lib/postgresql/15/bin/pgbench
echo "bench: PostgreSQL 15 on 127.0.0.1:$PALISADE_PG_PORT (fsync on), $(nproc) cores"

# ---- the PostgreSQL ceiling ------------------------------------------------------------
sql "CREATE TABLE bench_c (id bigserial primary key, a int, b text)"
sql "CREATE TABLE bench_q (id bigserial primary key, state text, owner text, fence bigint)"
sql "CREATE INDEX ON bench_q (id) WHERE state = 'pending'"
d=$(mktemp -d)
echo "INSERT INTO bench_c (a, b) VALUES (1, 'x');" >"$d/commit.sql"
echo "INSERT INTO bench_c (a, b) SELECT g, 'x' FROM generate_series(1, 1000) g;" >"$d/batch.sql"
cat >"$d/claim.sql" <<'SQL'
UPDATE bench_q q SET state = 'running', owner = 'b', fence = q.id
  FROM (SELECT id FROM bench_q WHERE state = 'pending' ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED) c
 WHERE q.id = c.id;
SQL
tps() { "$PGBENCH" -n -f "$1" -c "$2" -j "$2" -T "$SECS" "$PALISADE_PG" 2>/dev/null | awk '/^tps/ {print int($3)}'; }
C1=$(tps "$d/commit.sql" 1)
C2=$(( $(tps "$d/batch.sql" 1) * 1000 ))
sql "INSERT INTO bench_q (state) SELECT 'pending' FROM generate_series(1, 3000000)"
C3=$(( $(tps "$d/claim.sql" 2) * 100 ))
echo "ceiling: single-row commits      $C1 /s  ($(awk "BEGIN {printf \"%.2f\", 1000 / $C1}") ms per commit)"
echo "ceiling: 1000-row batch insert   $C2 rows/s"
echo "ceiling: 100-row SKIP LOCKED     $C3 rows/s (2 clients)"
sql "DROP TABLE bench_c; DROP TABLE bench_q"

# ---- palisade: planning -----------------------------------------------------------------
"$PAL" migrate >/dev/null
conf=$PALISADE_STATE/bench.yaml
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
"$PAL" apply --config "$conf" "$PALISADE_STATE/jobs.yaml" >/dev/null
want=$((JOBS * LOOKAHEAD * 9 / 10))
t0=$(ms)
"$PAL" node --config "$conf" --node-id bench-ctl >"$PALISADE_STATE/ctl.log" 2>&1 &
PIDS+=($!)
while [ "$(sql "select count(*) from triggers")" -lt "$want" ]; do sleep 0.2; done
t1=$(ms)
rows=$(sql "select count(*) from triggers")
P=$(( rows * 1000 / (t1 - t0) ))
echo "palisade: planning               $P rows/s ($rows trigger rows for $JOBS jobs x ${LOOKAHEAD} s, from node start)"
echo "ratio:    planning / batch-insert ceiling = $(awk "BEGIN {printf \"%.2f\", $P / $C2}")"
kill -TERM "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null; PIDS=()

# ---- palisade: execution ----------------------------------------------------------------
sport=$(free_port)
"$BIN/palisade-sink" --listen "127.0.0.1:$sport" --noop >"$PALISADE_STATE/sink.log" 2>&1 &
PIDS+=($!)
sleep 0.5
sql "DELETE FROM triggers"
cat >"$PALISADE_STATE/exec-job.yaml" <<YAML
jobs:
  - {id: bench.exec, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:$sport/effects/bench"}}
YAML
"$PAL" apply --config "$conf" "$PALISADE_STATE/exec-job.yaml" >/dev/null
# Activate it (a controller does this) and plant EXEC_TRIGGERS due triggers.
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0 WHERE job_id = 'bench.exec'"
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'bench.exec', 1, now() - interval '1 hour' + g * interval '1 ms', 0, 'schedule', 'default', 'default',
            now() - interval '1 hour' + g * interval '1 ms', 0 FROM generate_series(1, $EXEC_TRIGGERS) g"
cat >"$PALISADE_STATE/exec.yaml" <<YAML
node: {roles: [executor]}
cluster: {shards: 16}
executor: {batch: 256, max_inflight: 512, lease: 30s, heartbeat: 5s}
admin: {listen: "127.0.0.1:0"}
YAML
t0=$(ms)
"$PAL" node --config "$PALISADE_STATE/exec.yaml" --node-id bench-exec >"$PALISADE_STATE/exec.log" 2>&1 &
PIDS+=($!)
while [ "$(sql "select count(*) from triggers where state = 'succeeded'")" -lt "$EXEC_TRIGGERS" ]; do
	sleep 0.2
	[ $(( $(ms) - t0 )) -gt 300000 ] && { echo "bench: execution did not finish in 300 s"; break; }
done
t1=$(ms)
done_n=$(sql "select count(*) from triggers where state = 'succeeded'")
E=$(( done_n * 1000 / (t1 - t0) ))
echo "palisade: execution              $E triggers/s ($done_n claimed, called over HTTP, committed; 1 node, no-op sink)"
echo "ratio:    execution / SKIP LOCKED claim ceiling = $(awk "BEGIN {printf \"%.2f\", $E / $C3}")"
echo "ratio:    execution / single-row commit rate    = $(awk "BEGIN {printf \"%.2f\", $E / $C1}")"
