#!/usr/bin/env bash
# Notify rules: with executor.secrets set, a notify entry a job inherits
# from its group's (or tenant's) rule is checked against the job's tenant
# at apply, as the job's own entries are: `apply --config` refuses (exit
# 65) a file whose rule would give a job of tenant billing ${OPS_HOOK}
# (given to tenant ops only), whether the job is in the file or is a
# stored job that would follow the rule, and the API answers 422
# forbidden-secret; the message names the job, its tenant and the rule,
# and nothing is stored.  A rule the tenant is given is applied and
# delivered.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a notify entry a job inherits from its group's or tenant's rule is checked against the job's tenant at apply, as its own would be"
fresh_db it_notify_rule_secret
"$PAL" migrate >/dev/null
A_PORT=$(free_port)
A_PID=
trap 'stop_all_nodes; [ -n "$A_PID" ] && kill "$A_PID" 2>/dev/null' EXIT
export OPS_HOOK="whsec_$(head -c 24 /dev/urandom | base64)"
export HOOK_SECRET=$OPS_HOOK # the receiver verifies the signature with it
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s, secrets: {ops: [OPS_HOOK], billing: [BILLING_HOOK]}}" "notify: {interval: 200ms, backoff_max: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
DEAD=127.0.0.1:$(free_port) # nothing listens: every call fails
A="http://127.0.0.1:$A_PORT/hooks"
job() { printf '  - id: %s\n    tenant: %s\n    group: reports\n    schedule: {cron: "0 0 0 1 1 ? 2099"}\n    target: {url: "http://%s/x", timeout: 1s}\n    retry: {max_attempts: 1}\n%s' "$1" "$2" "$DEAD" "${3:-}"; }
{ echo "jobs:"; job own billing "    notify: [{on: [failed], url: \"$A\", secret: \"\${OPS_HOOK}\"}]
"; } >"$NODE_DIR/own.yaml"
expect_exit "control: a billing job naming \${OPS_HOOK} itself is refused by apply --config" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/own.yaml"
GROUP_RULE="notify_rules:
  - {group: reports, on: [failed], url: \"$A\", secret: \"\${OPS_HOOK}\"}"
printf '%s\njobs:\n%s\n%s\n' "$GROUP_RULE" "$(job opsjob ops)" "$(job billjob billing)" >"$NODE_DIR/all.yaml"
expect_exit "the group's rule with \${OPS_HOOK} and the jobs of ops and billing: refused" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/all.yaml"
echo "$OUT" | sed 's/^/      /'
check "... the message names billjob, its tenant and the group's rule" \
	eval 'echo "$OUT" | grep "job \"billjob\" (tenant billing) inherits notify\[0\] from the notify rule of group reports" | grep -q "does not give OPS_HOOK to tenant billing"'
expect_eq "... nothing stored" "0 0" "$(sql "select count(*) from notify_rules") $(sql "select count(*) from jobs")"
printf 'jobs:\n%s\n%s\n' "$(job opsjob ops)" "$(job billjob billing)" >"$NODE_DIR/jobs.yaml"
expect_exit "the jobs alone" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
echo "$GROUP_RULE" >"$NODE_DIR/rule.yaml"
expect_exit "the group's rule alone: refused, billjob would follow it" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rule.yaml"
check "... the message names billjob" eval 'echo "$OUT" | grep -q "job \"billjob\" (tenant billing) inherits"'
expect_eq "... nothing stored" "0 1" "$(sql "select count(*) from notify_rules") $(sql "select max(latest_version) from jobs")"
python3 tests/integration/webhook_receiver.py --port "$A_PORT" --log "$NODE_DIR/a.jsonl" &
A_PID=$!
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[n1]}/readyz")" = 200 ]; }
wait_until "node n1 ready" 30 ready
st=$(curl -s -o "$NODE_DIR/api.out" -w '%{http_code}' -X POST -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" \
	-H 'Content-Type: application/yaml' --data-binary @"$NODE_DIR/rule.yaml" "http://${NODE_ADMIN[n1]}/api/v1/apply?reason=test")
sed 's/^/      /' "$NODE_DIR/api.out"; echo
expect_eq "through the API: 422 forbidden-secret" "422 forbidden-secret" "$st $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["type"].rsplit("/",1)[-1].rsplit(":",1)[-1])' "$NODE_DIR/api.out")"
check "... naming billjob" grep -q 'job \\"billjob\\" (tenant billing) inherits' "$NODE_DIR/api.out"
expect_eq "... nothing stored" 0 "$(sql "select count(*) from notify_rules")"
printf 'notify_rules:\n  - {tenant: ops, on: [failed], url: "%s", secret: "${OPS_HOOK}"}\n' "$A" >"$NODE_DIR/ops.yaml"
expect_exit "tenant ops's rule with \${OPS_HOOK}: applied" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/ops.yaml"
wait_until "opsjob v2 active" 15 eval '[ "$(sql "select active_version from jobs where job_id = '\''opsjob'\''")" = 2 ]'
"$PAL" trigger --config "$CLUSTER_CONF" --job opsjob --reason test >/dev/null
wait_until "opsjob's failed event delivered" 20 eval '[ "$(sql "select count(*) from notifications where job_id = '\''opsjob'\'' and delivered_at is not null")" = 1 ]'
finish
