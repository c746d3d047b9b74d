#!/usr/bin/env bash
# A zone name that is the host's own zone rather than one IANA zone
# (`localtime`, a link to the host's /etc/localtime; `posixrules`, which
# distributions point at different zones) is refused wherever a zone is
# defined: job files (validate, and the API's plan diff / apply on every
# node), calendars, `cron next --tz`, and the importers name the entry
# instead of writing a job that fails validation.  Two nodes here differ only
# in what their zoneinfo's `localtime` points at (TZDIR, standing for two
# hosts with different /etc/localtime): had it been accepted, their plans of
# one job would differ (09:00Z against 03:30Z).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job's schedule means the same instants on every node: a host-dependent zone name is refused"
fresh_db it_tz_host_zone
"$PAL" migrate >/dev/null
mkzi() { # DIR ZONE: a zoneinfo whose localtime is ZONE
	mkdir -p "$1"
	for f in /usr/share/zoneinfo/*; do [ "$(basename "$f")" = localtime ] || ln -s "$f" "$1/"; done
	ln -s "/usr/share/zoneinfo/$2" "$1/localtime"
}
mkzi "$PALISADE_TEST_TMP/zi-utc" Etc/UTC
mkzi "$PALISADE_TEST_TMP/zi-kolkata" Asia/Kolkata
F=$PALISADE_TEST_TMP/lt.yaml
printf 'jobs:\n  - {id: lt.daily, schedule: {cron: "0 9 * * *", timezone: localtime}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
OUT=$("$PAL" validate "$F" 2>&1)
expect_eq "validate refuses timezone: localtime (the host's zone, not an IANA name)" 65 "$?"
expect_match "... at its file:line:col, naming the fix" \
	"lt.yaml:2:[0-9]+: error: timezone: time zone \"localtime\" is the host's own zone.*name an IANA zone such as" "$OUT"
P=$PALISADE_TEST_TMP/pr.yaml
printf 'jobs:\n  - {id: pr.daily, schedule: {cron: "0 9 * * *", timezone: posixrules}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$P"
"$PAL" validate "$P" >/dev/null 2>&1
expect_eq "validate refuses timezone: posixrules" 65 "$?"
C=$PALISADE_TEST_TMP/cal.yaml
printf 'calendars:\n  - {name: office, timezone: localtime, include_only: {weekdays: [mon, tue]}}\n' >"$C"
OUT=$("$PAL" validate "$C" 2>&1)
expect_eq "validate refuses a calendar in timezone: localtime" 65 "$?"
expect_match "... naming the host's zone" "cal.yaml:2:[0-9]+: error: calendar timezone: time zone \"localtime\" is the host's own zone" "$OUT"
"$PAL" validate /dev/stdin >/dev/null 2>&1 <<<'jobs: [{id: ok.daily, schedule: {cron: "0 9 * * *", timezone: Asia/Kolkata}, target: {url: "http://127.0.0.1:9/x"}}]'
expect_eq "an IANA zone still validates" 0 "$?"
"$PAL" cron next --tz localtime '0 9 * * *' >/dev/null 2>&1
expect_eq "cron next --tz localtime is refused (exit 65)" 65 "$?"

# importers: the entry is named, no job in the output
E=$PALISADE_TEST_TMP/import.err
OUT=$(printf 'CRON_TZ=localtime\n0 9 * * * echo hi\n' | "$PAL" import crontab --prefix tz --target-url http://127.0.0.1:9/run - 2>"$E")
expect_eq "import crontab: CRON_TZ=localtime is not translated (exit 2)" 2 "$?"
expect_eq "... no job written" "jobs: []" "$OUT"
expect_match "... the line is named" '^-:2: not translated: time zone "localtime" is the host.s own zone' "$(cat "$E")"
K=$PALISADE_TEST_TMP/k8s.yaml
printf 'apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: hello, namespace: ns}\nspec:\n  schedule: "0 9 * * *"\n  timeZone: localtime\n  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}], restartPolicy: OnFailure}}}}\n' >"$K"
OUT=$("$PAL" import kubernetes --target-url http://127.0.0.1:9/run "$K" 2>"$E")
expect_eq "import kubernetes: timeZone: localtime is not translated (exit 2)" 2 "$?"
expect_eq "... no job written" "jobs: []" "$OUT"
expect_match "... the entry is named" 'k8s.yaml:5: .*not translated: time zone "localtime" is the host.s own zone' "$(cat "$E")"
echo | "$PAL" import crontab --prefix tz --timezone posixrules --target-url http://127.0.0.1:9/run - >/dev/null 2>&1
expect_eq "import --timezone posixrules is refused (exit 64)" 64 "$?"

SHARDS=2 write_conf "$CLUSTER_CONF"
TZDIR=$PALISADE_TEST_TMP/zi-utc start_node r1
TZDIR=$PALISADE_TEST_TMP/zi-kolkata start_node r2
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1
wait_until "node r2 ready" 20 ready r2
TOK=$("$PAL" token create --name lt-admin --role admin | tail -1)
pd() { curl -s -w ' %{http_code}' -H "Authorization: Bearer $TOK" -H 'Content-Type: application/yaml' \
	--data-binary @"$F" "http://${NODE_ADMIN[$1]}/api/v1/$2"; }
A=$(pd r1 'plan/diff?count=3&from=2027-01-01T00:00:00Z') B=$(pd r2 'plan/diff?count=3&from=2027-01-01T00:00:00Z')
echo "    r1: $A"
echo "    r2: $B"
expect_eq "node r1 refuses the plan diff (422)" 422 "${A##* }"
expect_eq "the two nodes answer the same job the same way" "$A" "$B"
expect_eq "the apply is refused (422)" 422 "$(pd r2 apply | tail -c 3)"
expect_eq "nothing stored" 0 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'lt.daily'")"
stop_node r1
stop_node r2
finish
