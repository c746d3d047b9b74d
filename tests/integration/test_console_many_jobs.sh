#!/usr/bin/env bash
# The cluster view with a full page of jobs that each have a long history:
# 200 jobs (the page) of 600 past instants each (120,000 triggers, 200
# minutely jobs over 10 hours).  Each job's last success and failure are
# read from its latest 500 past triggers, whose oldest instant is found by
# one backward scan of the plan key per job (LOOKBACK_FROM in
# src/store/console.c): the page answers well within the console's 2 s
# statement timeout, and every job's failed instant is seen.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console's cluster view stays within its statement timeout with a full page of jobs of long history, and finds each job's latest failure"
T0=$SECONDS
NJ=200 NI=600
fresh_db it_console_many
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/many.yaml
{ echo "jobs:"; for i in $(seq -w 1 "$NJ"); do
	echo "  - {id: many.j$i, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:9/effects/s\"}}"
done; } >"$f"
expect_exit "apply $NJ jobs" 0 "$PAL" apply "$f"
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"
# NI past instants per job, one partition each, every 50th failed (the
# latest failed one is the 50th latest), all inside today's range
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, state, finished_at)
     SELECT j.job_id, 1, t, 0, 'schedule', 'default', 'default', t, 0,
            CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'succeeded' END, t
     FROM jobs j, (SELECT g, greatest(date_trunc('day', now()) + interval '3 seconds', now() - interval '1 minute')
             - interval '2 seconds' - g * interval '1 microsecond' AS t FROM generate_series(1, $NI) g) x" >/dev/null
sql "VACUUM ANALYZE triggers" >/dev/null
echo "    figure: $(sql "select count(*) from triggers") triggers"
# One job's lookback as the console runs it: a bounded read of the plan
# key (about 500 entries), not one descent per instant
J1=$(sql "select min(job_id) from jobs")
# (the expression of LOOKBACK_FROM in src/store/console.c, N = 500)
lb="coalesce((SELECT t.scheduled_at FROM triggers t WHERE t.job_id = '$J1'
   AND t.request_id IS NULL AND t.scheduled_at <= now()
   ORDER BY t.scheduled_at DESC OFFSET greatest(500 - 1, 0) LIMIT 1),
 (SELECT min(t.scheduled_at) FROM triggers t WHERE t.job_id = '$J1'
   AND t.request_id IS NULL AND t.scheduled_at <= now()))"
plan=$(sql "EXPLAIN (ANALYZE, FORMAT JSON) SELECT $lb")
read -r ms loops < <(python3 -c '
import json, sys
p = json.load(sys.stdin)[0]
def walk(n):
    yield n
    for c in n.get("Plans", []):
        yield from walk(c)
nodes = list(walk(p["Plan"]))
print(p["Execution Time"], max(n.get("Actual Loops", 1) for n in nodes))' <<<"$plan")
echo "    figure: one job's lookback (500): $ms ms, at most $loops loops of a plan node"
check "one job's lookback is one pass: no plan node runs per instant (loops $loops)" [ "$loops" -le 1 ]
expect_eq "... and finds the instant of its 500th latest trigger" \
	"$(sql "select scheduled_at from triggers where job_id = '$J1' order by scheduled_at desc offset 499 limit 1")" \
	"$(sql "SELECT $lb")"

SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1 --roles controller
A=${NODE_ADMIN[s1]}
wait_until "s1 answers" 20 curl -sf "http://$A/healthz"
t0=$(date +%s%N)
view=$(curl -s "http://$A/api/cluster")
ms=$((($(date +%s%N) - t0) / 1000000))
echo "    figure: the first /api/cluster took $ms ms"
expect_eq "the cluster view read the database" "True None" \
	"$(python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["database"].get("ok"), v["database"].get("error"))' <<<"$view")"
expect_eq "... and lists the $NJ jobs" "$NJ" \
	"$(python3 -c 'import json,sys; v=json.load(sys.stdin); print(len((v.get("jobs") or {}).get("rows") or []))' <<<"$view")"
expect_eq "... each with its latest failure (the 50th latest instant) and success" "$NJ $NJ" \
	"$(python3 -c 'import json,sys; r=(json.load(sys.stdin).get("jobs") or {}).get("rows") or []; print(sum(1 for x in r if x.get("last_failure")), sum(1 for x in r if x.get("last_success")))' <<<"$view")"
page=$(curl -s "http://$A/console")
check "the console page does not say the database failed" bash -c '! grep -q "statement timeout" <<<"$1"' _ "$page"
# The PostgreSQL CPU time of one answer (what a loaded machine does not
# inflate as it does the wall time): the console backend's, over 3 answers.
cpu_ms() { awk -v t="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / t)}' "/proc/$1/stat"; }
pg=$(sql "select pid from pg_stat_activity where datname = current_database() and application_name = 'palisade-console'")
p0=$(cpu_ms "$pg") t0=$(date +%s%N)
for i in 1 2 3; do curl -s -o /dev/null "http://$A/api/cluster"; done
cpu=$((($(cpu_ms "$pg") - p0) / 3))
echo "    figure: /api/cluster: $((($(date +%s%N) - t0) / 3000000)) ms an answer, PostgreSQL CPU $cpu ms"
check "an answer costs PostgreSQL under 700 ms of CPU (a quarter of it on an idle box): $cpu ms" [ "$cpu" -lt 700 ]
echo "    figure: test_console_many_jobs took $((SECONDS - T0)) s"
finish
