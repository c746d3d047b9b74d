#!/usr/bin/env bash
# Two jobs share one calendar whose daily window excludes their next few
# instants: those are recorded as misfires (reason excluded) naming the
# calendar and its version, the others fire.  A change of the calendar is
# a new calendar version; `plan diff` shows both jobs changed before the
# apply, and the apply moves both plans from the next tick; so does a
# change applied on its own, without the jobs' file: the stored jobs that
# name the calendar follow it.  A job naming a calendar no file defines is
# refused with its position.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - an instant a shared calendar excludes is recorded (reason excluded, calendar and version), never silently dropped; a calendar change moves every job that names it"
T_START=$(date +%s)

it_db
sink_up
SHARDS=2
LOOKAHEAD=2s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"

# A window must not cross midnight (UTC, the calendar's zone).
while [ $(( $(date -u +%s) % 86400 )) -gt $(( 86400 - 60 )) ]; do sleep 1; done
hms() { date -u -d "@$1" +%H:%M:%S; }
# calendar FILE FROM TO: the calendar "office" excluding [FROM, TO) daily.
calendar() {
	cat >"$1" <<YAML
calendars:
  - name: office
    timezone: UTC
    exclude:
      windows: ["$(hms "$2")-$(hms "$3")"]
      yearly: ["02-30"]
YAML
}
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: cal.a
    schedule: {cron: "*/2 * * * * ?", calendar: office}
    target: {url: "http://$SINK_ADDR/effects/cal", body: '{"job": "{job}", "at": "{scheduled_at}"}'}
  - id: cal.b
    schedule: {cron: "*/2 * * * * ?", calendar: [office]}
    target: {url: "http://$SINK_ADDR/effects/cal", body: '{"job": "{job}", "at": "{scheduled_at}"}'}
YAML

# A yearly date that does not exist is refused, with its position.
calendar "$NODE_DIR/cal.yaml" 100 200
expect_exit "an impossible yearly date: validate refuses it" 65 "$PAL" validate "$NODE_DIR/cal.yaml" "$NODE_DIR/jobs.yaml"
expect_match "... at file:line:col" "cal.yaml:6:[0-9]+: error: exclude.yearly: invalid entry \"02-30\"" "$OUT"

now=$(date +%s)
W1=$((now + 6)) W1E=$((now + 12))
calendar "$NODE_DIR/cal.yaml" "$W1" "$W1E"
sed -i 's/      yearly: \["02-30"\]/      yearly: ["02-29"]/' "$NODE_DIR/cal.yaml"
# Unknown names are refused where they are written.
printf 'jobs:\n  - {id: cal.x, schedule: {cron: "* * * * *", calendar: [office, nope]}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$NODE_DIR/bad.yaml"
expect_exit "a job naming an unknown calendar: validate refuses it" 65 "$PAL" validate "$NODE_DIR/cal.yaml" "$NODE_DIR/bad.yaml"
expect_match "... at file:line:col" "bad.yaml:2:[0-9]+: error: unknown calendar \"nope\"" "$OUT"
expect_exit "... and apply" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal.yaml" "$NODE_DIR/bad.yaml"
expect_exit "the jobs without their calendar's file: refused" 65 "$PAL" validate "$NODE_DIR/jobs.yaml"

expect_exit "apply the calendar and the two jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal.yaml" "$NODE_DIR/jobs.yaml"
expect_match "calendar office v1 created" "created +calendar office v1" "$OUT"
T0=$(rfc3339_ago -2)
lead_shards 20 c1

excluded() { # JOB VERSION: instants recorded excluded by office vVERSION
	sql "select coalesce(sum(count), 0) from misfires where job_id = '$1' and reason = 'excluded'
	     and calendar = 'office' and calendar_version = $2"
}
past() { [ "$(date +%s)" -ge "$1" ]; }
inside() { # JOB FROM TO: triggers planned in [FROM, TO)
	sql "select count(*) from trigger_jobs where job_id = '$1' and scheduled_at >= to_timestamp($2) and scheduled_at < to_timestamp($3)"
}
window_excluded() { # WHICH VERSION FROM TO: both jobs skipped the window, recorded
	# planned past its end: each of its instants planned or recorded (a
	# tick's watermark moves with its rows and misfire records)
	wait_until "the $1 window planned past" 30 planned_past "$(date -u -d "@$4" +%Y-%m-%dT%H:%M:%SZ)"
	local j
	for j in cal.a cal.b; do
		expect_eq "$j: the 3 instants of the $1 window recorded excluded by office v$2" 3 "$(excluded $j "$2")"
		expect_eq "$j: nothing planned inside the $1 window" 0 "$(inside $j "$3" "$4")"
	done
}
window_excluded first 1 "$W1" "$W1E"
# Outside the window both jobs plan as usual: at least 4 instants, counted
# as they come (a node slow to start under load plans few before it, and
# the ones after it arrive with the horizon).
outside() { # JOB
	[ "$(sql "select count(*) from trigger_jobs where job_id = '$1' and (scheduled_at < to_timestamp($W1) or scheduled_at >= to_timestamp($W1E))")" -ge 4 ]
}
for j in cal.a cal.b; do
	wait_until "$j: instants before and after the window planned" 20 outside "$j"
done
expect_match "palisade misfires names the calendar and its version" "excluded \(office v1\)" "$("$PAL" misfires --job cal.a)"

# The calendar changes: a new window from 8 s on.
now=$(date +%s)
W2=$((now + 8)) W2E=$((now + 14))
calendar "$NODE_DIR/cal.yaml" "$W2" "$W2E"
sed -i 's/      yearly: \["02-30"\]/      yearly: ["02-29"]/' "$NODE_DIR/cal.yaml"
expect_exit "plan diff of the changed calendar" 0 "$PAL" plan diff --count 12 "$NODE_DIR/cal.yaml" "$NODE_DIR/jobs.yaml"
expect_eq "plan diff: both jobs changed" 2 "$(grep -cE '^cal\.[ab]: changed' <<<"$OUT")"
expect_match "plan diff: the new window's instants marked excluded" "$(hms $((W2 + W2 % 2)))Z +x excluded" "$OUT"
expect_exit "apply the changed calendar" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal.yaml" "$NODE_DIR/jobs.yaml"
expect_match "calendar office v2" "updated +calendar office v2" "$OUT"
expect_match "both jobs get a version" "updated +cal.a v2.*updated +cal.b v2" "$(tr '\n' ' ' <<<"$OUT")"
window_excluded second 2 "$W2" "$W2E"
expect_match "palisade calendars: office v2, both jobs on it" "^office +2 +UTC +exclude .*cal\.a \(v2\), cal\.b \(v2\)" "$("$PAL" calendars)"
expect_exit "palisade calendars of an unknown name" 3 "$PAL" calendars nope

# The calendar changes on its own, in a command without the jobs: both jobs
# follow it (a version each, in the calendar's transaction), plan diff of
# the calendar's file alone shows them, and the new window is excluded.
now=$(date +%s)
W3=$((now + 8)) W3E=$((now + 14))
calendar "$NODE_DIR/cal.yaml" "$W3" "$W3E"
sed -i 's/      yearly: \["02-30"\]/      yearly: ["02-29"]/' "$NODE_DIR/cal.yaml"
expect_exit "plan diff of the calendar alone" 0 "$PAL" plan diff --count 12 "$NODE_DIR/cal.yaml"
expect_eq "plan diff: both jobs that name it changed" 2 "$(grep -cE '^cal\.[ab]: changed \(stored v2; follows calendar office v3\)' <<<"$OUT")"
expect_match "plan diff: the new window's instants marked excluded" "$(hms $((W3 + W3 % 2)))Z +x excluded" "$OUT"
expect_exit "apply the calendar alone" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal.yaml"
expect_match "calendar office v3" "updated +calendar office v3" "$OUT"
expect_match "both jobs follow it" "updated +cal.a v3 \(follows a calendar it names\).*updated +cal.b v3 \(follows" "$(tr '\n' ' ' <<<"$OUT")"
expect_eq "their latest versions carry office v3" "cal.a 3 3|cal.b 3 3" "$(sql "select string_agg(j.job_id || ' ' || v.version || ' ' || (v.spec #>> '{schedule,calendars,0,version}'), '|' order by j.job_id)
	from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version")"
expect_exit "the same calendar again: nothing follows" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal.yaml"
expect_match "... unchanged, no job updated" "^unchanged +calendar office v3.*apply: 0 created, 0 updated" "$(tr '\n' ' ' <<<"$OUT")"
window_excluded third 3 "$W3" "$W3E"
expect_eq "calendar_versions holds the three versions" "1 2 3" "$(sql "select string_agg(version::text, ' ' order by version) from calendar_versions where name = 'office'")"
expect_match "palisade calendars: both jobs on office v3" "^office +3 +UTC +exclude .*cal\.a \(v3\), cal\.b \(v3\)" "$("$PAL" calendars)"
expect_exit "a job naming a calendar is retired without its calendar's file" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "calendar test" cal.b
expect_eq "... its retiring version keeps office v3" 3 "$(sql "select v.spec #>> '{schedule,calendars,0,version}' from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id = 'cal.b'")"
expect_eq "every version audited" "calendar.create calendar.update calendar.update" "$(sql "select string_agg(action, ' ' order by id) from audit_log where scope = 'calendar:office'")"

# verify's window holds the whole third window
wait_wall "the third window passed" 30 past $((W3E + 2))
T1=$(rfc3339_ago 3)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "the window's triggers succeeded" 20 settled
expect_exit "verify: every instant fired or recorded, one effect each" 0 "$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG"
echo "    figure: test took $(( $(date +%s) - T_START )) s"
finish
