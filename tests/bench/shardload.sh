#!/usr/bin/env bash
# tests/bench/shardload.sh N BIN... - one controller node leading a single
# shard of N jobs (hourly crons in six time zones) against its own PostgreSQL
# 15 and ZooKeeper, once per BIN directory (each holding `palisade`; they must
# share one schema).  Prints, per BIN:
#
#   acquire  election.won -> controller.shard_acquired (claim + job load)
#   stall    the longest gap between two committed planning ticks (scan
#            interval 1 s) over a window that holds a SIGHUP full reload:
#            the reload runs on the controller thread, so ticks wait for it
#
# and the time of the shard_jobs query itself (psql, text only).  N above
# 10000 is applied in files of 10000 jobs (apply caps a file at 4 MiB).
# Asserts nothing.  Heavy for N = 50000 (the apply alone takes about a
# minute): run it on a quiet machine, once.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${1:?usage: shardload.sh N BIN...}
shift
BINS=()
for b in "$@"; do BINS+=("$(cd "$b" && pwd)"); done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: shardload.sh N BIN..." >&2; exit 2; }
WINDOW=${SHARDLOAD_WINDOW:-25}

source tests/bench/devlib.sh # dev_cluster_up, sql, ms, ts_ms
export PALISADE_ZK_TICK_MS=100 PALISADE_PG_FAST=1
dev_cluster_up shardload

conf=$PALISADE_STATE/node.yaml
cat >"$conf" <<YAML
node: {roles: [controller]}
cluster: {shards: 1}
controller: {lookahead: 60s, overlap: 10s, misfire_threshold: 120s}
admin: {listen: "127.0.0.1:0"}
YAML
zones=(UTC Europe/Paris America/New_York Asia/Tokyo Australia/Sydney America/Sao_Paulo)
for f in $(seq 0 $(((N - 1) / 10000))); do
	lo=$((f * 10000 + 1)) hi=$(((f + 1) * 10000))
	[ $hi -gt "$N" ] && hi=$N
	{
		echo "jobs:"
		for i in $(seq $lo $hi); do
			echo "  - {id: load.job-$i, schedule: {cron: \"0 $((i % 60)) * * * ?\", timezone: ${zones[$((i % 6))]}}, target: {url: \"http://127.0.0.1:1/x\"}}"
		done
	} >"$PALISADE_STATE/jobs-$f.yaml"
done
"${BINS[0]}/palisade" migrate >/dev/null
t=$(ms)
"${BINS[0]}/palisade" apply --config "$conf" "$PALISADE_STATE"/jobs-*.yaml >/dev/null || exit 1
echo "shardload: $N jobs in one shard (applied in $(($(ms) - t)) ms), $(nproc) cores"

for bin in "${BINS[@]}"; do
	sql "UPDATE shards SET epoch = 0, leader = NULL" # a fresh claim for each binary
	log=$PALISADE_STATE/node.log
	"$bin/palisade" node --config "$conf" --node-id load >"$log" 2>&1 &
	PID=$!
	for _ in $(seq 1 1200); do grep -q shard_acquired "$log" && break; sleep 0.1; done
	acquire=$(($(ts_ms controller.shard_acquired "$log") - $(ts_ms election.won "$log")))
	port=$(grep -m1 admin.listening "$log" | sed 's/.*"port":\([0-9]*\).*/\1/')
	ticks() { curl -s --noproxy '*' "http://127.0.0.1:$port/metrics" |
		awk '/^palisade_controller_ticks_total/ {print $2}'; }
	# Past the first ticks, SIGHUP a full reload and watch the tick counter.
	sleep 3
	kill -HUP "$PID"
	last=$(ticks) last_t=$(ms) stall=0 end=$(($(ms) + WINDOW * 1000))
	while [ "$(ms)" -lt $end ]; do
		sleep 0.1
		n=$(ticks) now=$(ms)
		if [ -n "$n" ] && [ "$n" != "$last" ]; then
			[ $((now - last_t)) -gt $stall ] && stall=$((now - last_t))
			last=$n last_t=$now
		fi
	done
	[ $((now - last_t)) -gt $stall ] && stall=$((now - last_t))
	printf 'shardload: %-40s acquire %6d ms  longest tick gap with a full reload %6d ms\n' \
		"$bin" "$acquire" "$stall"
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	PID=
done
t=$(ms)
bytes=$(sql "SELECT coalesce(json_agg(x), '[]')::text FROM (SELECT j.job_id,
  (SELECT json_agg(json_build_object('version', v.version, 'spec', v.spec,
     'effective_from', floor(extract(epoch FROM v.effective_from))::bigint) ORDER BY v.version)
   FROM job_versions v WHERE v.job_id = j.job_id) AS versions
  FROM jobs j WHERE j.shard = 0) x" | wc -c)
echo "shardload: the shard's jobs as the reload reads them: $bytes bytes of JSON in $(($(ms) - t)) ms (psql)"
