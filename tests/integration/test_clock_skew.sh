#!/usr/bin/env bash
# Clock skew: one node's clock an hour fast, another's 30 minutes slow
# (libfaketime), under load with a sink failing 30% of calls so that retries
# are scheduled.  Every decision that compares times is made by the
# database's clock: nothing is planned early, lost or doubled, no retry is
# parked by the skew, no trigger fails its max_age early.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G3 under clock skew (+1h and -30m nodes): plan, claim and retry timing follow the database clock; no instant missing or doubled, every trigger succeeded, one effect per key"

FT=$(faketime_lib)
if [ -z "$FT" ]; then
	fail "libfaketime is installed (ops/deps.sh installs the libfaketime package)"
	finish
	exit 1
fi

it_db skew
sink_up --error-rate 0.3
SHARDS=6
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 40 "*/2 * * * * ?" t1 skew
expect_exit "apply 40 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node k0
LD_PRELOAD=$FT FAKETIME="+1h" start_node fast
LD_PRELOAD=$FT FAKETIME="-30m" start_node slow
wait_until "all shards led" 30 all_shards_led
skewed() { grep -q '"event":"executor.clock_offset"' "$NODE_DIR/$1.log"; }
wait_until "the fast node measured its clock offset against the database" 10 skewed fast
off_fast=$(metric fast palisade_executor_clock_offset_seconds)
off_slow=$(metric slow palisade_executor_clock_offset_seconds)
echo "    figure: measured offsets (database - node): fast ${off_fast} s, slow ${off_slow} s"
check "fast node: offset about -3600 s" python3 -c "import sys; sys.exit(0 if abs($off_fast + 3600) < 5 else 1)"
check "slow node: offset about +1800 s" python3 -c "import sys; sys.exit(0 if abs($off_slow - 1800) < 5 else 1)"
T0=$(now_rfc3339)
# 15 s: ~300 triggers, a third of whose calls fail and are retried by each
# node (30 s gave 640, every node with over 100 retries)
sleep 15
T1=$(rfc3339_ago 0)
wait_until "every shard planned past the window" 30 planned_past "$T1"
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger planned in the window ends succeeded" 60 settled
echo "    states: $(sql "select string_agg(state || coalesce('/' || last_error_class, '') || '=' || n, ' ') from (select state, last_error_class, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1, 2) x")"
by_node=$(sql "select string_agg(node || '=' || n, ' ' order by node) from (select node, count(*) n from attempt_ledger a join triggers t on t.id = a.trigger_id where t.scheduled_at between '$T0' and '$T1' group by 1) x")
echo "    figure: attempts by node: $by_node"
for n in k0 fast slow; do
	check "$n made attempts" [ "$(sql "select count(*) from attempt_ledger where node = '$n'")" -gt 0 ]
done
retried_by() { sql "select count(*) from attempt_ledger a where a.node = '$1' and a.outcome = 'retry_wait'"; }
echo "    figure: attempts that scheduled a retry: k0 $(retried_by k0), fast $(retried_by fast), slow $(retried_by slow)"
check "the skewed nodes scheduled retries" [ "$(retried_by fast)" -gt 0 -a "$(retried_by slow)" -gt 0 ]
# Each retry was claimed within its backoff (max 1 s) plus a claim interval
# of when the previous attempt ended - not an hour later, not early.
gap=$(sql "select coalesce(max(extract(epoch from n.claimed_at - a.ended_at)), 0)::numeric(10,2) from attempt_ledger a join attempt_ledger n on n.trigger_id = a.trigger_id and n.fence = (select min(fence) from attempt_ledger x where x.trigger_id = a.trigger_id and x.fence > a.fence) where a.outcome = 'retry_wait'")
echo "    figure: longest wait from a retry_wait attempt to the next claim: ${gap} s"
check "no retry waited more than 5 s (backoff max 1 s)" python3 -c "import sys; sys.exit(0 if $gap < 5 else 1)"
expect_eq "no trigger failed (max_age 10m judged by the database clock)" 0 \
	"$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state = 'failed'")"
expect_exit "verify: no instant missing or doubled" 0 "$PAL" verify --from "$T0" --to "$T1"
expect_eq "no instant planned before the database's now minus lookahead (nothing planned an hour early)" 0 \
	"$(sql "select count(*) from triggers where source = 'schedule' and scheduled_at > clock_timestamp() + interval '30 s'")"
expect_eq "no idempotency key has more than one effect" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"
finish
