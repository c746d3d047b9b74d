#!/usr/bin/env bash
# A job in shadow (mode: shadow) makes no call: "no call leaves palisade
# for it" (docs/migrating.md).  Its planning records misfires by the same
# rules as a live job's, but they send no `misfire` notification
# (palisade_notify_misfire): the old system runs those instants.  A live
# job beside it, with the same schedule and downtime, sends its own.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a job in shadow sends no misfire notification; a live job beside it does"

fresh_db it_notify_shadow
"$PAL" migrate >/dev/null
HOOK_PORT=$(free_port)
HOOK_LOG=$NODE_DIR/hooks.jsonl
HOOK_PID=
trap 'stop_all_nodes; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
LOOKAHEAD=1s MISFIRE=3s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" &
HOOK_PID=$!
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: migrating
    mode: shadow
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://127.0.0.1:1/never"}
    notify: [{on: [failed, manual, misfire, quarantined, recovered], url: "http://127.0.0.1:$HOOK_PORT/hooks", secret: "\${HOOK_SECRET}"}]
  - id: live
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://127.0.0.1:1/never"}
    notify: [{on: [misfire], url: "http://127.0.0.1:$HOOK_PORT/hooks", secret: "\${HOOK_SECRET}"}]
YAML
expect_exit "apply a shadow job with notify" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
wait_until "shadow triggers planned" 15 eval '[ "$(sql "select count(*) from trigger_jobs where job_id = '\''migrating'\'' and state = '\''shadow'\''")" -ge 2 ]'
stop_node n1
sleep 8   # palisade's controllers down: the instants meanwhile pass the misfire threshold
start_node n1
wait_until "the missed instants are recorded as misfires (skip), of both jobs" 20 eval \
	'[ "$(sql "select count(distinct job_id) from misfires where job_id in ('\''migrating'\'', '\''live'\'') and reason = '\''missed'\''")" = 2 ]'
wait_until "the live job's misfire notifications delivered" 15 eval \
	'[ "$(sql "select count(*) from notifications where job_id = '\''live'\'' and event = '\''misfire'\'' and delivered_at is not null")" -ge 1 ]'
expect_eq "every trigger of the job is shadow (no call)" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'migrating' and state <> 'shadow'")"
expect_eq "no notification queued for the job in shadow" 0 \
	"$(sql "select count(*) from notifications where job_id = 'migrating'")"
expect_eq "no webhook delivered for the job in shadow" 0 "$(jq -s '[.[] | select(.body.data.job == "migrating")] | length' "$HOOK_LOG")"
expect_eq "every misfire row of the live job has its notification" 0 \
	"$(sql "select count(*) from misfires m where m.job_id = 'live' and not exists (select 1 from notifications n
	  where n.webhook_id = 'msg_misfire' || m.id || '_0')")"
echo "    figure: misfire rows (shadow job, live job): $(sql "select count(*) filter (where job_id = 'migrating') || ', ' || count(*) filter (where job_id = 'live') from misfires");" \
	"notifications: $(sql "select coalesce(string_agg(job_id || ' ' || event, ', '), 'none') from notifications")"
finish
