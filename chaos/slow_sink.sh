#!/usr/bin/env bash
# chaos/slow_sink.sh - drill slow-sink (chaos/run.sh): the sink holds every
# apply transaction longer than the job's call timeout (palisade-sink
# --delay-ms 3000, target timeout 2 s) under load, so that every call times
# out after its request was sent: the outcome is unknown (docs/protocol.md)
# and must be resolved by the status query with the same idempotency key
# (409 in_progress while the apply is open, then found) - never by calling
# again blindly, never by ending `failed`.  After SLOW_S seconds (default 30)
# the delay is lifted and the backlog drains.
#
# Checked: unknown outcomes happened and were resolved by query; every
# trigger of the window ends succeeded (or `manual` with a ticket when its
# budget ran out: honest, never `failed`); no trigger whose key the sink
# applied ended `failed`; one ledger row per key and chunk; palisade verify
# clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G5 + honest outcomes: a sink slower than the call timeout leaves outcomes unknown; the status query resolves them, nothing applied ends failed, no effect doubled"
declare -A FIG
SLOW_S=${SLOW_S:-30}
DELAY_MS=3000

fresh_db it_slow_sink
"$PAL" migrate >/dev/null
start_sink --delay-ms "$DELAY_MS" || { fail "sink starts"; finish; exit 1; }
SHARDS=4
ZK_SESSION=4s write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
# gen_sink_jobs: timeout 2 s (below the sink's 3 s), status_url, 20 attempts.
gen_sink_jobs "$NODE_DIR/jobs.yaml" 16 "*/2 * * * * ?" t1 slow
expect_exit "apply 16 jobs (call timeout 2 s, sink delay ${DELAY_MS} ms)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node s1
start_node s2
wait_until "all shards led" 30 all_shards_led
T0=$(rfc3339_ago -1)
sleep "$SLOW_S"
T1=$(rfc3339_ago 0)
sink_faults '{"delay_ms": 0}'
echo "    the sink held each apply ${DELAY_MS} ms for ${SLOW_S} s, then answered at once"
sleep 6

settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state not in ('succeeded', 'manual', 'failed')")" = 0 ]; }
wait_until "every trigger of the slow window ends" 120 settled
echo "    states: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1) x")"
W="from attempt_ledger a join triggers t on t.id = a.trigger_id where t.scheduled_at between '$T0' and '$T1'"
FIG[triggers]=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'")
FIG[attempts]=$(sql "select count(*) $W")
# An attempt whose call timed out either found its effect by the status
# query (succeeded, resolved_by_query) or ended unknown (the query answered
# 409 in_progress or nothing: the next attempt queries again first).
FIG[resolved_by_query]=$(sql "select count(*) $W and a.outcome = 'succeeded' and a.error_class = 'resolved_by_query'")
FIG[unknown_outcomes]=$(sql "select count(*) $W and (a.outcome = 'unknown' or a.error_class = 'resolved_by_query')")
FIG[breaker_deferred]=$(sql "select count(*) $W and a.error_class = 'breaker_open'")
FIG[succeeded]=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state = 'succeeded'")
FIG[manual]=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state = 'manual'")
FIG[failed]=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state = 'failed'")
FIG[failed_but_applied]=$(sql "select count(distinct t.id) $W and t.state = 'failed' and exists (select 1 from sink_ledger l where l.idempotency_key = a.idempotency_key)")
FIG[manual_without_ticket]=$(sql "select count(*) from triggers t where scheduled_at between '$T0' and '$T1' and state = 'manual' and not exists (select 1 from tickets k where k.trigger_id = t.id)")
FIG[queries_found]=0
FIG[queries_unknown]=0
for n in s1 s2; do
	FIG[queries_found]=$((FIG[queries_found] + $(metric $n 'palisade_executor_status_queries_total{answer="found"}' | cut -d. -f1)))
	FIG[queries_unknown]=$((FIG[queries_unknown] + $(metric $n 'palisade_executor_status_queries_total{answer="unknown"}' | cut -d. -f1)))
done
FIG[sink_in_progress]=$(sink_stat query_in_progress)
FIG[sink_replayed]=$(sink_stat replayed)
FIG[effects_doubled]=$(sql "select count(*) from (select idempotency_key, chunk from sink_ledger group by 1, 2 having count(*) > 1) d")
FIG[planned_twice]=$(sql "select count(*) from (select 1 from trigger_jobs where scheduled_at between '$T0' and '$T1' group by job_id, scheduled_at, partition having count(*) > 1) d")
check "calls timed out with the outcome unknown (${FIG[unknown_outcomes]} attempts)" [ "${FIG[unknown_outcomes]}" -gt 0 ]
check "status queries answered found (${FIG[queries_found]}) and in progress (${FIG[sink_in_progress]} at the sink)" \
	bash -c "[ ${FIG[queries_found]} -gt 0 ] && [ ${FIG[sink_in_progress]} -gt 0 ]"
check "unknown outcomes resolved by query to succeeded (${FIG[resolved_by_query]} attempts)" [ "${FIG[resolved_by_query]}" -gt 0 ]
expect_eq "nothing that the sink applied ends failed" 0 "${FIG[failed_but_applied]}"
expect_eq "nothing ends failed at all (an unknown outcome is never failed)" 0 "${FIG[failed]}"
expect_eq "every manual trigger has a ticket" 0 "${FIG[manual_without_ticket]}"
expect_eq "one sink_ledger row per key and chunk" 0 "${FIG[effects_doubled]}"
expect_eq "no instant planned twice" 0 "${FIG[planned_twice]}"
expect_exit "verify: nothing missing or doubled over the window" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    palisade $(echo "$OUT" | head -1)"
FIG[missing]=$(sed -n 's/.* missing=\([0-9]*\).*/\1/p' <<<"$OUT" | head -1)
echo "    figure: sink ${DELAY_MS} ms > timeout 2 s for ${SLOW_S} s: ${FIG[triggers]} triggers, ${FIG[attempts]} attempts, ${FIG[unknown_outcomes]} outcomes unknown, ${FIG[resolved_by_query]} resolved by status query (sink 409 in_progress ${FIG[sink_in_progress]}), ${FIG[breaker_deferred]} deferred by the breaker; succeeded ${FIG[succeeded]}, manual ${FIG[manual]}, failed ${FIG[failed]} (applied ${FIG[failed_but_applied]}); missing ${FIG[missing]:-?}, effects doubled ${FIG[effects_doubled]}"
write_report slow-sink "sink_delay_ms=$DELAY_MS" "call_timeout_ms=2000" "slow_s=$SLOW_S"
finish
