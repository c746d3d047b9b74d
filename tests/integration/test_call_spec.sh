#!/usr/bin/env bash
# The executor makes its calls from a compact form of each job version
# (src/spec/callspec.c): the fields a call needs, extracted by the server
# from the spec's target and retry objects and from the columns apply
# writes beside the spec (idempotency_key, timezone, deadline_ms), not the
# whole canonical spec parsed on the executor's loop.  Never from the
# deprecated columns target and retry (copies that apply writes for 0.1.0
# nodes, to be dropped by the next release): a version whose copies
# disagree with its spec is still called as its spec says.  callspec_probe
# reads each job's latest version both ways and compares them field by
# field: methods, bodies, status URLs, headers (secret references
# unresolved, one header or three),
# zones, retry budgets with a fractional multiplier, deadlines.  A version
# whose stored target this binary cannot read is refused with the field
# named, not called with a default.  And when the one statement that reads
# a claimed batch's versions fails (PALISADE_FAULT_SPEC_BATCH: as a
# connection lost mid-answer), each call reads its version alone and the
# batch runs: nothing is handed back or failed for it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the executor's call form of a version says what its canonical spec says, field by field"

fresh_db it_call_spec
"$PAL" migrate >/dev/null
f=$PALISADE_TEST_TMP/call-jobs.yaml
cat >"$f" <<'YAML'
jobs:
  - {id: calls.plain, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/plain"}}
  - id: calls.full
    schedule: {cron: "0 0 0 1 1 ? 2099", timezone: Europe/Berlin}
    deadline: 10m
    idempotency_key: "{job}:{scheduled_date}:{scheduled_at}:{partition}"
    target:
      method: PUT
      url: http://127.0.0.1:9/effects/full
      headers: {Authorization: "Bearer ${PAY_TOKEN}", X-Tenant: acme, Content-Type: application/json}
      body: '{"day": "{scheduled_date}", "note": "café \"quoted\""}'
      timeout: 2500ms
      status_url: http://127.0.0.1:9/status/{idempotency_key}
    retry: {max_attempts: 9, backoff: {initial: 250ms, max: 4s, multiplier: 1.1, jitter: equal}, max_age: 2h}
  - id: calls.get
    schedule: {cron: "0 0 0 1 1 ? 2099", timezone: America/New_York}
    target: {method: GET, url: "http://127.0.0.1:9/ping", headers: {X-One: "1"}}
    retry: {max_attempts: 1, backoff: {jitter: none}, max_age: 0s}
YAML
expect_exit "apply the jobs" 0 "$PAL" apply "$f"
PROBE=${PALISADE_ITESTS:-build/itests}/callspec_probe
out=$("$PROBE" --pg "$PALISADE_PG" calls.plain calls.full calls.get 2>"$NODE_DIR/probe.err")
rc=$?
sed 's/^/    /' <<<"$out"
sed 's/^/    /' "$NODE_DIR/probe.err" | head -4
expect_eq "the probe ran" 0 "$rc"
expect_eq "a job with every default: the same" "calls.plain ok" "$(grep '^calls.plain ' <<<"$out")"
expect_eq "a job with every call field set: the same" "calls.full ok" "$(grep '^calls.full ' <<<"$out")"
expect_eq "a GET with one header and no retries: the same" "calls.get ok" "$(grep '^calls.get ' <<<"$out")"

# The deprecated copies are not read: overwritten, the call form still
# says what the spec says.
sql "UPDATE job_versions SET target = '{\"url\": \"http://127.0.0.1:1/not-this\", \"method\": \"DELETE\"}',
     retry = '{\"max_attempts\": 99, \"max_age_ms\": 1, \"backoff\": {\"initial_ms\": 1}}'
     WHERE job_id = 'calls.full'" >/dev/null
out=$("$PROBE" --pg "$PALISADE_PG" calls.full 2>&1)
echo "    $out"
expect_eq "target and retry columns overwritten: the call form is still the spec's" "calls.full ok" "$out"

# A stored target this binary does not read (a method it does not know):
# refused, naming the field, never called with a default method.
sql "UPDATE job_versions SET spec = jsonb_set(spec, '{target,method}', '\"TRACE\"')
     WHERE job_id = 'calls.get'" >/dev/null
out=$("$PROBE" --pg "$PALISADE_PG" calls.get 2>&1)
echo "    $out"
expect_match "an unknown method is refused with its field named" "^calls.get refused .*target.method" "$out"

# The batch read fails: the calls read their versions alone.
start_sink || { finish; exit 1; }
gen_sink_jobs "$NODE_DIR/batch-jobs.yaml" 6 "*/2 * * * * ?" t1 batch
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
expect_exit "apply six jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/batch-jobs.yaml"
PALISADE_FAULT_SPEC_BATCH=1 start_node n1
done12() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'batch.%' and state = 'succeeded'")" -ge 12 ]; }
wait_until "two instants of the six jobs succeed" 40 done12
stop_node n1
expect_eq "the first batch read failed (fault injection)" 1 \
	"$(grep -c '"event":"executor.spec_read_failed".*PALISADE_FAULT_SPEC_BATCH' "$NODE_DIR/n1.log")"
expect_eq "no version was unavailable to a call (each read it alone)" 0 \
	"$(grep -c '"event":"executor.spec_unavailable"' "$NODE_DIR/n1.log")"
expect_eq "no trigger was handed back, failed or sent to manual" 0 \
	"$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id
	       where t.job_id like 'batch.%' and a.error_class is not null")"
expect_eq "no trigger failed" 0 \
	"$(sql "select count(*) from triggers where state in ('failed', 'manual')")"
finish
