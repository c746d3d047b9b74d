#!/usr/bin/env bash
# Every node down for 30 days (simulated: the shards' watermarks and the
# jobs' activations are moved 30 days back while no node runs), 1,000
# every-second fire_all jobs.  The first leader must plan current instants
# within seconds, record what was missed as ranges whose counts are exact,
# and never hold a planning transaction open for long (a tick that walked
# every missed instant inside its transaction was ended by the server at
# idle_in_transaction_session_timeout, forever).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "after a 30-day outage of every node, 1,000 every-second fire_all jobs are planned again at once; the missed instants are recorded as misfire ranges (one per range and reason) whose counts are exact, and the catch-up keeps max_catchup instants inside catchup_window"

N=1000
DAYS=30
fresh_db it_outage_long
"$PAL" migrate >/dev/null
SHARDS=4 MISFIRE=60s OVERLAP=10s write_conf "$CLUSTER_CONF"
SHARDS=4
{
	echo "jobs:"
	for i in $(seq 1 $N); do
		echo "  - {id: long.job-$i, schedule: {cron: \"* * * * * ?\"}, misfire: {policy: fire_all, catchup_window: 10m, max_catchup: 5}, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply $N every-second jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node l1
wait_until "shards led and planned" 30 all_shards_led
activated() { [ "$(sql "select count(*) from jobs where active_version = 1")" = $N ]; }
wait_until "every job activated" 30 activated
stop_node l1

# The outage: the cluster's record moves 30 days back, as if every node had
# been down since then (nothing was planned after the old watermarks).
sql "begin;
 delete from triggers; delete from misfires;
 update job_versions set effective_from = effective_from - interval '$DAYS days 1 hour',
   activated_at = activated_at - interval '$DAYS days 1 hour';
 update shards set watermark = date_trunc('second', watermark) - interval '$DAYS days';
 commit" >/dev/null
declare -A W
while IFS='|' read -r s w; do W[$s]=$w; done < <(sql "select shard_id, extract(epoch from watermark)::bigint from shards")

RESTART=$(date +%s)
start_node l1
current() { [ "$(sql "select count(distinct job_id) from trigger_jobs where source = 'schedule' and scheduled_at >= to_timestamp($RESTART)")" = $N ]; }
# Generous bound: the machine is shared; the figure printed below is what counts.
wait_until "every job has a current instant planned after the restart" 120 current
FIRST=$(( $(sql "select extract(epoch from max(created_at))::bigint from (select job_id, min(created_at) created_at from trigger_jobs where source = 'schedule' and scheduled_at >= to_timestamp($RESTART) group by job_id) f") - RESTART ))
recorded() { [ "$(sql "select count(distinct job_id) from misfires where reason = 'outside_window'")" = $N ]; }
wait_until "the catch-up of every job is recorded" 60 recorded
sleep 2

# The record, job by job, against arithmetic.  Each job's first tick after
# the restart ran at some database time T; with limit L = T - 60 s and window
# start S = T - 10 min, the missed instants (W, L] of an every-second job
# split into (W, S) outside the window, [S, L-5] over max_catchup and the
# last five (L-4 .. L) fired as catch-up; then planning goes on from L+1: 600 - 60 + 1 = 541 instants in the window.
rows=$(sql "select count(*) from misfires")
expect_eq "two misfire rows per job (outside_window, over_max_catchup), none per instant" $((2 * N)) "$rows"
sql "analyze misfires; analyze triggers" >/dev/null
good=$(sql "with m as (select job_id,
     min(extract(epoch from range_from)::bigint) filter (where reason = 'outside_window') of,
     min(extract(epoch from range_to)::bigint) filter (where reason = 'outside_window') ot,
     min(count) filter (where reason = 'outside_window') oc,
     min(extract(epoch from range_from)::bigint) filter (where reason = 'over_max_catchup') cf,
     min(extract(epoch from range_to)::bigint) filter (where reason = 'over_max_catchup') ct,
     min(count) filter (where reason = 'over_max_catchup') cc
   from misfires group by job_id),
 k as (select job_id, count(*) n, extract(epoch from min(scheduled_at))::bigint f, extract(epoch from max(scheduled_at))::bigint t
   from trigger_jobs where source = 'catchup' group by job_id),
 s as (select job_id, extract(epoch from min(scheduled_at))::bigint f from trigger_jobs
   where source = 'schedule' and scheduled_at > to_timestamp($RESTART) - interval '5 minutes' group by job_id)
 select count(*) from m join k using (job_id) join s using (job_id) join jobs j using (job_id)
 where m.of = (array[${W[0]}, ${W[1]}, ${W[2]}, ${W[3]}])[j.shard + 1] + 1 and m.oc = m.ot - m.of + 1
   and m.cf = m.ot + 1 and m.cc = m.ct - m.cf + 1
   and k.f = m.ct + 1 and k.n = 5 and k.t = k.f + 4
   and s.f = k.t + 1
   and k.t - m.cf + 1 = 541")
expect_eq "every job: outside_window from W+1, over_max_catchup right after, 5 catch-up instants, then schedule: contiguous, counts exact" $N "$good"
missed=$(sql "select sum(count) from misfires")
expect_eq "instants recorded as missed = every second from W+1 to the first kept catch-up instant" \
	"$(sql "select sum(count) from misfires")" \
	"$(sql "select sum(c.t - o.f + 1) from (select job_id, extract(epoch from range_from)::bigint f from misfires where reason = 'outside_window') o join (select job_id, extract(epoch from range_to)::bigint t from misfires where reason = 'over_max_catchup') c using (job_id)")"
check "about 30 days of seconds missed per job" [ "$((missed / N))" -gt $((DAYS * 86400 - 700)) ]
expect_eq "no tick failed, no session ended by the server, no shard dropped" 0 \
	"$(sed -n '/"event":"node.starting"/h; //!H; ${x;p}' "$NODE_DIR/l1.log" | grep -c '"event":"controller.tick_failed"\|"event":"controller.db_error"\|"event":"controller.shard_dropped"')"
longest=$(curl -s "http://${NODE_ADMIN[l1]}/metrics" | awk '$1 ~ /^palisade_controller_tick_seconds_max/ { if ($2 > m) m = $2 } END { print m + 0 }')
echo "    figure: first current instant of every job planned ${FIRST}s after the restart; $rows misfire rows for $missed missed instants; longest planning transaction ${longest}s"
finish
