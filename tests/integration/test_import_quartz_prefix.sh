#!/usr/bin/env bash
# palisade import quartz --prefix (docs/migrating.md): the scheduler's name
# before every id, PREFIX.GROUP.NAME, as `import kubernetes --prefix` puts
# the cluster's.  Two schedulers' triggers of one group and name get two
# ids, and `apply --prune-prefix` of one scheduler's re-import neither
# updates nor retires the other's jobs.  Without --prefix the ids are the
# trigger keys' as before; a dotted --prefix is refused; an id that the
# prefix makes longer than a job id may be is not translated, named.
source tests/integration/lib.sh
guarantee "an import of one Quartz scheduler with --prefix never updates or retires another scheduler's job of the same trigger key"
fresh_db it_import_quartz_prefix
FX=tests/fixtures/import/quartz
# scheduler "reports": two triggers of DEFAULT whose names reduce alike
# (collide.sql); scheduler "reports-b": "Daily Report" of DEFAULT too, and
# "Weekly"
sql "$(cat $FX/tables_postgres.sql $FX/collide.sql)" >/dev/null
sql "INSERT INTO qrtz_job_details VALUES ('reports-b', 'report', 'DEFAULT', NULL, 'com.example.jobs.ReportJob', true, false, false, false, NULL);
     INSERT INTO qrtz_triggers (sched_name, trigger_name, trigger_group, job_name, job_group, priority,
                                trigger_state, trigger_type, start_time, end_time, calendar_name, misfire_instr, job_data) VALUES
      ('reports-b', 'Daily Report', 'DEFAULT', 'report', 'DEFAULT', 5, 'WAITING', 'CRON', 1767225600000, 0, NULL, 2, NULL),
      ('reports-b', 'Weekly', 'DEFAULT', 'report', 'DEFAULT', 5, 'WAITING', 'CRON', 1767225600000, 0, NULL, 2, NULL);
     INSERT INTO qrtz_cron_triggers VALUES
      ('reports-b', 'Daily Report', 'DEFAULT', '0 30 6 * * ?', 'Europe/Berlin'),
      ('reports-b', 'Weekly', 'DEFAULT', '0 0 8 ? * MON', 'Europe/Berlin');" >/dev/null
"$PAL" migrate >/dev/null
D=$PALISADE_TEST_TMP/qp
mkdir -p "$D"
URL='http://127.0.0.1:9/quartz/{job}'
q() { "$PAL" import quartz --pg "$PALISADE_PG" --target-url "$URL" "$@"; }
ids() { awk -F'"' '/- id:/ {print $2}' "$@" | sort | xargs; }

q --sched-name reports --prefix sched-a --group sched-a >"$D/a.yaml" 2>"$D/a.report"
expect_eq "scheduler reports with --prefix sched-a: exit 0" 0 $?
q --sched-name reports-b --prefix sched-b --group sched-b >"$D/b.yaml" 2>"$D/b.report"
expect_eq "scheduler reports-b with --prefix sched-b: exit 0" 0 $?
check "ids sched-a.default.daily-report_HASH (two keys of one reduction)" \
	grep -Eqx 'sched-a\.default\.daily-report_[0-9a-f]{8} sched-a\.default\.daily-report_[0-9a-f]{8}' <<<"$(ids "$D/a.yaml")"
expect_eq "ids sched-b.GROUP.NAME" "sched-b.default.daily-report sched-b.default.weekly" "$(ids "$D/b.yaml")"
expect_match "the report names a hashed id with its prefix" \
	"^qrtz_triggers:reports/DEFAULT/Daily Report: id: sched-a\.default\.daily-report_[0-9a-f]{8}: " "$(cat "$D/a.report")"
expect_eq "without --prefix: GROUP.NAME as before" "default.daily-report default.weekly" \
	"$(q --sched-name reports-b 2>/dev/null | awk -F'"' '/- id:/ {print $2}' | sort | xargs)"
expect_exit "the job files validate together (distinct ids)" 0 "$PAL" validate "$D/a.yaml" "$D/b.yaml"
expect_match "four jobs" "^ok: 4 jobs" "$OUT"
expect_exit "apply scheduler reports" 0 "$PAL" apply --reason a "$D/a.yaml"
expect_exit "apply scheduler reports-b" 0 "$PAL" apply --reason b "$D/b.yaml"

# Weekly is removed on the Quartz side, Daily Report of reports-b changed
sql "DELETE FROM qrtz_cron_triggers WHERE sched_name = 'reports-b' AND trigger_name = 'Weekly';
     DELETE FROM qrtz_triggers WHERE sched_name = 'reports-b' AND trigger_name = 'Weekly';
     UPDATE qrtz_cron_triggers SET cron_expression = '0 45 6 * * ?' WHERE sched_name = 'reports-b'" >/dev/null
q --sched-name reports-b --prefix sched-b --group sched-b >"$D/b2.yaml" 2>/dev/null
expect_exit "re-import of reports-b, dry run --prune-prefix sched-b." 0 "$PAL" apply --dry-run --prune-prefix sched-b. --reason b "$D/b2.yaml"
check "... would retire the removed trigger's job" grep -qE "^would retire sched-b\.default\.weekly" <<<"$OUT"
check "... updates or retires no job of sched-a" bash -c "! grep -E '^(updated|would update|would retire|retired) +sched-a' <<<\"\$1\"" _ "$OUT"
expect_exit "re-import applied with --prune-prefix sched-b." 0 "$PAL" apply --prune-prefix sched-b. --reason b "$D/b2.yaml"
expect_eq "live: sched-a's two jobs and sched-b's changed one" \
	"sched-a.default.daily-report_|1 sched-a.default.daily-report_|1 sched-b.default.daily-report|2" \
	"$(sql "select string_agg(regexp_replace(job_id, '[0-9a-f]{8}$', '') || '|' || latest_version, ' ' order by job_id) from jobs where retired_at is null")"
expect_eq "sched-b.default.weekly retired" 1 "$(sql "select count(*) from jobs where job_id = 'sched-b.default.weekly' and retired_at is not null")"

expect_exit "a dotted --prefix: refused" 64 q --sched-name reports --prefix sched.a
expect_match "... one segment" "one segment, without '.'" "$OUT"
# a key whose reduction is 121 bytes: with a prefix of 7 over the 128 of a
# job id, so it takes the hashed form, its parts cut to fit
G=$(printf 'g%.0s' $(seq 60)); N=$(printf 'n%.0s' $(seq 60))
sql "INSERT INTO qrtz_job_details VALUES ('long', 'report', 'DEFAULT', NULL, 'com.example.jobs.ReportJob', true, false, false, false, NULL);
     INSERT INTO qrtz_triggers (sched_name, trigger_name, trigger_group, job_name, job_group, priority,
                                trigger_state, trigger_type, start_time, end_time, calendar_name, misfire_instr, job_data) VALUES
      ('long', '$N', '$G', 'report', 'DEFAULT', 5, 'WAITING', 'CRON', 1767225600000, 0, NULL, 2, NULL);
     INSERT INTO qrtz_cron_triggers VALUES ('long', '$N', '$G', '0 0 6 * * ?', 'UTC')" >/dev/null
ids() { awk -F'"' '/- id:/ {print $2}'; }
ID=$(q --sched-name long --prefix sched-l 2>/dev/null | ids)
expect_match "a reduction over 128 bytes with the prefix: translated, hashed, cut to fit" \
	'^sched-l\.g{55}\.n{55}_[0-9a-f]{8}$' "$ID"
OUT=$(q --sched-name long 2>/dev/null)
expect_eq "... without the prefix: translated" 0 $?
# two keys that reduce alike, group and names of 70: hashed ids of 128
# bytes without a prefix; with one, still both, cut to fit
G=$(printf 'G%.0s' $(seq 70)); N1=$(printf 'N%.0s' $(seq 70)); N2=$(printf 'n%.0s' $(seq 70))
sql "INSERT INTO qrtz_job_details VALUES ('hashed', 'exp', '$G', NULL, 'com.example.ExportJob', true, false, false, false, NULL);
     INSERT INTO qrtz_triggers (sched_name, trigger_name, trigger_group, job_name, job_group, priority,
                                trigger_state, trigger_type, start_time, end_time, calendar_name, misfire_instr, job_data) VALUES
      ('hashed', '$N1', '$G', 'exp', '$G', 5, 'WAITING', 'CRON', 1767225600000, 0, NULL, 2, NULL),
      ('hashed', '$N2', '$G', 'exp', '$G', 5, 'WAITING', 'CRON', 1767225600000, 0, NULL, 2, NULL);
     INSERT INTO qrtz_cron_triggers VALUES
      ('hashed', '$N1', '$G', '0 30 6 * * ?', 'UTC'), ('hashed', '$N2', '$G', '0 0 8 * * ?', 'UTC');" >/dev/null
NOP=$(q --sched-name hashed 2>/dev/null | ids)
expect_eq "hashed ids without --prefix: two of 128 bytes" "128 128" "$(for i in $NOP; do printf '%s\n' ${#i}; done | paste -sd' ')"
WP=$(q --sched-name hashed --prefix x 2>/dev/null | ids)
expect_eq "... with --prefix x: both translated, distinct, at most 128 bytes" "2 2 1" \
	"$(echo "$WP" | grep -c .) $(echo "$WP" | sort -u | grep -c .) $(for i in $WP; do [ ${#i} -le 128 ] && echo ok; done | sort -u | grep -c ok)"
finish
