#!/usr/bin/env bash
# The console's cost follows the live work, not the history the triggers
# table keeps: with a million finished triggers (and a few hundred live
# ones) the cluster view answers within a bound, reading the live states
# through their partial indexes and the finished ones' counts from the
# planner's statistics (marked as estimates).  SIZE (default 1,000,000)
# finished triggers are inserted with generate_series.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console stays fast however much history the triggers table holds: its counts are bounded queries over live triggers, and estimates for finished ones"
T0=$SECONDS
SIZE=${SIZE:-300000}

fresh_db it_console_scale
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
stale_partition scale.job
sql "ALTER TABLE $PART SET (autovacuum_enabled = on)"
sql "$(due_sql scale.job 300)" >/dev/null
t=$SECONDS
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, state, finished_at)
     SELECT 'scale.job', 1, t, 0, 'schedule', 'default', 'default', t, 0,
            CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'succeeded' END, t
     FROM (SELECT g, greatest(date_trunc('day', now()) + interval '3 seconds', now() - interval '1 minute')
             - interval '2 seconds' - g * interval '1 microsecond' AS t FROM generate_series(1, $SIZE) g) x" >/dev/null
sql "ANALYZE triggers" >/dev/null
sql "ANALYZE $PART" >/dev/null
echo "    figure: $(sql "select count(*) from triggers") triggers ($SIZE finished) inserted and analysed in $((SECONDS - t)) s"

SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1 --roles controller
A=${NODE_ADMIN[s1]}
wait_until "s1 answers" 20 curl -sf "http://$A/healthz"
view=$(curl -s "http://$A/api/cluster")
echo "    database: $(python3 -c 'import json,sys; print(json.load(sys.stdin)["database"])' <<<"$view")"
expect_eq "the live states are counted exactly (300 pending)" 300 \
	"$(python3 -c 'import json,sys; print(json.load(sys.stdin)["triggers"].get("pending"))' <<<"$view")"
est=$(python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["triggers"].get("succeeded", 0), " ".join(sorted(v.get("triggers_estimated", []))))' <<<"$view")
echo "    figure: succeeded estimated at ${est%% *} of $((SIZE - SIZE / 50)); estimated states: ${est#* }"
check "the finished states are estimates, named as such, within 10 % of the truth" \
	python3 -c 'import sys; n, want = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if abs(n - want) <= want / 10 and "succeeded" in sys.argv[3] else 1)' \
	"${est%% *}" "$((SIZE - SIZE / 50))" "$est"
check "the page marks the estimate" bash -c 'curl -s "http://$1/console" | grep -q "<tr><td>succeeded</td><td class=\"num\"><span title=\"an estimate from the table statistics\">&asymp;</span>"' _ "$A"
expect_eq "palisade status still counts every state exactly" "$((SIZE - SIZE / 50)) $((SIZE / 50)) 300" \
	"$("$PAL" status --output json | python3 -c 'import json,sys; t=json.load(sys.stdin)["triggers"]; print(t["succeeded"], t["failed"], t["pending"])')"
# cpu_ms PID: the user and system CPU time PID has used, in ms (/proc).
cpu_ms() { awk -v t="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / t)}' "/proc/$1/stat"; }
# route_ms PATH: "MEDIAN T1 ... T7 NODE PG", the times of 7 answers of PATH in
# ms after one that warms the console's connection, and the CPU time per
# answer of the node and of the console's PostgreSQL backend (what a loaded
# machine does not inflate); fails on an answer not 200.
route_ms() {
	local ms=() i code t n0 p0 pg
	curl -s -o /dev/null "http://$A$1"
	pg=$(sql "select pid from pg_stat_activity where datname = current_database() and application_name = 'palisade-console'")
	n0=$(cpu_ms "${NODE_PID[s1]}") p0=$(cpu_ms "$pg")
	for i in 1 2 3 4 5 6 7; do
		read -r code t < <(curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "http://$A$1")
		[ "$code" = 200 ] || { echo "    $1 answered $code"; return 1; }
		ms+=("$(awk '{printf "%d", $1 * 1000}' <<<"$t")")
	done
	echo "$(printf '%s\n' "${ms[@]}" | sort -n | sed -n 4p) ${ms[*]}" \
		"$((($(cpu_ms "${NODE_PID[s1]}") - n0) / 7)) $((($(cpu_ms "$pg") - p0) / 7))"
}
declare -A MED
for r in /api/cluster "/api/cluster?section=jobs&q=scale" /console "/console?q=scale" \
	"/api/job?id=scale.job" "/console/job?id=scale.job"; do
	t=$(route_ms "$r") || t=99999
	read -r -a f <<<"$t"
	MED[$r]=${f[0]}
	echo "    figure: $r at $SIZE finished triggers: median ${f[0]} ms of 7 (${f[*]:1:7});" \
		"CPU per answer: node ${f[8]:-?} ms, PostgreSQL ${f[9]:-?} ms"
done
for r in "${!MED[@]}"; do
	check "$r answers in under 300 ms (median; 100 ms on an idle box): ${MED[$r]} ms" [ "${MED[$r]}" -lt 300 ]
done
echo "    figure: test_console_scale took $((SECONDS - T0)) s"
finish
