#!/usr/bin/env bash
# Notify: the receivers of an event are those of the job's latest version
# when the event happens, also for a trigger of a version without
# `notify:`.  A job without notify retries; a tenant rule (failed,
# recovered) is applied between its attempts; the trigger then ends
# failed.  The rule's receiver gets that `failed` (queued by the result
# commit, which asks the job's latest version), and the job's next
# success sends it `recovered`.  A job the rule does not reach sends
# nothing.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a failure that ends after the apply that added a receiver reaches it, whatever version planned the trigger"
source tests/integration/notify_lib.sh
B_PORT=$(free_port)
B="http://127.0.0.1:$B_PORT/hooks"
RETRY='{max_attempts: 2, backoff: {initial: 8s, max: 8s, multiplier: 1, jitter: none}}'
{ echo "jobs:"; notify_job j billing "$RETRY"; notify_job other ops "$RETRY"; } >"$NODE_DIR/v1.yaml"
expect_exit "apply j (tenant billing) and other (tenant ops), neither with notify" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
receiver B "$B_PORT"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
receiver T "$T_PORT" 20 # the jobs' service: 500 for 20 s, then 200
expect_exit "trigger j" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r1
expect_exit "trigger other" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job other --reason r1
wait_until "j's first attempt failed: its trigger waits to retry" 20 eval '[ "$(states j)" = retry_wait ]'
printf 'notify_rules:\n  - {tenant: billing, url: "%s", on: [failed, recovered], secret: "${HOOK_SECRET}"}\n' "$B" >"$NODE_DIR/b.yaml"
expect_exit "add rule B (failed, recovered) while j's trigger of v1 retries" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml"
expect_eq "... j's trigger still waits, of v1, which has no notify; j's latest version is v2" "retry_wait 1 null 2" \
	"$(sql "select t.state || ' ' || t.version || ' ' || coalesce(v.spec->'notify', 'null') || ' ' || j.latest_version from triggers t join jobs j on j.job_id = t.job_id join job_versions v on v.job_id = t.job_id and v.version = t.version where t.job_id = 'j'")"
wait_until "j's trigger ended failed" 30 eval '[ "$(states j)" = failed ]'
wait_until "other's trigger ended failed" 30 eval '[ "$(states other)" = failed ]'
wait_until "B got a failed event" 10 eval '[ "$(got B)" = failed ]'
sql "select webhook_id, url, event from notifications order by id" | sed 's/^/      /'
expect_eq "j's failed event (of its v1 trigger) queued for B, once" "failed $B 1" \
	"$(sql "select event || ' ' || url || ' ' || (payload#>>'{data,version}') from notifications where job_id = 'j'")"
expect_eq "... the job is marked failing" 1 "$(sql "select count(*) from notify_state where job_id = 'j' and failed_since is not null")"
expect_eq "other (no notify in any version) queued nothing" 0 "$(sql "select count(*) from notifications where job_id = 'other'")"
until_t0 22
expect_exit "trigger j again once its service answers" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r2
wait_until "j's second trigger succeeded" 30 eval '[ "$(states j)" = failed,succeeded ]'
wait_until "B got recovered" 10 eval '[ "$(got B)" = "failed recovered" ]'
finish
