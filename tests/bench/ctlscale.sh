#!/usr/bin/env bash
# tests/bench/ctlscale.sh N BIN... - the controller at scale: N jobs in 16
# shards on its own PostgreSQL 15 (fsync on) and ZooKeeper, once per BIN
# directory (each holding `palisade`; they must share one schema).
#
# The jobs are written with SQL, not `palisade apply` (too slow for 1M
# today): one job is applied for real and its rows (jobs, job_versions with
# the canonical spec jsonb) are copied N times with the id, the cron and the
# shard substituted (shard = FNV-1a 64 of the id mod 16, computed here as
# pal_job_shard does).  Crons are daily, spread over the minutes of the day
# ("0 M H * * ?"), in six time zones: most ticks find every job idle.
#
# Per BIN it prints:
#   start     node launch -> every shard led and planned (its watermark past
#             the launch instant), first start: every version still to be
#             activated (as right after an apply)
#   restart   the same after kill -TERM and a new start (versions active)
#   activated node launch -> every version activated (the ones with no
#             instant soon are activated in the background)
#   rss       the node's VmRSS once planned, and its peak (VmHWM)
#   tick      the median and max planning-transaction time of a shard over
#             10 s with every job idle (palisade_controller_tick_seconds)
#   failover  with CTLSCALE_FAILOVER=1: a second node joins, takes half the
#             shards (balance); kill -9 of the first; kill -> every shard
#             led by the survivor and planned past the kill (session 6 s)
# CTLSCALE_SETUP_ONLY=1 writes the jobs, prints the environment and leaves
# the servers running.  CTLSCALE_LOGS=DIR keeps the node logs (controller.shard_acquired has the
# load time of each shard, controller.shard_planned its first tick).
# Asserts nothing; compare runs made back to back.
set -uo pipefail
cd "$(dirname "$0")/../.."
N=${1:?usage: ctlscale.sh N BIN...}
shift
BINS=()
for b in "$@"; do BINS+=("$(cd "$b" && pwd)"); done
[ ${#BINS[@]} -gt 0 ] || { echo "usage: ctlscale.sh N BIN..." >&2; exit 2; }

source tests/ports.sh
export PALISADE_STATE=$(mktemp -d /tmp/palisade-ctlscale.XXXXXX)
chmod 755 "$PALISADE_STATE"
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port)
export PALISADE_ZK_TICK_MS=100
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	bash ops/devcluster.sh down >/dev/null 2>&1
	bash ops/devcluster.sh destroy >/dev/null 2>&1
	rm -rf "$PALISADE_STATE"
}
trap cleanup EXIT
eval "$(bash ops/devcluster.sh up 2>/dev/null)"
sql() { psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
ms() { date +%s%3N; }

conf=$PALISADE_STATE/node.yaml
cat >"$conf" <<YAML
node: {roles: [controller]}
cluster: {shards: 16}
zookeeper: {session_timeout: 6s}
admin: {listen: "127.0.0.1:0"}
YAML
cat >"$PALISADE_STATE/tpl.yaml" <<YAML
jobs:
  - {id: tpl.job, schedule: {cron: "0 0 0 * * ?", timezone: UTC}, target: {url: "http://127.0.0.1:1/x"}}
YAML
"${BINS[0]}/palisade" migrate >/dev/null || exit 1
"${BINS[0]}/palisade" apply --config "$conf" "$PALISADE_STATE/tpl.yaml" >/dev/null || exit 1

t=$(ms)
python3 - "$N" >"$PALISADE_STATE/ids.csv" <<'PY'
import sys
n = int(sys.argv[1])
out = []
for i in range(1, n + 1):
    jid = "scale.job-%d" % i
    h = 0xcbf29ce484222325
    for b in jid.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    out.append("%s,%d,%d" % (jid, h % 16, i))
sys.stdout.write("\n".join(out) + "\n")
PY
sql "CREATE UNLOGGED TABLE bench_ids (job_id text, shard int, i int)"
psql "$PALISADE_PG" -XAtq -c "\\copy bench_ids FROM '$PALISADE_STATE/ids.csv' CSV" || exit 1
sql "
INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version)
  SELECT b.job_id, j.tenant, j.resource_group, b.shard, 1 FROM bench_ids b, jobs j WHERE j.job_id = 'tpl.job';
INSERT INTO job_versions (job_id, version, spec, digest, cron, timezone, misfire_policy,
  catchup_window_ms, max_catchup, overlap_policy, priority, deadline_ms, max_in_flight,
  idempotency_key, retry, resource_group, target, target_host, partitions, created_by)
  SELECT b.job_id, 1,
    jsonb_set(jsonb_set(jsonb_set(v.spec, '{id}', to_jsonb(b.job_id)),
      '{schedule,cron}', to_jsonb(c.cron)), '{schedule,timezone}', to_jsonb(c.tz)),
    md5(b.job_id), c.cron, c.tz, v.misfire_policy, v.catchup_window_ms, v.max_catchup,
    v.overlap_policy, v.priority, v.deadline_ms, v.max_in_flight, v.idempotency_key, v.retry,
    v.resource_group, v.target, v.target_host, v.partitions, v.created_by
  FROM bench_ids b CROSS JOIN LATERAL (SELECT
      format('0 %s %s * * ?', b.i % 60, (b.i / 60) % 24) AS cron,
      (ARRAY['UTC','Europe/Paris','America/New_York','Asia/Tokyo','Australia/Sydney',
             'America/Sao_Paulo'])[b.i % 6 + 1] AS tz) c,
    job_versions v WHERE v.job_id = 'tpl.job';
DELETE FROM job_versions WHERE job_id = 'tpl.job'; DELETE FROM audit_log; DELETE FROM jobs WHERE job_id = 'tpl.job';
DROP TABLE bench_ids" >/dev/null || exit 1
sql "VACUUM ANALYZE jobs" && sql "VACUUM ANALYZE job_versions" && sql CHECKPOINT
echo "ctlscale: $N jobs in 16 shards written in $(($(ms) - t)) ms (SQL), $(nproc) cores, fsync on"

if [ -n "${CTLSCALE_SETUP_ONLY:-}" ]; then
	# Leave the servers up for experiments (psql "$PALISADE_PG"); stop them
	# with PALISADE_STATE=... ops/devcluster.sh destroy.
	trap - EXIT
	echo "export PALISADE_STATE=$PALISADE_STATE PALISADE_PG='$PALISADE_PG' PALISADE_ZK='$PALISADE_ZK'"
	exit 0
fi
port_of() { grep -m1 admin.listening "$1" | sed 's/.*"port":\([0-9]*\).*/\1/'; }
# Wait until every shard is led by NODE and planned by a tick begun after
# epoch-ms T (its watermark at T + the 5 s lookahead, or T + LEAD s).
wait_planned() {
	local node=$1 t=$2 lim=$(($(ms) + ${3:-300} * 1000)) lead=${4:-5}
	while [ "$(ms)" -lt $lim ]; do
		[ "$(sql "SELECT count(*) FROM shards WHERE leader = '$node'
			AND updated_at > to_timestamp($t / 1000.0)
			AND watermark >= to_timestamp(floor($t / 1000.0) + $lead)")" = 16 ] && { ms; return 0; }
		sleep 0.1
	done
	echo TIMEOUT
	return 1
}
rss() { awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {printf "%d MiB (peak %d MiB)", r/1024, h/1024}' "/proc/$1/status"; }
tick_stats() { # PORT: sample per-shard tick seconds for 10 s; median and max in ms
	local port=$1 end=$(($(ms) + 10000))
	while [ "$(ms)" -lt $end ]; do
		curl -s --noproxy '*' "http://127.0.0.1:$port/metrics" |
			awk '/^palisade_controller_tick_seconds\{/ {print $2 * 1000}'
		sleep 0.5
	done | sort -n | awk '{v[NR]=$1} END {printf "median %.0f ms  max %.0f ms (%d samples)", v[int((NR+1)/2)], v[NR], NR}'
}
start_node() { # BIN ID LOG -> PID in $NODE_PID
	"$1/palisade" node --config "$conf" --node-id "$2" >"$3" 2>&1 &
	NODE_PID=$!
	PIDS+=("$NODE_PID")
}
reset_db() {
	sql "UPDATE shards SET epoch = 0, leader = NULL, watermark = NULL;
	     UPDATE job_versions SET effective_from = NULL, activated_at = NULL, activated_epoch = NULL;
	     UPDATE jobs SET active_version = NULL; TRUNCATE triggers CASCADE; TRUNCATE misfires;
	     DELETE FROM audit_log" >/dev/null
	sql "VACUUM ANALYZE job_versions" && sql "VACUUM ANALYZE jobs" && sql "VACUUM triggers" && sql CHECKPOINT
}
# Stop a node by PID and wait for it (the election znodes go with it).
stop_node() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

for bin in "${BINS[@]}"; do
	reset_db
	log=$PALISADE_STATE/n1.log
	t0=$(ms)
	start_node "$bin" n1 "$log"
	p1=$NODE_PID
	t1=$(wait_planned n1 "$t0")
	printf 'ctlscale: %-36s start    %6s ms  rss %s\n' "$bin" "$((t1 - t0))" "$(rss "$p1")"
	# Activations of jobs with no instant soon follow in the background
	# (docs/controller.md); sample idle ticks once they are done.
	for _ in $(seq 1 1800); do
		[ "$(sql "SELECT count(*) FROM job_versions WHERE effective_from IS NULL")" = 0 ] && break
		sleep 0.5
	done
	printf 'ctlscale: %-36s activated %5s ms  (every version, from node launch)\n' "$bin" "$(($(ms) - t0))"
	sleep 2
	printf 'ctlscale: %-36s tick     %s  rss %s\n' "$bin" "$(tick_stats "$(port_of "$log")")" "$(rss "$p1")"
	stop_node "$p1"
	# A planned shard must be a tick of the new node: its watermark below
	# what that tick writes.
	sql "UPDATE shards SET leader = NULL, watermark = watermark - interval '10 s'" >/dev/null
	t0=$(ms)
	start_node "$bin" n1 "$log"
	p1=$NODE_PID
	t1=$(wait_planned n1 "$t0")
	printf 'ctlscale: %-36s restart  %6s ms  rss %s\n' "$bin" "$((t1 - t0))" "$(rss "$p1")"
	if [ "${CTLSCALE_FAILOVER:-0}" = 1 ]; then
		start_node "$bin" n2 "$PALISADE_STATE/n2.log"
		p2=$NODE_PID
		for _ in $(seq 1 600); do
			[ "$(sql "SELECT count(*) FROM shards WHERE leader = 'n2'")" -ge 8 ] && break
			sleep 0.1
		done
		sleep 3
		held=$(sql "SELECT count(*) FROM shards WHERE leader = 'n1'")
		k=$(ms)
		kill -9 "$p1"
		wait "$p1" 2>/dev/null
		# +6: past any watermark the killed node wrote (at most its now + 5).
		t1=$(wait_planned n2 "$k" 120 6)
		printf 'ctlscale: %-36s failover %6s ms  (kill -9 of the node leading %s shards, session 6 s)\n' \
			"$bin" "$((t1 - k))" "$held"
		stop_node "$p2"
	else
		stop_node "$p1"
	fi
	if [ -n "${CTLSCALE_LOGS:-}" ]; then
		mkdir -p "$CTLSCALE_LOGS"
		tag=$(echo "$bin" | tr / _)
		cp "$PALISADE_STATE"/n*.log "$CTLSCALE_LOGS/" 2>/dev/null
		for f in "$CTLSCALE_LOGS"/n*.log; do mv "$f" "$CTLSCALE_LOGS/$tag.$(basename "$f")"; done
	fi
done
