#!/usr/bin/env bash
# tests/bench/execab.sh [-n N] [-r RUNS] [-k "NODES..."] BIN... - execution
# throughput of executor nodes per binary directory, A/B in one session: for
# each run, each BIN and each node count of -k (default 1) in turn, N due
# triggers are planted with SQL in that binary's own database (an older
# binary refuses a newer schema), that many executor nodes (batch 256,
# max_inflight 1024 each) drain them through `palisade-sink --noop`,
# and the rate from node start to the last commit is printed.  Alternating
# the binaries spreads the machine's noise over both.  Next to the rate,
# the CPU time each side spent per trigger (µs, from /proc/PID/stat: the
# PostgreSQL server with all its processes, the nodes, the sink): on a
# shared, noisy box the CPU per trigger moves far less than the rate does.
# Its own PostgreSQL (fsync on) and ZooKeeper on free ports, stopped at the
# end; asserts nothing.
#
#   bash tests/bench/execab.sh -n 20000 -r 3 /tmp/old/build-old/bin build/bin
set -uo pipefail
cd "$(dirname "$0")/../.."
N=20000 RUNS=3 KS=1
while getopts n:r:k: o; do
	case $o in
	n) N=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	k) KS=$OPTARG ;;
	*) echo "usage: $0 [-n N] [-r RUNS] [-k NODES] BIN..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n N] [-r RUNS] [-k NODES] BIN..." >&2; exit 2; }
BINS=()
for b in "$@"; do BINS+=("$(cd "$b" && pwd)"); done

source tests/ports.sh # free_port
export PALISADE_STATE=$(mktemp -d /tmp/palisade-execab.XXXXXX)
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}
trap cleanup EXIT
eval "$(bash ops/devcluster.sh up 2>/dev/null)" || { echo "execab: dev cluster failed"; exit 1; }
ADMIN="host=127.0.0.1 port=$PALISADE_PG_PORT user=palisade"
ms() { date +%s%3N; }
TCK=$(getconf CLK_TCK)
# cpu_ticks PID... -> utime+stime summed (clock ticks) of live PIDs
cpu_ticks() {
	local p t=0 f
	for p in "$@"; do
		f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
		t=$((t + ${f% *} + ${f#* }))
	done
	echo "$t"
}
# The server's processes: the postmaster and its children (a backend
# that ends within the window is missed; the node's connections live
# through it).
pg_pids() {
	local pm
	pm=$(head -1 "$(cat "$PALISADE_STATE/pg.path")/data/postmaster.pid")
	echo "$pm" $(ps -o pid= --ppid "$pm")
}
sport=$(free_port)
"${BINS[0]}/palisade-sink" --listen "127.0.0.1:$sport" --noop >"$PALISADE_STATE/sink.log" 2>&1 &
PIDS+=($!)
sleep 0.5
cat >"$PALISADE_STATE/job.yaml" <<YAML
jobs:
  - {id: bench.exec, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:$sport/effects/bench"}}
YAML
cat >"$PALISADE_STATE/exec.yaml" <<YAML
node: {roles: [executor]}
cluster: {shards: 16}
executor: {batch: 256, max_inflight: 1024, lease: 30s, heartbeat: 5s}
admin: {listen: "127.0.0.1:0"}
YAML
for i in "${!BINS[@]}"; do
	db=execab_$i
	psql "$ADMIN dbname=postgres" -XAtq -c "CREATE DATABASE $db" >/dev/null
	PALISADE_PG="$ADMIN dbname=$db" "${BINS[$i]}/palisade" migrate >/dev/null
	PALISADE_PG="$ADMIN dbname=$db" "${BINS[$i]}/palisade" apply --config "$PALISADE_STATE/exec.yaml" \
		"$PALISADE_STATE/job.yaml" >/dev/null
	psql "$ADMIN dbname=$db" -XAtq -c "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"
done
echo "execab: $N due triggers per run, executor nodes: $KS, $(nproc) cores"
for r in $(seq 1 "$RUNS"); do
	for i in "${!BINS[@]}"; do
	for k in $KS; do
		db="$ADMIN dbname=execab_$i"
		sql() { psql "$db" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
		sql "DELETE FROM attempts; DELETE FROM tickets; DELETE FROM triggers"
		sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
		     SELECT 'bench.exec', 1, now() - interval '1 hour' + g * interval '1 ms', 0, 'schedule', 'default',
		            'default', now() - interval '1 hour' + g * interval '1 ms', 0 FROM generate_series(1, $N) g"
		sql "VACUUM ANALYZE triggers"
		t0=$(ms)
		pg0=$(cpu_ticks $(pg_pids)) sk0=$(cpu_ticks "${PIDS[0]}")
		nodes=()
		for j in $(seq 1 "$k"); do
			PALISADE_PG="$db" "${BINS[$i]}/palisade" node --config "$PALISADE_STATE/exec.yaml" \
				--node-id "ab$i-$j" >"$PALISADE_STATE/node-$i-$j.log" 2>&1 &
			nodes+=($!)
		done
		while [ "$(sql "select count(*) from triggers where state = 'succeeded'")" -lt "$N" ]; do
			sleep 0.1
			[ $(($(ms) - t0)) -gt 300000 ] && break
		done
		t1=$(ms)
		pg1=$(cpu_ticks $(pg_pids)) sk1=$(cpu_ticks "${PIDS[0]}") nd=$(cpu_ticks "${nodes[@]}")
		kill -TERM "${nodes[@]}"
		wait "${nodes[@]}" 2>/dev/null
		done_n=$(sql "select count(*) from triggers where state = 'succeeded'")
		us() { echo $(($1 * 1000000 / TCK / (done_n > 0 ? done_n : 1))); }
		echo "execab: run $r ${BINS[$i]}, $k node(s): $((done_n * 1000 / (t1 - t0))) triggers/s ($done_n in $((t1 - t0)) ms);" \
			"CPU µs/trigger: pg $(us $((pg1 - pg0))) nodes $(us "$nd") sink $(us $((sk1 - sk0)))"
	done
	done
done
