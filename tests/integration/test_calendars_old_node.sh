#!/usr/bin/env bash
# A controller of 0.2.0 (which knows no calendars) leading the shard of a job
# that names a shared calendar quarantines that job instead of firing the
# instants its calendar excludes (quarantine row, open ticket); its other
# jobs plan as before.  A new
# controller, after `palisade release`, plans the job with its calendar.
#
# Environment: PALISADE_OLD_TREE (default /tmp/palisade-0.2.0-build: the
# build tree of 0.2.0 from ops/releases/, shared with test_mixed_upgrade's
# cache when it rolls from 0.2.0).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - during a roll from 0.2.0 a job naming a calendar is never planned without it: the old controller quarantines it (ticket), the new one plans it"
T_START=$(date +%s)
NEW_PAL=$PAL
source tests/integration/releases.sh
old_release 0.2.0 || { finish; exit 1; }

it_db calendars_old --before-roll
SHARDS=1
LOOKAHEAD=2s write_conf "$CLUSTER_CONF"
apply_jobs "the new CLI applies a calendar and a job naming it" <<'YAML'
calendars:
  - {name: nights, exclude: {windows: ["00:00-06:00", "18:00-24:00"]}}
jobs:
  - {id: co.cal, schedule: {cron: "* * * * * ?", calendar: nights}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: co.plain, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_eq "its cron column carries the calendars' names" "@calendars(nights) * * * * * ?" \
	"$(sql "select cron from job_versions where job_id = 'co.cal'")"

PAL=$OLD_PAL start_node o1
wait_until "the 0.2.0 controller leads" 20 all_shards_led
quarantined() { [ "$(sql "select count(*) from quarantine where job_id = 'co.cal'")" = 1 ]; }
wait_until "0.2.0 quarantines the job naming a calendar" 20 quarantined
expect_match "... saying why" '@calendars\(nights\)' "$(sql "select error from quarantine where job_id = 'co.cal'")"
sleep 2
expect_eq "nothing planned for it by 0.2.0" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'co.cal'")"
check "the plain job is planned by 0.2.0" [ "$(sql "select count(*) from trigger_jobs where job_id = 'co.plain'")" -gt 0 ]
expect_eq "an open ticket names it for an operator" 1 \
	"$(sql "select count(*) from tickets where job_id = 'co.cal' and state = 'open'")"
stop_node o1

start_node n1
wait_until "the new controller leads" 20 all_shards_led
expect_exit "release the job" 0 "$PAL" release --reason "rolled to the new release" co.cal
planned_or_excluded() { [ $(( $(sql "select count(*) from trigger_jobs where job_id = 'co.cal'") + $(sql "select coalesce(sum(count), 0) from misfires where job_id = 'co.cal' and reason = 'excluded' and calendar = 'nights'") )) -gt 0 ]; }
wait_until "the new controller plans it with its calendar (planned, or excluded by nights)" 20 planned_or_excluded
hour=$(date -u +%H)
if [ "$hour" -ge 6 ] && [ "$hour" -lt 18 ]; then
	check "daytime: its instants planned" [ "$(sql "select count(*) from trigger_jobs where job_id = 'co.cal'")" -gt 0 ]
else
	expect_eq "night: none planned, all excluded" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'co.cal' and scheduled_at > now()")"
fi
echo "    figure: test took $(( $(date +%s) - T_START )) s"
finish
