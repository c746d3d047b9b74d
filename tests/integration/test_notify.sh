#!/usr/bin/env bash
# Notifications: a job's failed, manual, misfire, quarantined and
# recovered events are queued in the outbox by the transaction that causes
# them and delivered by the executor node to a webhook receiver that is
# down at first, then answers 500, then 200: every event arrives, none
# twice by webhook-id among the answered deliveries, each signed as
# Standard Webhooks says (verified in the receiver with the job's whsec_
# secret); recovered once after the notified failure; a job without
# notify queues nothing.  The console link is absolute (admin.public_url).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - every event of a job with notify: is delivered at least once, signed, with one webhook id across its redeliveries, whatever the receiver did meanwhile"
T_START=$(date +%s)

it_db
sink_up
HOOK_PORT=$(free_port)
HOOK_LOG=$NODE_DIR/hooks.jsonl
HOOK_PID=
trap 'stop_all_nodes; stop_sink; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null' EXIT
# the secret the node signs with and the receiver verifies with
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
LOOKAHEAD=2s MISFIRE=4s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" \
	"notify: {interval: 200ms, backoff_max: 2s}" "admin: {public_url: \"https://palisade.example.com/ops/\"}"
DEAD=127.0.0.1:$(free_port) # nothing listens: connection refused
HOOK="notify: [{on: [failed, manual, misfire, recovered], url: \"http://127.0.0.1:$HOOK_PORT/hooks\", secret: \"\${HOOK_SECRET}\"}]"
END=$(date -u -d '+12 seconds' +%Y-%m-%dT%H:%M:%SZ)
apply_jobs "apply jobs with notify:" <<YAML
jobs:
  - id: doomed
    schedule: {cron: "*/2 * * * * ?", end: $END}
    target: {url: "http://$DEAD/x", timeout: 1s}
    retry: {max_attempts: 1}
    $HOOK
  - id: flaky
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$SINK_ADDR/effects/flaky", timeout: 2s}
    retry: {max_attempts: 1}
    $HOOK
  - id: slow
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$SINK_ADDR/effects/slow", timeout: 1s}
    retry: {max_attempts: 1}
    $HOOK
  - id: held
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://$SINK_ADDR/effects/held"}
    $HOOK
  - id: poisoned
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://$DEAD/p"}
    notify: [{on: quarantined, url: "http://127.0.0.1:$HOOK_PORT/hooks", secret: "\${HOOK_SECRET}"}]
  - id: quiet
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$DEAD/q", timeout: 1s}
    retry: {max_attempts: 1}
YAML
[ "$T_FAILS" = 0 ] || { echo "$OUT"; finish; exit 1; }
sed "s|\\\${HOOK_SECRET}|$HOOK_SECRET|" "$NODE_DIR/jobs.yaml" >"$NODE_DIR/literal.yaml"
expect_exit "a literal secret is refused (65)" 65 "$PAL" validate "$NODE_DIR/literal.yaml"
expect_match "... saying why" "not the secret itself" "$OUT"
expect_eq "... and the stored spec holds the reference only" 0 "$(sql "select count(*) from job_versions where spec::text like '%whsec_%'")"
"$PAL" pause --job held --reason "notify test" >/dev/null
lead_shards 20 n1 || { finish; exit 1; }

# planning poisoned fails (its rows are refused): the controller quarantines it
sql "alter table triggers add constraint it_poison check (job_ref <> $(sql "select ref from jobs where job_id = 'poisoned'")) not valid" >/dev/null
wait_until "poisoned is quarantined" 20 eval '[ "$(sql "select count(*) from quarantine where job_id = '\''poisoned'\''")" = 1 ]'
sql "alter table triggers drop constraint it_poison" >/dev/null

state_of() { sql "select string_agg(state, ',' order by id) from trigger_jobs where job_id = '$1' and source = 'manual'"; }
sink_faults '{"error_rate": 1}'
"$PAL" trigger --config "$CLUSTER_CONF" --job flaky --reason "fails" >/dev/null
wait_until "flaky fails (the sink answers 503)" 15 eval '[ "$(state_of flaky)" = failed ]'
sink_faults '{"error_rate": 0, "delay_ms": 3000}'
"$PAL" trigger --config "$CLUSTER_CONF" --job slow --reason "times out" >/dev/null
wait_until "slow goes manual (timeout, budget spent, outcome unknown)" 15 eval '[ "$(state_of slow)" = manual ]'
sink_faults '{"delay_ms": 0}'
"$PAL" trigger --config "$CLUSTER_CONF" --job flaky --reason "succeeds" >/dev/null
wait_until "flaky succeeds" 15 eval '[ "$(state_of flaky)" = failed,succeeded ]'
"$PAL" trigger --config "$CLUSTER_CONF" --job flaky --reason "succeeds again" >/dev/null
wait_until "flaky succeeds again" 15 eval '[ "$(state_of flaky)" = failed,succeeded,succeeded ]'
"$PAL" trigger --config "$CLUSTER_CONF" --job quiet --reason "fails silently" >/dev/null
wait_until "quiet fails" 15 eval '[ "$(state_of quiet)" = failed ]'
wait_until "held holds instants past the misfire threshold" 15 eval \
	'[ "$(sql "select count(*) from trigger_jobs where job_id = '\''held'\'' and state = '\''pending'\'' and scheduled_at < now() - interval '\''6 seconds'\''")" -ge 1 ]'
"$PAL" resume --config "$CLUSTER_CONF" --job held --reason "notify test" >/dev/null
wait_until "the held instants past the threshold are misfires" 15 eval \
	'[ "$(sql "select count(*) from misfires where job_id = '\''held'\'' and reason = '\''paused'\''")" -ge 1 ]'
wait_until "doomed has failed at least twice" 15 eval \
	'[ "$(sql "select count(*) from trigger_jobs where job_id = '\''doomed'\'' and state = '\''failed'\''")" -ge 2 ]'

expect_eq "nothing delivered while the receiver is down" 0 "$(sql "select count(*) from notifications where delivered_at is not null")"
expect_eq "... though deliveries were tried, and failed to connect" t \
	"$(sql "select bool_and(last_error is not null) and max(attempts) >= 2 from notifications where job_id = 'flaky' and event = 'failed'")"
expect_eq "no notification for the job without notify:" 0 "$(sql "select count(*) from notifications where job_id = 'quiet'")"
expect_eq "the outbox keeps the secret's reference, never its value" "0|1" \
	"$(sql "select count(*) filter (where secret like '%whsec_%' or payload::text like '%whsec_%'), count(distinct secret) from notifications")"

# the receiver: 500 for 3 s, then 200
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" --fail-for 3 &
HOOK_PID=$!
WAIT_STEP=0.2 wait_until "the receiver answered 500 at least once" 15 grep -q '"status": 500' "$HOOK_LOG"
ended() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'doomed' and state not in ('failed', 'succeeded')")" = 0 ] &&
	[ "$(sql "select max(scheduled_at) < now() - interval '2 seconds' from trigger_jobs where job_id = 'doomed'")" = t ]; }
wait_until "doomed has ended (its schedule's end)" 20 ended
all_delivered() { [ "$(sql "select count(*) from notifications where delivered_at is null")" = 0 ]; }
wait_until "every notification delivered" 20 all_delivered

events=$(sql "select event || '=' || count(*) from notifications group by event order by event" | paste -sd' ')
doomed_failed=$(sql "select count(*) from trigger_jobs where job_id = 'doomed' and state = 'failed'")
expect_eq "one failed event per failed trigger of doomed" "$doomed_failed" "$(sql "select count(*) from notifications where job_id = 'doomed' and event = 'failed'")"
expect_eq "flaky: one failed, one recovered (not one per success)" "failed recovered" "$(sql "select string_agg(event, ' ' order by id) from notifications where job_id = 'flaky'")"
expect_eq "slow: one manual" "manual" "$(sql "select string_agg(event, ' ') from notifications where job_id = 'slow'")"
expect_eq "poisoned: one quarantined (its misfires are not asked for)" "quarantined" "$(sql "select string_agg(event, ' ') from notifications where job_id = 'poisoned'")"
expect_eq "held: one misfire per misfire row" "$(sql "select count(*) from misfires where job_id = 'held'")" "$(sql "select count(*) from notifications where job_id = 'held' and event = 'misfire'")"
rows=$(sql "select count(*) from notifications")
ok_ids=$(jq -r 'select(.status == 200) | .id' "$HOOK_LOG" | sort)
expect_eq "every notification answered 200 once at the receiver ($events)" "$rows" "$(sort -u <<<"$ok_ids" | grep -c .)"
expect_eq "... none twice by webhook-id" "" "$(uniq -d <<<"$ok_ids")"
expect_eq "... and they are the outbox's ids" "$(sql "select webhook_id from notifications order by 1" | sort)" "$(sort -u <<<"$ok_ids")"
expect_eq "every request's signature verified with the secret" "true" "$(jq -s 'all(.sig_ok)' "$HOOK_LOG")"
expect_eq "every Idempotency-Key is the webhook-id" "true" "$(jq -s 'all(.key == .id)' "$HOOK_LOG")"
expect_eq "some notifications were delivered again after a 500 (same id)" "true" \
	"$(jq -s '[.[] | select(.status == 500) | .id] as $r | [.[] | select(.status == 200) | .id] as $o | any($r[]; . as $x | $o | index($x))' "$HOOK_LOG")"
tid=$(sql "select id from trigger_jobs where job_id = 'flaky' and state = 'failed'")
body=$(jq -c "select(.status == 200 and .body.data.event == \"failed\" and .body.data.job == \"flaky\") | .body" "$HOOK_LOG" | head -1)
expect_eq "a failed event's body: job, trigger, instant, state, error class, attempts, console page (absolute: admin.public_url)" \
	"palisade.job.failed flaky $tid true failed true 1 https://palisade.example.com/ops/console/job?id=flaky" \
	"$(jq -r '[.type, .data.job, .data.trigger, (.data.scheduled_at | test("^[0-9-]{10}T[0-9:]{8}Z$")), .data.state, (.data.error_class | length > 0), .data.attempts, .data.console] | join(" ")' <<<"$body")"
expect_eq "metrics: delivered and failed deliveries counted" "$rows t" \
	"$(metric n1 palisade_notify_delivered_total) $([ "$(metric n1 palisade_notify_failed_total)" -ge 1 ] && echo t)"
echo "    figure: took $(($(date +%s) - T_START)) s ($events)"
finish
