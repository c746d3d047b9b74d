#!/usr/bin/env bash
# Notify rules: the receivers of an event are those of the job's latest
# version when the event is queued.  After the apply that removes a rule,
# a trigger planned by the version that carried it (here one still
# retrying) queues nothing for the rule's url, and the events already
# queued for that url and not delivered are dropped by the apply, each
# named in a notification.drop audit row.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - no event reaches a notify rule's url after the apply that removed the rule"
fresh_db it_notify_rule_removed
"$PAL" migrate >/dev/null
A_PORT=$(free_port)
A_PID=
trap 'stop_all_nodes; [ -n "$A_PID" ] && kill "$A_PID" 2>/dev/null' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
DEAD=127.0.0.1:$(free_port) # nothing listens: every call fails
A="http://127.0.0.1:$A_PORT/hooks"
cat >"$NODE_DIR/all.yaml" <<YAML
notify_rules:
  - {tenant: billing, on: [failed], url: "$A", secret: "\${HOOK_SECRET}"}
jobs:
  - id: quick
    tenant: billing
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$DEAD/x", timeout: 1s}
    retry: {max_attempts: 1}
  - id: slowfail
    tenant: billing
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$DEAD/x", timeout: 1s}
    retry: {max_attempts: 3, backoff: {initial: 8s, max: 8s, multiplier: 1, jitter: none}}
YAML
expect_exit "apply the tenant rule and the jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/all.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
# A's receiver is down: quick's failed event waits in the outbox
expect_exit "trigger quick" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job quick --reason test
wait_until "quick's failed event queued for A" 20 eval '[ "$(sql "select count(*) from notifications where job_id = '\''quick'\'' and url = '\''$A'\''")" = 1 ]'
expect_exit "trigger slowfail" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job slowfail --reason test
wait_until "slowfail's first attempt failed" 20 eval '[ "$(sql "select count(*) from attempts a join triggers t on t.id = a.trigger_id where t.job_id = '\''slowfail'\''")" -ge 1 ]'
wh=$(sql "select webhook_id from notifications where job_id = 'quick'")
cat >"$NODE_DIR/rm.yaml" <<YAML
notify_rules:
  - {tenant: billing, url: "$A", remove: true}
YAML
expect_exit "remove the rule while slowfail retries" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rm.yaml"
echo "$OUT" | sed 's/^/      /'
expect_eq "... slowfail's latest version has no notify" "null" "$(sql "select coalesce(v.spec->'notify', 'null') from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id = 'slowfail'")"
expect_eq "... quick's undelivered event for A dropped by the apply" 0 "$(sql "select count(*) from notifications where url = '$A'")"
expect_eq "... and audited with its webhook id" "quick $A [\"$wh\"]" "$(sql "select substr(scope, 5) || ' ' || (details->>'url') || ' ' || (details->'webhook_ids')::text from audit_log where action = 'notification.drop'")"
python3 tests/integration/webhook_receiver.py --port "$A_PORT" --log "$NODE_DIR/a.jsonl" &
A_PID=$!
wait_until "slowfail's trigger ended failed" 40 eval '[ "$(sql "select count(*) from trigger_jobs where job_id = '\''slowfail'\'' and state = '\''failed'\''")" = 1 ]'
sleep 3
sql "select webhook_id, url, coalesce(delivered_at::text, 'pending') from notifications" | sed 's/^/      /'
expect_eq "no notification queued for the removed rule's url" 0 "$(sql "select count(*) from notifications where url = '$A'")"
expect_eq "the removed rule's receiver got nothing" 0 "$(grep -c . "$NODE_DIR/a.jsonl" 2>/dev/null || echo 0)"
finish
