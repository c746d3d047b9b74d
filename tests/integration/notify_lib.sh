# tests/integration/notify_lib.sh - helpers of the notify tests that follow
# a job's receivers across applies (test_notify_latest_receiver.sh,
# test_notify_rule_swap.sh), sourced after lib.sh, cluster.sh and the
# test's guarantee: a fresh database (it_ and the test's name without
# test_), migrated; the one-node config (controller and executor, fast
# delivery), HOOK_SECRET,
# webhook receivers and the job's service on free ports (stopped at exit),
# and readers of what they got.
_nl_name=$(basename "$0" .sh)
fresh_db "it_${_nl_name#test_}"
"$PAL" migrate >/dev/null
PIDS=
trap 'stop_all_nodes; for p in $PIDS; do kill "$p" 2>/dev/null; done' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
T_PORT=$(free_port) # the jobs' service (receiver T)

# receiver NAME PORT [FAIL_FOR [FAIL_FIRST]]: a webhook receiver on PORT
# logging to $NODE_DIR/NAME.jsonl, answering 500 for FAIL_FOR seconds from
# its start and to its first FAIL_FIRST requests, then 200; returns once it
# accepts connections (a loaded box starts python in seconds: a call before
# that would fail unlogged), and T0 is set to then.
receiver() {
	python3 tests/integration/webhook_receiver.py --port "$2" --log "$NODE_DIR/$1.jsonl" \
		--fail-for "${3:-0}" --fail-first "${4:-0}" &
	PIDS="$PIDS $!"
	local i
	for ((i = 0; i < 200; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && break
		sleep 0.05
	done
	T0=$(date +%s)
}

# hooks NAME...: for each NAME, a free port in NAME_PORT and the url of a
# receiver on it in NAME.
hooks() {
	local h p
	for h; do
		p=$(free_port)
		eval "${h}_PORT=$p $h=http://127.0.0.1:$p/hooks"
	done
}

# tenant_rule URL SPEC: a notify_rules entry of tenant billing for URL;
# FAILED_RECOVERED, a SPEC.
tenant_rule() { printf '  - {tenant: billing, url: "%s", %s}\n' "$1" "$2"; }
FAILED_RECOVERED='on: [failed, recovered], secret: "${HOOK_SECRET}"'

# notify_job ID TENANT [RETRY]: a jobs entry calling receiver T, run only
# by `palisade trigger`.
notify_job() {
	cat <<YAML
  - id: $1
    tenant: $2
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:$T_PORT/x", timeout: 2s}
    retry: ${3:-{max_attempts: 1\}}
YAML
}

# states JOB: the states of JOB's triggers, in instant order.
states() { sql "select coalesce(string_agg(state, ',' order by scheduled_at), '') from trigger_jobs where job_id = '$1'"; }

# got NAME: the events receiver NAME answered 200 to, in order.
got() {
	python3 -c 'import json,sys; print(" ".join(r["event"] for r in map(json.loads, open(sys.argv[1])) if r["status"] == 200))' "$NODE_DIR/$1.jsonl" 2>/dev/null
}

# until_t0 S: sleeps until S seconds after T0.
until_t0() {
	local w=$((T0 + $1 - $(date +%s)))
	if [ "$w" -gt 0 ]; then sleep "$w"; fi
}
