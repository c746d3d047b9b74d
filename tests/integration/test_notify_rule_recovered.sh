#!/usr/bin/env bash
# Notify rules: a job's failure mark (notify_state, notify_parts) ends with
# the apply of a version that has no entry listing failed or manual.  A job
# whose rule is removed after a failed event, and that then succeeds
# unheard, sends no `recovered` to a receiver added later: that receiver
# never heard of a failure, and nothing recovered then.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - recovered is sent only by the success that ends a failure, not by a later success under a new rule"
fresh_db it_notify_rule_recovered
"$PAL" migrate >/dev/null
A_PORT=$(free_port) B_PORT=$(free_port) T_PORT=$(free_port)
PIDS=
trap 'stop_all_nodes; for p in $PIDS; do kill "$p" 2>/dev/null; done' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
A="http://127.0.0.1:$A_PORT/hooks"
B="http://127.0.0.1:$B_PORT/hooks"
rule() { printf 'notify_rules:\n  - {tenant: billing, url: "%s", %s}\n' "$1" "$2"; }
{
	rule "$A" 'on: [failed, recovered], secret: "${HOOK_SECRET}"'
	cat <<YAML
jobs:
  - id: j
    tenant: billing
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:$T_PORT/x", timeout: 2s}
    retry: {max_attempts: 1}
YAML
} >"$NODE_DIR/v1.yaml"
expect_exit "apply rule A (failed, recovered) and the job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
# the job's service: 500 for 12 s, then 200
python3 tests/integration/webhook_receiver.py --port "$T_PORT" --log "$NODE_DIR/t.jsonl" --fail-for 12 &
PIDS="$PIDS $!"
python3 tests/integration/webhook_receiver.py --port "$A_PORT" --log "$NODE_DIR/a.jsonl" &
PIDS="$PIDS $!"
python3 tests/integration/webhook_receiver.py --port "$B_PORT" --log "$NODE_DIR/b.jsonl" &
PIDS="$PIDS $!"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
st() { sql "select coalesce(string_agg(state, ',' order by scheduled_at), '') from trigger_jobs where job_id = 'j'"; }
"$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r1 >/dev/null
wait_until "run 1 failed" 15 eval '[ "$(st)" = failed ]'
wait_until "A got failed" 10 eval 'grep -q "\"status\": 200" "$NODE_DIR/a.jsonl"'
rule "$A" 'remove: true' >"$NODE_DIR/rm.yaml"
expect_exit "remove rule A" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rm.yaml"
expect_eq "... the apply ended j's failure mark" "0 0" "$(sql "select count(*) from notify_state where failed_since is not null") $(sql "select count(*) from notify_parts")"
wait_until "v2 active" 15 eval '[ "$(sql "select active_version from jobs")" = 2 ]'
sleep 12
"$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r2 >/dev/null
wait_until "run 2 succeeded (nobody listening)" 15 eval '[ "$(st)" = failed,succeeded ]'
rule "$B" 'on: [failed, recovered], secret: "${HOOK_SECRET}"' >"$NODE_DIR/b.yaml"
expect_exit "add rule B (failed, recovered), later" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml"
wait_until "v3 active" 15 eval '[ "$(sql "select active_version from jobs")" = 3 ]'
"$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r3 >/dev/null
wait_until "run 3 succeeded" 15 eval '[ "$(st)" = failed,succeeded,succeeded ]'
sleep 3
sql "select webhook_id, url, event from notifications order by id" | sed 's/^/      /'
expect_eq "B got no recovered (it heard of no failure; the job had been succeeding)" 0 \
	"$(sql "select count(*) from notifications where url = '$B' and event = 'recovered'")"
finish
