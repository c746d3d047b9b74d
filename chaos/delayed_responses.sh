#!/usr/bin/env bash
# chaos/delayed_responses.sh - drill delayed-responses (chaos/run.sh): every
# response from the sink reaches the executors late, past the lease
# (tests/integration/delayproxy.py between executors and sink: responses
# delayed 5 s, lease 3 s; one connection in three also has its requests
# delayed 7 s), under load.  An executor keeps a lease while it is alive to
# renew it, so the drill stops two of the three executors (SIGSTOP, 9 s)
# while they hold calls: their leases run out and the third takes the
# triggers over with newer attempts (new fencing tokens, the same
# idempotency key).  One of the stopped executors runs with the drill
# switch PALISADE_FAULT_IGNORE_LEASE_LOSS=1 (it does not notice the lost
# leases, docs/executor.md), so its late responses go on to its result
# commit and meet the database fence; the other abandons them as it should.
# A held request of an old attempt that reaches the sink after a newer
# attempt's is refused by the sink's fence (409 stale).
#
# Checked: a newer attempt took over; late results were refused by the
# database fence (attempts 'fenced', executor stale rejections at="db")
# and none was committed (no trigger ends with the old token); the sink
# refused older tokens; one ledger row per key and chunk; every trigger of
# the window ends succeeded; palisade verify clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "G4 + G5 with responses delayed past the lease: a newer attempt takes over, the late response is not committed (database fence), an older token reaching the sink late is refused (sink fence), no effect doubled"
declare -A FIG
RESP_DELAY=5
REQ_DELAY=7
LEASE=3
PAUSE_S=9

fresh_db it_delayed_responses
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
lane=$(free_port)
python3 tests/integration/delayproxy.py --listen "$lane" --to "$SINK_ADDR" --response-delay "$RESP_DELAY" \
	--request-delay "$REQ_DELAY" --request-every 3 >"$NODE_DIR/proxy.log" 2>&1 &
PROXY=$!
trap 'kill $PROXY 2>/dev/null; stop_all_nodes; stop_sink' EXIT
wait_until "delay proxy up" 10 grep -q ready "$NODE_DIR/proxy.log"

SHARDS=4
ZK_SESSION=4s write_conf "$CLUSTER_CONF" "executor: {lease: ${LEASE}s, heartbeat: 1s}"
{
	echo "jobs:"
	for i in $(seq 1 12); do
		echo "  - id: late.job-$i"
		echo "    schedule: {cron: \"*/2 * * * * ?\"}"
		echo "    misfire: {policy: fire_all}"
		echo "    target:"
		echo "      url: http://127.0.0.1:$lane/effects/late"
		echo "      body: '{\"job\": \"{job}\", \"at\": \"{scheduled_at}\"}'"
		echo "      timeout: 20s"
		# The status query goes to the sink directly (only the effect path is delayed).
		echo "      status_url: http://$SINK_ADDR/effects/{idempotency_key}"
		echo "    retry: {max_attempts: 20, backoff: {initial: 200ms, max: 1s}, max_age: 10m}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply 12 jobs through the delay proxy (responses +${RESP_DELAY} s, lease ${LEASE} s)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node ctl --roles controller
wait_until "all shards led" 30 all_shards_led
start_node e1 --roles executor
PALISADE_FAULT_IGNORE_LEASE_LOSS=1 start_node e2 --roles executor
start_node e3 --roles executor
T0=$(rfc3339_ago -1)
sleep 10
holds() { [ "$(sql "select count(distinct lease_owner) from triggers where state = 'running' and lease_owner in ('e1', 'e2')")" = 2 ]; }
wait_until "e1 and e2 both hold leases (calls waiting on delayed responses)" 30 holds
held_e1=$(sql "select count(*) from triggers where state = 'running' and lease_owner = 'e1'")
held_e2=$(sql "select count(*) from triggers where state = 'running' and lease_owner = 'e2'")
pause_node e1
pause_node e2
echo "    e1 and e2 stopped for ${PAUSE_S} s holding $held_e1 and $held_e2 leases"
sleep "$PAUSE_S"
resume_node e1
resume_node e2
sleep 20
T1=$(rfc3339_ago 8)

settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger of the window ends succeeded" 120 settled
echo "    states: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1) x")"
W="from attempt_ledger a join triggers t on t.id = a.trigger_id where t.scheduled_at between '$T0' and '$T1'"
FIG[triggers]=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'")
FIG[taken_over]=$(sql "select count(distinct t.id) $W and a.node in ('e1', 'e2') and t.fence <> a.fence and exists (select 1 from attempt_ledger b where b.trigger_id = t.id and b.fence > a.fence and b.node = 'e3')")
FIG[fenced_db]=$(sql "select count(*) $W and a.outcome = 'fenced'")
FIG[fenced_e2_metric]=$(metric e2 'palisade_executor_stale_rejections_total{at="db"}' | cut -d. -f1)
FIG[abandoned_e1]=$(grep -c '"event":"executor.call_abandoned"' "$NODE_DIR/e1.log")
FIG[self_stops_e1]=$(metric e1 palisade_executor_self_stops_total | cut -d. -f1)
FIG[stale_at_sink]=$(sink_stat stale)
FIG[replayed_at_sink]=$(sink_stat replayed)
# A late result committed would leave a trigger ended under a token that a
# newer attempt superseded.
FIG[late_committed]=$(sql "select count(*) from triggers t where scheduled_at between '$T0' and '$T1' and exists (select 1 from attempt_ledger b where b.trigger_id = t.id and b.fence > t.fence)")
FIG[effects_doubled]=$(sql "select count(*) from (select idempotency_key, chunk from sink_ledger group by 1, 2 having count(*) > 1) d")
FIG[planned_twice]=$(sql "select count(*) from (select 1 from trigger_jobs where scheduled_at between '$T0' and '$T1' group by job_id, scheduled_at, partition having count(*) > 1) d")
read -r _ _ pconn _ preq _ presp _ plate <<<"$(grep '^stats' "$NODE_DIR/proxy.log" | tail -1 | tr '=' ' ')"
check "a newer attempt (e3) took over triggers of the stopped executors (${FIG[taken_over]})" [ "${FIG[taken_over]}" -gt 0 ]
check "late results reached the database fence and were refused (${FIG[fenced_db]} attempts 'fenced')" [ "${FIG[fenced_db]}" -gt 0 ]
check "e2 (drill switch on) counted them (stale_rejections_total{at=db} ${FIG[fenced_e2_metric]})" [ "${FIG[fenced_e2_metric]:-0}" -gt 0 ]
check "the refusal was logged (executor.result_fenced)" grep -q '"event":"executor.result_fenced"' "$NODE_DIR/e2.log"
check "the sink's fence refused an older token that arrived after a newer one (${FIG[stale_at_sink]})" [ "${FIG[stale_at_sink]}" -gt 0 ]
expect_eq "no late result committed (no trigger ended under a superseded token)" 0 "${FIG[late_committed]}"
expect_eq "one sink_ledger row per key and chunk" 0 "${FIG[effects_doubled]}"
expect_eq "no instant planned twice" 0 "${FIG[planned_twice]}"
expect_exit "verify: nothing missing or doubled over the window" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    palisade $(echo "$OUT" | head -1)"
FIG[missing]=$(sed -n 's/.* missing=\([0-9]*\).*/\1/p' <<<"$OUT" | head -1)
echo "    figure: responses +${RESP_DELAY} s > lease ${LEASE} s, 2 executors stopped ${PAUSE_S} s: ${FIG[triggers]} triggers, ${FIG[taken_over]} taken over by newer attempts; late results fenced by the database ${FIG[fenced_db]} (switch on), abandoned ${FIG[abandoned_e1]} (switch off); older tokens refused by the sink ${FIG[stale_at_sink]}; late commits ${FIG[late_committed]}, missing ${FIG[missing]:-?}, effects doubled ${FIG[effects_doubled]}; proxy ${pconn:-?} connections, ${preq:-?} with delayed requests"
check "both stopped executors survived" bash -c "kill -0 ${NODE_PID[e1]} && kill -0 ${NODE_PID[e2]}"
write_report delayed-responses "response_delay_s=$RESP_DELAY" "request_delay_s=$REQ_DELAY" "lease_s=$LEASE" "pause_s=$PAUSE_S"
finish
