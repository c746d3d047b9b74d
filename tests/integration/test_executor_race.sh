#!/usr/bin/env bash
# Three executors claim from one database at once, with no cluster-wide
# claim lock.  Every cluster-wide limit must stay exact: a group's
# cluster_concurrency, a tenant's cap, a job's max_in_flight, one run at a
# time for forbid and queue, one run not being replaced for replace.  The
# limits are judged exactly from the attempts table (each attempt occupies a
# slot from its claim to its end; a sweep over those intervals gives the
# highest concurrency ever reached), the replace rule by sampling.  Then one
# executor is frozen (SIGSTOP) again and again while the others must keep
# claiming, and every instant ends with one effect.  Each node runs two
# claim connections (executor.claim_connections: 2, not the default): six
# claims can be in flight at once, the harder race.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G3 + exact limits under parallel claims - 3 executors racing keep group cluster_concurrency, tenant caps, max_in_flight and forbid/queue/replace exact; a frozen executor does not stall the others' claims"

fresh_db it_race
"$PAL" migrate >/dev/null
start_sink --delay-ms 1500 || { fail "sink starts"; finish; exit 1; }
SHARDS=4 write_conf "$CLUSTER_CONF" \
	"executor: {lease: 10s, heartbeat: 2s, batch: 4, claim_ahead: 100ms, claim_connections: 2, groups: {capped: {cluster_concurrency: 3}}, tenants: {quota: {cap: 2}, other: {weight: 2}}}"
SHARDS=4
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
T="target: {url: \"http://$SINK_ADDR/effects/r\", timeout: 5s}"
R="retry: {max_age: 1h, max_attempts: 50}"
{
	echo "jobs:"
	for i in 1 2 3 4 5 6; do
		echo "  - {id: race.cap-$i, group: capped, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	done
	for i in 1 2 3 4; do
		echo "  - {id: race.quota-$i, tenant: quota, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	done
	echo "  - {id: race.mif, tenant: other, max_in_flight: 2, partitions: 4, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	echo "  - {id: race.queue, tenant: other, overlap: queue, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	echo "  - {id: race.forbid, tenant: other, overlap: forbid, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	echo "  - {id: race.replace, tenant: other, overlap: replace, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	for i in 1 2 3 4 5 6 7 8; do
		echo "  - {id: race.free-$i, tenant: other, schedule: {cron: \"* * * * * ?\"}, $T, $R}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node e1
start_node e2
start_node e3
wait_until "shards led" 20 all_shards_led

# Sample the replace rule (at most one run of the job that is not being
# replaced) 20 times a second for 20 s (sql_samples: one psql session; a
# psql process per sample stretched the 20 s to ~120 s on a loaded box).
# A replaced run is `cancelling` until its call returns (and ends `succeeded`
# if that call won), so replacements are seen while they happen.
sample="select count(*) filter (where state = 'running' and lease_until > clock_timestamp()), count(*) filter (where state in ('cancelling', 'cancelled') or last_error_class = 'replaced') from trigger_jobs where job_id = 'race.replace'"
read -r n_samples worst_replace replaced_seen <<<"$(sql_samples 400 0.05 "$sample" |
	awk -F'|' 'NF == 2 { s++; if ($1 > n) n = $1; if ($2 > c) c = $2 } END { print s + 0, n + 0, c + 0 }')"
expect_eq "the replace rule was sampled 400 times" 400 "$n_samples"

# peak WHERE: the highest number of attempts of the triggers matching WHERE
# that were open at once (claim to end; an open attempt counts until now).
peak() {
	sql "with a as (select a.claimed_at, coalesce(a.ended_at, clock_timestamp()) as ended_at
	        from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where $1),
	      ev as (select claimed_at as at, 1 as d from a union all select ended_at, -1 from a)
	     select coalesce(max(n), 0) from (select sum(d) over (order by at, d rows unbounded preceding) as n from ev) x"
}
p_cap=$(peak "t.resource_group = 'capped'")
p_quota=$(peak "t.tenant = 'quota'")
p_mif=$(peak "t.job_id = 'race.mif'")
p_queue=$(peak "t.job_id = 'race.queue'")
p_forbid=$(peak "t.job_id = 'race.forbid'")
p_free=$(peak "t.job_id like 'race.free-%'")
nodes=$(sql "select count(distinct node) from attempt_ledger")
echo "    figure: peaks - capped group $p_cap (limit 3), tenant quota $p_quota (cap 2), max_in_flight job $p_mif (limit 2), queue $p_queue, forbid $p_forbid, 8 free jobs $p_free; replace: at most $worst_replace not being replaced; claims by $nodes executors"
expect_eq "all three executors claimed" 3 "$nodes"
expect_eq "group cluster_concurrency 3: reached, never exceeded" 3 "$p_cap"
expect_eq "tenant cap 2: reached, never exceeded" 2 "$p_quota"
expect_eq "max_in_flight 2: reached, never exceeded" 2 "$p_mif"
expect_eq "queue: never two runs at once" 1 "$p_queue"
expect_eq "forbid: never two runs at once" 1 "$p_forbid"
check "forbid: the overlapping instants were skipped and recorded" \
	[ "$(sql "select count(*) from misfires where job_id = 'race.forbid' and reason = 'overlap'")" -gt 0 ]
check "replace: at most one run not being replaced at any sample" [ "$worst_replace" -le 1 ]
check "replace: runs were replaced (seen cancelling while sampling)" [ "$replaced_seen" -gt 0 ]
check "free jobs overlap (the limits are not a global serialisation)" [ "$p_free" -gt 3 ]

# Freeze e1 five times for 1.5 s each; the others must keep claiming while
# it is stopped (no cluster-wide lock to hold, whatever e1 was doing).
stalled=0
for _ in 1 2 3 4 5; do
	before=$(sql "select count(*) from attempt_ledger where node <> 'e1'")
	pause_node e1
	sleep 1.5
	after=$(sql "select count(*) from attempt_ledger where node <> 'e1'")
	resume_node e1
	[ "$after" -gt "$before" ] || stalled=$((stalled + 1))
	sleep 0.5
done
expect_eq "while e1 was frozen, e2 and e3 claimed in every one of 5 freezes" 0 "$stalled"
p_cap2=$(peak "t.resource_group = 'capped'")
p_quota2=$(peak "t.tenant = 'quota'")
p_mif2=$(peak "t.job_id = 'race.mif'")
echo "    figure: peaks after the freezes - capped $p_cap2, quota $p_quota2, max_in_flight $p_mif2"
within_limits() { [ "$p_cap2" -le 3 ] && [ "$p_quota2" -le 2 ] && [ "$p_mif2" -le 2 ]; }
check "limits still never exceeded after the freezes" within_limits

# G3: one live lease per trigger, tokens unique and increasing per trigger.
expect_eq "no trigger has two attempts with the same token" 0 \
	"$(sql "select count(*) from (select fence from attempt_ledger group by fence having count(*) > 1) x")"
expect_eq "each trigger's attempts have increasing tokens in claim order" 0 \
	"$(sql "select count(*) from (select fence < lag(fence) over (partition by trigger_id order by claimed_at, id) as bad from attempt_ledger) x where bad")"
stop_all_nodes
expect_eq "no idempotency key has more than one effect" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by idempotency_key having count(*) > 1) x")"
finish
