#!/usr/bin/env bash
# A stale executor's writes are refused at both ends.  A request delayed in
# the network past its lease reaches the sink after a newer attempt was
# applied: the sink answers 409 stale.  A call whose response comes back
# after the lease was lost must not commit: the executor abandons it, and
# with the drill switch that disables its own lease checks
# (PALISADE_FAULT_IGNORE_LEASE_LOSS=1) the database fence refuses the write.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G4 - a stale executor never commits: its late request is refused by the sink (409 stale) and its late result by the database fence (0 rows, attempt 'fenced'); one effect per key"

fresh_db it_exec_stale
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
lane_req=$(free_port)
python3 tests/integration/slowlane.py --listen "$lane_req" --to "$SINK_ADDR" --hold-request 9 >"$NODE_DIR/lane_req.log" 2>&1 &
LANE1=$!
lane_resp=$(free_port)
python3 tests/integration/slowlane.py --listen "$lane_resp" --to "$SINK_ADDR" --hold-response 9 >"$NODE_DIR/lane_resp.log" 2>&1 &
LANE2=$!
trap 'kill $LANE1 $LANE2 2>/dev/null; stop_all_nodes; stop_sink' EXIT
wait_until "slow lanes up" 10 bash -c "grep -q ready '$NODE_DIR/lane_req.log' && grep -q ready '$NODE_DIR/lane_resp.log'"

SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
SHARDS=2
{
	echo "jobs:"
	for j in late-request late-response; do
		case $j in late-request) lane=$lane_req ;; *) lane=$lane_resp ;; esac
		echo "  - id: stale.$j"
		echo "    schedule: {cron: \"0 0 0 1 1 ? 2099\"}"
		echo "    target:"
		echo "      url: http://127.0.0.1:$lane/effects/stale"
		echo "      body: '{\"job\": \"{job}\"}'"
		echo "      timeout: 20s"
		echo "      status_url: http://$SINK_ADDR/effects/{idempotency_key}"
		echo "    retry: {max_attempts: 5, backoff: {initial: 200ms, max: 1s}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node ctl --roles controller
wait_until "shards led" 20 all_shards_led

fence_of() { sql "select fence from trigger_jobs where job_id = 'stale.$1'"; }
state_of() { sql "select state from trigger_jobs where job_id = 'stale.$1'"; }
effects() { sql "select count(*) from sink_effects where idempotency_key like 'stale.$1/%'"; }

# ---- 1. a late request: refused by the sink ------------------------------------
echo "  -- a request held in the network past its lease reaches the sink after a newer attempt"
start_node old --roles executor
"$PAL" trigger --job stale.late-request --reason "stale drill" >/dev/null
wait_until "the first attempt's request is held on its way" 15 grep -q held "$NODE_DIR/lane_req.log"
old_fence=$(fence_of late-request)
pause_node old
start_node new --roles executor
succeeded() { [ "$(state_of "$1")" = succeeded ]; }
wait_until "a newer attempt (new token) succeeds while the old executor is stopped" 20 succeeded late-request
new_fence=$(fence_of late-request)
check "the newer attempt's token is higher ($new_fence > $old_fence)" [ "$new_fence" -gt "$old_fence" ]
wait_until "the held request is released to the sink" 15 grep -q released "$NODE_DIR/lane_req.log"
sink_stale() { [ "$(sink_stat stale)" -ge 1 ]; }
wait_until "the sink refused it as stale (409)" 10 sink_stale
resume_node old
expect_eq "one effect for the key" 1 "$(effects late-request)"
expect_eq "the effect carries the newer token" "$new_fence" \
	"$(sql "select fence from sink_effects where idempotency_key like 'stale.late-request/%'")"
expect_eq "the trigger stays succeeded under the newer token" "succeeded $new_fence" \
	"$(sql "select state || ' ' || fence from trigger_jobs where job_id = 'stale.late-request'")"
stop_node new
stop_node old

# ---- 2. a late response: refused by the database fence -----------------------------
echo "  -- a response that returns after the lease was lost, to an executor told to ignore that"
PALISADE_FAULT_IGNORE_LEASE_LOSS=1 start_node old --roles executor
"$PAL" trigger --job stale.late-response --reason "stale drill" >/dev/null
wait_until "the first attempt was applied and its response is held" 15 grep -q held "$NODE_DIR/lane_resp.log"
old_fence=$(fence_of late-response)
pause_node old
start_node new --roles executor
wait_until "a newer attempt succeeds (the sink replays the applied effect)" 20 succeeded late-response
new_fence=$(fence_of late-response)
check "the newer attempt's token is higher ($new_fence > $old_fence)" [ "$new_fence" -gt "$old_fence" ]
resume_node old
wait_until "the held response is released to the old executor" 15 grep -q released "$NODE_DIR/lane_resp.log"
db_stale() { [ "$(metric old 'palisade_executor_stale_rejections_total{at="db"}' | cut -d. -f1)" -ge 1 ]; }
wait_until "the old executor's commit was refused by the database fence" 10 db_stale
check "the refusal was logged" grep -q '"event":"executor.result_fenced"' "$NODE_DIR/old.log"
expect_eq "the old attempt is recorded as 'fenced'" fenced \
	"$(sql "select outcome from attempt_ledger where fence = $old_fence")"
expect_eq "the trigger stays succeeded under the newer token" "succeeded $new_fence" \
	"$(sql "select state || ' ' || fence from trigger_jobs where job_id = 'stale.late-response'")"
expect_eq "one effect for the key" 1 "$(effects late-response)"
echo "    figure: stale-token rejections: at the sink $(sink_stat stale), at the database $(sql "select count(*) from attempt_ledger where outcome = 'fenced'")"
check "the drill switch was logged" grep -q '"event":"executor.fault_injection"' "$NODE_DIR/old.log"
finish
