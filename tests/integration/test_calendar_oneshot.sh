#!/usr/bin/env bash
# A calendar or an `exclude:` changed while a job's instant X is planned
# ahead (inside the lookahead, not yet claimed).  A one-shot's new version
# takes over at the apply (docs/jobs.md, "Where a new version takes over"):
#  os.a: its shared calendar, applied on its own, now excludes X: the old
#        version's row, never claimed, is dropped by the apply (audited
#        `trigger.drop`: a cancelled row would keep X's plan key), nothing
#        runs, X is recorded excluded once;
#  os.b: its calendar no longer excludes X, which the old version recorded
#        excluded: X fires once and the new version's trigger supersedes the
#        old record (dropped, audited `misfire.supersede`);
#  os.c: its own `exclude:` now names X's date: as os.a;
#  os.d: its own `exclude:` of X's date added, then removed again (the job
#        as at first): X fires once, under the last version, and the
#        exclusion's record is superseded;
#  os.e: as os.d through its shared calendar ce, applied alone twice.
# A cron job keeps X under the version that planned it (X is at or before the
# switch point E): cr.a (calendar now excludes X) runs it once, cr.b (calendar
# no longer excludes X) keeps it recorded excluded, not run.  Each instant is
# fired or recorded, never both; verify is clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - an exclusion changed under a planned instant: the instant is fired or recorded excluded, never both, and verify agrees"
fresh_db it_calendar_oneshot
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1 LOOKAHEAD=40s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=1
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
# X and its window stay inside one UTC day
while [ $(( $(date -u +%s) % 86400 )) -gt $(( 86400 - 120 )) ]; do sleep 1; done
hms() { date -u -d "@$1" +%H:%M:%S; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
N=$(date +%s)
X=$((N + 30))
XCRON="$(date -u -d @$X +'%-S %-M %-H') * * ?"
cal() { printf '  - {name: %s, timezone: UTC, exclude: {windows: ["%s-%s"]}}\n' "$1" "$2" "$3"; }
job() { printf '  - {id: %s, schedule: {%s}, target: {url: "http://%s/effects/%s"}}\n' "$1" "$2" "$SINK_ADDR" "$1"; }
{
	echo calendars:
	cal ca 00:00:00 00:00:01
	cal cb "$(hms $((X - 2)))" "$(hms $((X + 2)))"
	cal ce 00:00:00 00:00:01
	echo jobs:
	job os.a "at: \"$(iso $X)\", calendar: ca"
	job os.b "at: \"$(iso $X)\", calendar: cb"
	job os.c "at: \"$(iso $X)\""
	job os.d "at: \"$(iso $X)\""
	job os.e "at: \"$(iso $X)\", calendar: ce"
	job cr.a "cron: \"$XCRON\", timezone: UTC, calendar: ca"
	job cr.b "cron: \"$XCRON\", timezone: UTC, calendar: cb"
} >"$NODE_DIR/v1.yaml"
expect_exit "apply v1" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led
pending() { has "select count(*) from trigger_jobs where job_id = '$1' and state = 'pending'"; }
recorded() { has "select count(*) from misfires where job_id = '$1' and reason = 'excluded'"; }
planned_a() { pending os.a && pending cr.a && pending os.d && pending os.e; }
recorded_b() { recorded os.b && recorded cr.b; }
wait_until "os.a's, cr.a's, os.d's and os.e's instant planned (pending)" 20 planned_a
wait_until "os.b's and cr.b's instant recorded excluded" 20 recorded_b
# the calendars change on their own: ca now excludes X, cb no longer does
{
	echo calendars:
	cal ca "$(hms $((X - 2)))" "$(hms $((X + 2)))"
	cal cb 00:00:00 00:00:01
	cal ce "$(hms $((X - 2)))" "$(hms $((X + 2)))"
} >"$NODE_DIR/v2.yaml"
expect_exit "apply the calendars alone" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v2.yaml"
echo "$OUT" | sed 's/^/    | /'
# os.c re-applied with its own exclude: of X's date
{
	echo jobs:
	job os.c "at: \"$(iso $X)\", exclude: [\"$(date -u -d @$X +%F)\"]"
	job os.d "at: \"$(iso $X)\", exclude: [\"$(date -u -d @$X +%F)\"]"
} >"$NODE_DIR/v3.yaml"
expect_exit "apply os.c and os.d excluding X's date" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v3.yaml"
# the exclusions of os.d and os.e removed again, once their versions recorded X
recorded_de() { recorded os.d && recorded os.e; }
wait_until "os.d's and os.e's instant recorded excluded" 20 recorded_de
{
	echo jobs:
	job os.d "at: \"$(iso $X)\""
} >"$NODE_DIR/v4.yaml"
expect_exit "apply os.d without the exclusion" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v4.yaml"
{
	echo calendars:
	cal ce 00:00:00 00:00:01
} >"$NODE_DIR/v5.yaml"
expect_exit "apply calendar ce alone, no longer excluding X" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v5.yaml"
wait_wall "the instant passed" 60 bash -c "[ \$(date +%s) -ge $((X + 8)) ]"
calls() { sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$1'"; }
mis() { sql "select coalesce(sum(count), 0) from misfires where job_id = '$1' and reason = 'excluded'"; }
for j in os.a os.b os.c os.d os.e cr.a cr.b; do echo "    figure: $j effects=$(calls $j) excluded=$(mis $j)"; done
sql "select job_id, version, state, to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') from trigger_jobs order by 1, 2" | sed 's/^/    | /'
sql "select job_id, version, reason, calendar, calendar_version, count from misfires order by 1, 2" | sed 's/^/    | /'
expect_eq "os.a (newly excluded) not run" 0 "$(calls os.a)"
expect_eq "os.a recorded excluded once" 1 "$(mis os.a)"
expect_eq "os.a's old row dropped by the apply (no row left)" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'os.a'")"
expect_eq "os.a's drop audited (trigger.drop, its instant)" 1 "$(sql "select count(*) from audit_log where action = 'trigger.drop' and scope = 'job:os.a' and (details->>'dropped')::int = 1 and (details->'scheduled_at'->>0)::timestamptz = to_timestamp($X)")"
expect_eq "os.b (exclusion removed) fired once" 1 "$(calls os.b)"
expect_eq "os.b's old excluded record superseded" 0 "$(mis os.b)"
expect_eq "os.b's supersede audited (instant, version, old version)" 1 "$(sql "select count(*) from audit_log where action = 'misfire.supersede' and scope = 'job:os.b' and (details->>'version')::int = 2 and (details->>'excluded_by_version')::int = 1 and (details->>'instant')::timestamptz = to_timestamp($X) and details->>'calendar' = 'cb'")"
expect_eq "os.c (own exclude: added) not run" 0 "$(calls os.c)"
expect_eq "os.c recorded excluded once" 1 "$(mis os.c)"
for j in os.d os.e; do
	expect_eq "$j (exclusion added, then removed) fired once, by its last version" "1 3" "$(calls $j) $(sql "select string_agg(version::text, ',') from trigger_jobs where job_id = '$j'")"
	expect_eq "$j's excluded record superseded" 0 "$(mis $j)"
done
expect_eq "cr.a (cron, X before E) runs X under the old calendar" "1 0" "$(calls cr.a) $(mis cr.a)"
expect_eq "cr.b (cron, X before E) keeps X excluded, not run" "0 1" "$(calls cr.b) $(mis cr.b)"
expect_eq "no other supersede (os.b, os.d, os.e)" "os.b os.d os.e" "$(sql "select string_agg(substr(scope, 5), ' ' order by scope) from audit_log where action = 'misfire.supersede'")"
expect_exit "verify" 0 "$PAL" verify --from "$(iso $((N - 5)))" --to "$(iso $((X + 5)))" --sink-pg "$PALISADE_PG"
echo "$OUT" | tail -5 | sed 's/^/    | /'
finish
