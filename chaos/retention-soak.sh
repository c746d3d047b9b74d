#!/usr/bin/env bash
# chaos/retention-soak.sh - soak of bounded storage (docs/operations.md,
# "Retention"): N every-second jobs (default 2000: 2,000 fires/s) run for
# SOAK_SECS (default 1200) through one controller+executor node and the
# sink (--noop), with retention shortened to SOAK_KEEP (default 2m) on
# SOAK_INTERVAL ranges (default 30s), and misfires and audit_log too.  Every SOAK_SAMPLE seconds (60) it
# records the size of triggers and attempts (every partition, indexes
# included), the number of ranges and the fires completed since the last
# sample, and the live (non-terminal) triggers: a backlog the executor
# cannot drain keeps its ranges (never dropped), so the tables then grow
# with it and the bound fails - the box must keep up.  Checked: the tables
# stay bounded (the last size is at most
# SOAK_BOUND (3) times the size at the first sample after the first drop),
# throughput stays flat (the last third's mean rate at least 80 % of the
# first third's), `palisade verify` is clean over the horizon's window,
# and no live trigger was lost (every instant since the horizon has its
# trigger: that is what verify counts).  Long: run it by name, e.g.
#   bash tests/integration/run.sh chaos/retention-soak.sh
#   SOAK_SECS=300 SOAK_JOBS=500 bash tests/integration/run.sh chaos/retention-soak.sh
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "bounded storage under load: with a short retention, triggers and attempts stay bounded, throughput stays flat, verify is clean within the horizon and nothing live is dropped"
declare -A FIG
JOBS=${SOAK_JOBS:-2000} SECS=${SOAK_SECS:-1200} KEEP=${SOAK_KEEP:-2m} IV=${SOAK_INTERVAL:-30s}
SAMPLE=${SOAK_SAMPLE:-60} BOUND=${SOAK_BOUND:-3}

fresh_db soak_retention
expect_exit "migrate" 0 "$PAL" migrate
start_sink --noop || { finish; exit 1; }
SHARDS=4 write_conf "$CLUSTER_CONF" \
	"executor: {batch: 512, max_inflight: 2048, lease: 30s, heartbeat: 5s}" \
	"retention: {triggers: $KEEP, partition_interval: $IV, ahead: 2m, check_interval: 10s, misfires: $KEEP, audit: $KEEP}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
{
	echo "jobs:"
	for i in $(seq 1 "$JOBS"); do
		echo "  - {id: soak.job-$i, schedule: {cron: \"* * * * * ?\"}, misfire: {policy: skip},"
		echo "     target: {url: \"http://$SINK_ADDR/effects/soak\"}}"
	done
} >"$PALISADE_TEST_TMP/soak.yaml"
expect_exit "apply $JOBS every-second jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$PALISADE_TEST_TMP/soak.yaml"
start_node s1
wait_until "the node leads every shard" 60 bash -c "[ \"\$(psql \"\$PALISADE_PG\" -XAtqc 'select count(*) from shards where leader is not null')\" = 4 ]"
size() { sql "select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) from pg_inherits i where i.inhparent = '$1'::regclass"; }
succ() { metric s1 'palisade_executor_results_total{state="succeeded"}'; }
t_start=$(date +%s)
t0=$t_start
prev=$(succ)
rates=() tsz=() asz=()
first_drop_size=
echo "    t_s  fires/s  triggers_MB  attempts_MB  ranges  rows_triggers  live_triggers  dropped_total  misfires  audit"
while [ $(($(date +%s) - t_start)) -lt "$SECS" ]; do
	sleep "$SAMPLE"
	now=$(date +%s)
	cur=$(succ)
	rate=$(( (${cur%.*} - ${prev%.*}) / (now - t0) ))
	prev=$cur t0=$now
	ts=$(size triggers) as=$(size attempts)
	ranges=$(sql "select count(*) from palisade_partitions")
	rows=$(sql "select count(*) from triggers")
	live=$(sql "select count(*) from triggers where state not in ('succeeded', 'failed', 'cancelled', 'skipped')")
	dropped=$(metric s1 palisade_retention_dropped_partitions_total)
	mrows=$(sql "select count(*) from misfires") arows=$(sql "select count(*) from audit_log")
	rates+=("$rate") tsz+=("$ts") asz+=("$as")
	[ -z "$first_drop_size" ] && [ "${dropped%.*}" -gt 0 ] && first_drop_size=$((ts + as))
	printf "    %4d  %7d  %11.1f  %11.1f  %6d  %13d  %13d  %13d  %8d  %5d\n" $((now - t_start)) "$rate" \
		"$(echo "$ts / 1048576" | bc -l)" "$(echo "$as / 1048576" | bc -l)" "$ranges" "$rows" "$live" "${dropped%.*}" "$mrows" "$arows"
done
n=${#rates[@]}
last=$(( ${tsz[$((n - 1))]} + ${asz[$((n - 1))]} ))
check "ranges were dropped during the soak" [ -n "$first_drop_size" ]
check "the tables stay bounded: $((last / 1048576)) MB at the end <= $BOUND x $(( ${first_drop_size:-0} / 1048576 )) MB after the first drop" \
	[ "$last" -le $((BOUND * ${first_drop_size:-0})) ]
third=$(( n / 3 > 0 ? n / 3 : 1 ))
a=0 b=0
for ((i = 0; i < third; i++)); do a=$((a + rates[i])); b=$((b + rates[n - 1 - i])); done
a=$((a / third)) b=$((b / third))
check "throughput stays flat: last third $b fires/s >= 80 % of the first third's $a" [ $((b * 100)) -ge $((a * 80)) ]
FIG[first_third_fires_per_s]=$a FIG[last_third_fires_per_s]=$b FIG[end_bytes]=$last FIG[after_first_drop_bytes]=${first_drop_size:-0}
FIG[kept_partitions_max]=$(grep -c '"event":"retention.kept"' "$NODE_DIR/s1.log")
dl=$(grep -c '"event":"executor.claim_failed"' "$NODE_DIR/s1.log")
expect_eq "no claim failed (a round's DDL once deadlocked with the claims)" 0 "$dl"
[ "$dl" -gt 0 ] && grep '"event":"executor.claim_failed"' "$NODE_DIR/s1.log" |
	python3 -c 'import json,sys,collections; print(collections.Counter(json.loads(l).get("error","")[:120] for l in sys.stdin).most_common(3))' | sed 's/^/    claim_failed: /'
FIG[uptime_load]="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "    load average at the end: ${FIG[uptime_load]} (2 cores)"
h=$("$PAL" retention --horizon 2>"$PALISADE_TEST_TMP/horizon.err") || echo "    retention --horizon failed: $(head -2 "$PALISADE_TEST_TMP/horizon.err")"
from=$(date -u -d "$h + 30 seconds" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "$h")
to=$(rfc3339_ago 30)
expect_exit "verify is clean from the horizon ($h) to 30 s ago" 0 "$PAL" verify --from "$from" --to "$to"
echo "$OUT" | tail -3 | sed 's/^/    /'
per=$(sql "select round((select sum(pg_total_relation_size(i.inhrelid)) from pg_inherits i where i.inhparent in ('triggers'::regclass, 'attempts'::regclass))::numeric / greatest((select count(*) from triggers), 1))")
FIG[bytes_per_fire]=$per
pass "figure: bytes per fire (triggers + attempts, indexes included): $per"
stop_node s1
write_report retention-soak
finish
