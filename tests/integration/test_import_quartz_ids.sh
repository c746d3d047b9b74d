#!/usr/bin/env bash
# palisade import quartz: a trigger's job id never depends on the order of
# the rows: keys that reduce alike each carry a hash of their own, so a
# re-import after a Quartz-side change that adds a third gives the existing
# triggers the ids they had (a re-apply makes new versions of the same
# jobs, never retires one and creates another under a new key), and a key
# whose reduction no other shares keeps that reduction, the id palisade
# 0.3.0 gave it.
source tests/integration/lib.sh
guarantee "an imported Quartz trigger keeps its job id when another trigger whose name reduces alike is added before it; two triggers never share an id; a key no other reduces alike keeps its reduction; the report names each id that carries a hash, with its trigger key"
fresh_db import_quartz_ids
FX=tests/fixtures/import/quartz
sql "$(cat $FX/tables_postgres.sql $FX/collide.sql)" >/dev/null
D=$PALISADE_TEST_TMP/quartz_ids
mkdir -p "$D"
URL='http://runner.example:8080/quartz/{job}'

# the id of the job of each trigger, by its hour (6: "Daily Report", 7:
# "daily-report", 8: "DAILY REPORT")
ids() { python3 -c 'import sys, yaml
for j in yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader)["jobs"]:
    print(j["schedule"]["cron"].split()[2], j["id"])' "$1" | sort; }
id_of() { awk -v h="$2" '$1 == h { print $2 }' <<<"$1"; }

"$PAL" import quartz --pg "$PALISADE_PG" --target-url "$URL" >"$D/one.yaml" 2>"$D/one.report"
expect_eq "two triggers, nothing left out: exit 0" 0 $?
expect_exit "the job file validates" 0 "$PAL" validate "$D/one.yaml"
expect_match "two jobs" "^ok: 2 jobs" "$OUT"
ONE=$(ids "$D/one.yaml")
expect_eq "daily-report and Daily Report reduce alike: each its reduction and a hash of its key" 2 \
	"$(printf '%s\n%s\n' "$(id_of "$ONE" 6)" "$(id_of "$ONE" 7)" | grep -Ecx 'default\.daily-report_[0-9a-f]{8}')"
expect_eq "two ids" 2 "$(awk '{ print $2 }' <<<"$ONE" | sort -u | wc -l)"
expect_match "the report names the id with its trigger key" \
	"^qrtz_triggers:reports/DEFAULT/Daily Report: id: $(id_of "$ONE" 6): " "$(cat "$D/one.report")"
expect_eq "both ids named" 2 "$(grep -c '^qrtz_triggers:' "$D/one.report")"

# the Quartz side adds a trigger that reduces alike and sorts first
sql "$(cat $FX/collide-added.sql)" >/dev/null
expect_eq "the added trigger is the first row the importer reads" "DAILY REPORT" \
	"$(sql "SELECT trigger_name FROM qrtz_triggers WHERE sched_name = 'reports' ORDER BY trigger_group, trigger_name LIMIT 1")"
"$PAL" import quartz --pg "$PALISADE_PG" --target-url "$URL" >"$D/two.yaml" 2>"$D/two.report"
expect_eq "re-import: exit 0" 0 $?
expect_exit "the job file validates (three distinct ids)" 0 "$PAL" validate "$D/two.yaml"
expect_match "three jobs" "^ok: 3 jobs" "$OUT"
TWO=$(ids "$D/two.yaml")
expect_eq "Daily Report keeps its id" "$(id_of "$ONE" 6)" "$(id_of "$TWO" 6)"
expect_eq "daily-report keeps its id" "$(id_of "$ONE" 7)" "$(id_of "$TWO" 7)"
check "DAILY REPORT: a hash of its own key" \
	grep -Eqx 'default\.daily-report_[0-9a-f]{8}' <<<"$(id_of "$TWO" 8)"
expect_eq "three ids" 3 "$(awk '{ print $2 }' <<<"$TWO" | sort -u | wc -l)"
expect_match "the report names the added id with its key" \
	"^qrtz_triggers:reports/DEFAULT/DAILY REPORT: id: $(id_of "$TWO" 8): " "$(cat "$D/two.report")"
expect_eq "three ids named" 3 "$(grep -c '^qrtz_triggers:' "$D/two.report")"
finish
