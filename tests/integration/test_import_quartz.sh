#!/usr/bin/env bash
# palisade import quartz against a Quartz 2.x JDBC job store in PostgreSQL:
# the tables of Quartz's tables_postgres.sql and rows as a Quartz
# application writes them (tests/fixtures/import/quartz/).
source tests/integration/lib.sh
guarantee "a Quartz store's cron and simple triggers become jobs that validate, keep their expression, zone, start, end, priority, pause and misfire rule, fire at Quartz's instants; every other element is named with its row, other schedulers are never imported"
T0=$(date +%s)
fresh_db import_quartz
FX=tests/fixtures/import/quartz
sql "$(cat $FX/tables_postgres.sql $FX/rows.sql)" >/dev/null
D=$PALISADE_TEST_TMP/quartz
mkdir -p "$D"
URL='http://runner.example:8080/quartz/{job}?d={digest}'

expect_exit "a store of two schedulers needs --sched-name" 64 \
	"$PAL" import quartz --pg "$PALISADE_PG" --target-url "$URL"
expect_match "naming both" "several schedulers \(billing, other\)" "$OUT"

"$PAL" import quartz --pg "$PALISADE_PG" --sched-name billing --target-url "$URL" \
	>"$D/jobs.yaml" 2>"$D/report"
expect_eq "something named: exit 2" 2 $?
R=$(cat "$D/report")
expect_exit "the job file validates" 0 "$PAL" validate "$D/jobs.yaml"
expect_match "four cron and three simple triggers imported" "^ok: 7 jobs" "$OUT"
check "the other scheduler's trigger is not" bash -c "! grep -q foreign '$D/jobs.yaml'"
check "the repeating simple trigger translates exactly (smart policy: next with remaining count)" \
	bash -c "! grep -q 'billing/ops/poll:' <<<\"\$1\"" _ "$R"
expect_match "a START_TIME with milliseconds, approximated" \
	"billing/ops/batch: approximated: START_TIME 1798761600500 ms" "$R"
expect_match "the smart policy of a finite simple trigger as reschedule now" \
	"billing/ops/batch: approximated: misfire instruction 2 \(reschedule now with the existing repeat count\)" "$R"
expect_match "and of a one-shot as fire now" \
	"billing/ops/reminder: approximated: misfire instruction 1 \(fire now\)" "$R"
expect_match "the calendar" "billing/ops/mail: not translated: calendar holidays" "$R"
expect_match "the Java-serialized JobDataMap" "billing/ops/mail: not translated: the job's JobDataMap" "$R"
expect_match "ignore-misfire as fire_all, approximated" "billing/ops/mail: approximated: misfire instruction -1" "$R"
expect_match "the smart policy of a cron trigger as fire once now" \
	"billing/reports/summary-daily: approximated: misfire instruction 0 \(smart policy, for a cron trigger fire once now\)" "$R"
expect_match "@DisallowConcurrentExecution" "billing/ops/sweep: approximated: job ops.sweeper is @DisallowConcurrentExecution" "$R"
expect_match "a complete trigger is skipped, named" "billing/ops/archive-done: skipped: state COMPLETE" "$R"
expect_match "where the record of past fires comes from, for shadow diff" \
	"^palisade import quartz: for .palisade shadow diff --against FILE.*QRTZ_FIRED_TRIGGERS keeps only the triggers firing now" "$R"
expect_eq "nothing else in the report" 9 "$(grep -c ^qrtz_triggers: "$D/report")"

job() { python3 -c 'import sys, yaml
for j in yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader)["jobs"]:
    if j["id"] == sys.argv[2]:
        print(" ".join("%s=%s" % (k, j[k] if not isinstance(j[k], dict) else
              ",".join("%s:%s" % kv for kv in sorted(j[k].items()))) for k in sorted(j)
              if k not in ("description", "target", "mode")))' "$D/jobs.yaml" "$1"; }
expect_eq "every job in shadow (the default --mode)" "$(grep -c -- '- id:' "$D/jobs.yaml")" "$(grep -cx '    mode: shadow' "$D/jobs.yaml")"
expect_eq "summary-daily: expression and zone kept, start, priority, default misfire" \
	"id=reports.summary-daily priority=5 schedule=cron:0 30 2 ? * MON-FRI,start:2026-01-01T00:00:00Z,timezone:Europe/Berlin" \
	"$(job reports.summary-daily)"
expect_eq "sweep: paused trigger suspended, do-nothing as skip, non-concurrent as queue" \
	"id=ops.sweep misfire=skip overlap=queue priority=7 schedule=cron:0 0/15 * * * ?,start:2026-01-01T00:00:00Z,timezone:UTC suspend=true" \
	"$(job ops.sweep)"
expect_eq "month-end: paused group suspended, end time inclusive (end + 1 s)" \
	"id=finance.month-end misfire=skip priority=5 schedule=cron:0 0 18 LW * ?,end:2029-01-01T00:00:01Z,start:2026-01-01T00:00:00Z,timezone:Europe/London suspend=true" \
	"$(job finance.month-end)"
expect_eq "poll: every 30 s from its start time, repeating forever, smart policy as skip" \
	"id=ops.poll misfire=skip priority=5 schedule=every:30s,start:2026-01-01T00:00:00Z,timezone:UTC" \
	"$(job ops.poll)"
expect_eq "batch: every hour, its repeat count as an end just after the fourth firing" \
	"id=ops.batch priority=5 schedule=end:2027-01-01T03:00:02Z,every:3600s,start:2027-01-01T00:00:01Z,timezone:UTC" \
	"$(job ops.batch)"
expect_eq "reminder: a one-shot" \
	"id=ops.reminder priority=5 schedule=at:2027-06-01T09:00:00Z,timezone:UTC" "$(job ops.reminder)"
expect_match "the URL names the job" "url: \"http://runner.example:8080/quartz/ops.sweep\?d=[0-9a-f]{16}\"" "$(cat "$D/jobs.yaml")"

# Quartz's instants for the kept expressions: weekdays 02:30 Berlin across
# the spring-forward night (02:30 did not exist on Sunday 29 March, a
# weekend anyway), the first Monday at 08:00 New York, the last weekday.
expect_exit "summary-daily's instants" 0 "$PAL" cron next "0 30 2 ? * MON-FRI" --tz Europe/Berlin --from 2026-03-26T12:00:00Z --count 3
expect_eq "Fri 01:30Z (CET), Mon and Tue 00:30Z (CEST)" \
	"2026-03-27T01:30:00Z 2026-03-30T00:30:00Z 2026-03-31T00:30:00Z" "$(echo $OUT)"
expect_exit "mail's 2#1" 0 "$PAL" cron next "0 0 8 ? * 2#1" --tz America/New_York --from 2026-03-01T00:00:00Z --count 2
expect_eq "first Mondays: 2 March (EST), 6 April (EDT)" "2026-03-02T13:00:00Z 2026-04-06T12:00:00Z" "$(echo $OUT)"
expect_exit "month-end's LW" 0 "$PAL" cron next "0 0 18 LW * ?" --tz Europe/London --from 2026-05-01T00:00:00Z --count 2
expect_eq "Fri 29 May, Tue 30 June (BST)" "2026-05-29T17:00:00Z 2026-06-30T17:00:00Z" "$(echo $OUT)"

expect_exit "an unreachable store exits 65" 65 "$PAL" import quartz --pg "host=127.0.0.1 port=1 connect_timeout=2" --target-url "$URL"
expect_match "saying why" "cannot connect to the Quartz store" "$OUT"
echo "  took $(($(date +%s) - T0)) s"
finish
