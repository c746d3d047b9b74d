#!/usr/bin/env bash
# `palisade trigger` decides its refusals in the run's own transaction:
# an --at still to come that the job's schedule has is refused (exit 4, API
# 409 scheduled-instant) unless --new-effect, since the scheduler runs it
# under its own key (one effect for the instant, not two); a future --at the
# schedule does not have is a one-off run; a delete that commits between
# the command's first read and its insert (the window held open here by the
# request's advisory lock) still gets the retired job refused, never run; a
# past --at whose scheduled trigger has not run yet is refused as well, and
# a version stored but not yet activated decides what is still to come.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger - a scheduled instant still to come runs once, under its scheduled key; a retired job never runs, even when the delete races the trigger"

fresh_db it_trigger_guard
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1 LOOKAHEAD=1s OVERLAP=2s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=1
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: tf.x, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/tfx"}}
  - {id: rr.x, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/rrx"}}
  - {id: tf.p, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/tfp"}}
  - {id: nv.x, schedule: {cron: "0/4 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/nvx"}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led
ts() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
calls() { sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = '$1' and t.scheduled_at = to_timestamp($2) and a.outcome = 'succeeded'"; }

NOW=$(sql "select extract(epoch from now())::bigint")
AT=$(( (NOW + 10) / 2 * 2 ))       # an instant of */2, still to come
ODD=$(( AT + 1 ))                  # not an instant of */2
out=$("$PAL" trigger --job tf.x --at "$(ts $AT)" --reason "future" 2>&1); ec=$?
expect_eq "trigger --at a scheduled instant still to come: refused (exit 4)" 4 "$ec"
check "... saying the scheduler runs it" grep -q "still to come: the scheduler runs it" <<<"$out"
expect_eq "... nothing written" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'tf.x' and source = 'manual'")"
OP=$("$PAL" token create --name ops --role operator | tail -1)
st=$(curl -s -o "$NODE_DIR/ans" -w '%{http_code}' -X POST -H "Authorization: Bearer $OP" -H 'Content-Type: application/json' \
	--data "{\"reason\": \"future\", \"at\": \"$(ts $AT)\"}" "http://${NODE_ADMIN[n1]}/api/v1/jobs/tf.x/trigger")
expect_eq "the API: 409 scheduled-instant" "409 urn:palisade:problem:scheduled-instant" "$st $(jq -r .type "$NODE_DIR/ans")"
expect_exit "a future --at the schedule does not have: a one-off run (exit 0)" 0 \
	"$PAL" trigger --job tf.x --at "$(ts $ODD)" --reason "one-off"
past() { [ "$(sql "select extract(epoch from now())::bigint")" -ge $(( ODD + 4 )) ]; }
wait_until "the instants passed" 30 past
wait_until "... the scheduled instant ran" 15 has "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'tf.x' and t.scheduled_at = to_timestamp($AT) and a.outcome = 'succeeded'"
expect_eq "... once: one effect for the scheduled instant" 1 "$(calls tf.x $AT)"
expect_eq "... and the one-off ran once" 1 "$(calls tf.x $ODD)"

# a past instant whose scheduled trigger has not run yet (its job paused):
# the scheduler still runs it, so a manual run would be a second effect
expect_exit "pause tf.p" 0 "$PAL" pause --job tf.p --reason "hold"
held() { [ -n "$(sql "select 1 from trigger_jobs where job_id = 'tf.p' and state = 'pending' and scheduled_at < now() - interval '1 second' limit 1")" ]; }
wait_until "an instant of tf.p past and held" 20 held
P=$(sql "select floor(extract(epoch from max(scheduled_at)))::bigint from trigger_jobs where job_id = 'tf.p' and state = 'pending' and scheduled_at < now() - interval '1 second'")
out=$("$PAL" trigger --job tf.p --at "$(ts $P)" --reason "missed?" 2>&1); ec=$?
expect_eq "trigger --at a past instant whose scheduled trigger waits: refused (exit 4)" 4 "$ec"
check "... naming the waiting trigger" grep -q "has not run yet (pending)" <<<"$out"
expect_exit "resume tf.p" 0 "$PAL" resume --job tf.p --reason "go"
wait_until "... the held instant ran, under its scheduled key" 20 has "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'tf.p' and t.scheduled_at = to_timestamp($P) and a.outcome = 'succeeded'"
expect_eq "... once" 1 "$(calls tf.p $P)"

# a version stored and not yet taken over by a controller (its node away):
# the instants still to come are the new schedule's
stop_node n1
sed -i 's|{id: nv.x, schedule: {cron: "0/4 \* \* \* \* ?"}|{id: nv.x, schedule: {cron: "2/4 * * * * ?"}|' "$NODE_DIR/jobs.yaml"
expect_exit "apply nv.x v2 (seconds 2, 6, ... instead of 0, 4, ...) while no controller runs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
NOW=$(sql "select extract(epoch from now())::bigint")
NEW=$(( (NOW + 30) / 4 * 4 + 2 ))   # an instant of v2 only
OLD=$(( NEW + 2 ))                  # an instant of v1 only
expect_exit "an --at only the new version has: refused (exit 4)" 4 "$PAL" trigger --job nv.x --at "$(ts $NEW)" --reason "v2's"
expect_exit "an --at only the replaced version had: a one-off run (exit 0)" 0 "$PAL" trigger --job nv.x --at "$(ts $OLD)" --reason "v1's"
start_node n1
wait_until "shards led again" 20 all_shards_led

# the delete races the trigger: hold the request lock of (rr.x, race-1)
"$PSQL" "$PALISADE_PG" -XAtq -c "select pg_advisory_lock(hashtextextended('rr.x' || '/' || 'race-1', 7340))" \
	-c "select pg_sleep(6)" >/dev/null 2>&1 &
LOCKER=$!
sleep 1
"$PAL" trigger --job rr.x --request-id race-1 --reason "race" >"$NODE_DIR/trig.out" 2>&1 &
TRIG=$!
sleep 1
expect_exit "delete the job while the trigger waits between its check and its insert" 0 \
	"$PAL" delete --reason "retire" --wait 0 rr.x
wait $LOCKER
wait $TRIG
expect_eq "trigger refuses the retired job (exit 4), as when the delete came first" 4 $?
expect_eq "... no manual run of it" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'rr.x' and source = 'manual'")"
finish
