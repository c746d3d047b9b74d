#!/usr/bin/env bash
# W3C Trace Context across the call: a trigger whose first two attempts the
# sink answers 500 reaches the sink three times with one trace id and three
# span ids, each naming its attempt and token; the executor logs the same
# ids; `palisade triggers --trace-id` finds the trigger; a traceparent in the
# job's own headers loses to palisade's; the sampled flag follows the config.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "traces - every attempt of one trigger carries one trace id derived from the trigger and a span id of its own (attempt and fencing token), and the trace id finds its trigger"
T_START=$(date +%s)

fresh_db it_trace
"$PAL" migrate >/dev/null
start_sink --log-level debug --error-rate 1 || { fail "sink starts"; finish; exit 1; }
expect_eq "the sink's injected answers are 500s" 500 "$(curl -s -X POST -d '{"error_status": 500}' "http://$SINK_ADMIN/admin/faults" | jq -r .error_status)"
SHARDS=2
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s, trace_sampled: false}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: traced
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target:
      url: "http://$SINK_ADDR/effects/traced"
      status_url: "http://$SINK_ADDR/effects/{idempotency_key}"
      headers: {traceparent: "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01", tracestate: "job=header"}
      tracestate: "palisade=t1,other@sys=x"
      timeout: 2s
    retry: {max_attempts: 5, backoff: {initial: 6s, max: 6s, jitter: none}, max_age: 5m}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node t1
wait_until "shards led" 20 all_shards_led
expect_exit "a manual run" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job traced --reason "trace test"

# The sink answers 500 until two requests were refused, then applies.  The
# 6 s between attempts is the time the test has to turn the errors off
# after the second refusal (with 2 s a loaded CI box let a third through).
two_refused() { [ "$(sink_stat errors_injected)" -ge 2 ]; }
WAIT_STEP=0.1 wait_until "the sink refused two attempts" 30 two_refused
sink_faults '{"error_rate": 0}'
done_ok() { [ "$(sql "select state from trigger_jobs where job_id = 'traced'")" = succeeded ]; }
wait_until "the trigger succeeds" 30 done_ok
tid=$(sql "select id from trigger_jobs where job_id = 'traced'")
expect_eq "three attempts called" 3 "$(sql "select count(*) from attempt_ledger where trigger_id = $tid and outcome is distinct from 'deferred'")"
expect_eq "... answered 500, 500, then 201 (applied)" "500 500 201" \
	"$(sql "select string_agg(http_status::text, ' ' order by fence, claimed_at) from attempt_ledger where trigger_id = $tid and outcome is distinct from 'deferred'")"

trace=$("$PAL" triggers --config "$CLUSTER_CONF" --job traced --output json | jq -r '.[0].trace_id')
expect_match "the trace id is the cluster prefix and the trigger id" "^[0-9a-f]{16}$(printf %016x "$tid")\$" "$trace"
reqs=$(grep -E '"event":"sink\.(error_injected|apply)"' "$NODE_DIR/sink.log" | grep '"key":"traced/')
expect_eq "the sink saw three requests of the trigger" 3 "$(wc -l <<<"$reqs")"
expect_eq "all three with one trace id, the trigger's" "$trace" "$(jq -r .trace_id <<<"$reqs" | sort -u | paste -sd,)"
expect_eq "three span ids" 3 "$(jq -r .span_id <<<"$reqs" | sort -u | wc -l)"
want=$(sql "select string_agg('01' || lpad(to_hex(attempt_no), 4, '0') || lpad(to_hex(fence & 1099511627775), 10, '0'), ',' order by fence) from (select row_number() over (order by fence) attempt_no, fence from attempt_ledger where trigger_id = $tid and outcome is distinct from 'deferred') a")
expect_eq "each span id is the request's kind, its attempt and its token" "$want" "$(jq -r .span_id <<<"$reqs" | sort | paste -sd,)"
expect_eq "the job's own traceparent and tracestate headers were not sent (palisade's win)" "" \
	"$(grep -c -e ffffffffffffffff -e job=header "$NODE_DIR/sink.log" | grep -v '^0$')"
expect_eq "the job's target.tracestate came with every request" "palisade=t1,other@sys=x" "$(jq -r .tracestate <<<"$reqs" | sort -u | paste -sd,)"
expect_eq "sampled flag off (executor.trace_sampled: false)" "00" "$(jq -r .trace_flags <<<"$reqs" | sort -u | paste -sd,)"
elog=$(grep '"event":"executor.call"' "$NODE_DIR/t1.log" | grep "\"trigger\":$tid,")
expect_eq "the executor logged both failed attempts with the trace id" "$trace,$trace" "$(jq -r .trace_id <<<"$elog" | paste -sd,)"
expect_eq "... and the span ids the sink saw" "$(jq -r .span_id <<<"$reqs" | sort | head -2 | paste -sd,)" "$(jq -r .span_id <<<"$elog" | sort | paste -sd,)"

found=$("$PAL" triggers --config "$CLUSTER_CONF" --trace-id "$trace" --output json | jq -r '.[].id' | paste -sd,)
expect_eq "triggers --trace-id finds the trigger" "$tid" "$found"
upper=$(tr a-f A-F <<<"$trace")
expect_eq "... written in upper case too" "$tid" "$("$PAL" triggers --config "$CLUSTER_CONF" --trace-id "$upper" --output json | jq -r '.[].id')"
expect_exit "a trace id of another cluster is refused (3)" 3 "$PAL" triggers --config "$CLUSTER_CONF" --trace-id "0000000000000001${trace:16}"
expect_exit "a trace id of no trigger: 3" 3 "$PAL" triggers --config "$CLUSTER_CONF" --trace-id "${trace:0:16}7fffffffffffffff"
expect_exit "not a trace id: 64" 64 "$PAL" triggers --config "$CLUSTER_CONF" --trace-id nothex
page=$(curl -s "http://${NODE_ADMIN[t1]}/api/job?id=traced")
expect_eq "the console's job model shows the trace id with the trigger" "$trace" "$(jq -r ".triggers[] | select(.id == $tid) | .trace_id" <<<"$page")"
check "... and its job page shows it" grep -q "$trace" <(curl -s "http://${NODE_ADMIN[t1]}/console/job?id=traced")
tok=$("$PAL" token create --name trace-viewer --role viewer | tail -1)
api() { curl -s -H "Authorization: Bearer $tok" "http://${NODE_ADMIN[t1]}/api/v1/$1"; }
expect_eq "the API lists the trigger of the trace id" "$tid $trace" "$(api "triggers?job=traced&trace_id=$trace" | jq -r '.items[] | "\(.id) \(.trace_id)"')"
expect_eq "... and refuses another cluster's (400)" 400 "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "http://${NODE_ADMIN[t1]}/api/v1/triggers?job=traced&trace_id=0000000000000001${trace:16}")"
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
