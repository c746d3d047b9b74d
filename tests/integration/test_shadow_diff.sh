#!/usr/bin/env bash
# `palisade shadow diff`: the old system's record of what it fired against
# palisade's plan of the same jobs.  A record equal to the plan is exit 0; one
# instant removed and one added are found, exactly those two, with their
# reasons; an instant palisade's exclusions take out is named `excluded`; a
# job palisade does not know is named; the scope and the range filter the
# record; a malformed line is exit 65 naming it.  Through the API (--server,
# POST /api/v1/shadow/diff) the same answers, and a tenant-scoped token's
# diff knows its tenant's jobs only.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow diff - every instant only one side fires is listed with the reason palisade can tell, and an equal record is exit 0"
T_START=$(date +%s)

fresh_db it_shadow
"$PAL" migrate >/dev/null
write_conf "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: daily
    group: reports
    tenant: acme
    schedule: {cron: "0 0 8 * * ?", timezone: UTC, exclude: ["2026-03-02"]}
    target: {url: "http://127.0.0.1:9/daily"}
  - id: hourly
    group: etl
    schedule: {cron: "0 0 * * * ?", timezone: UTC}
    target: {url: "http://127.0.0.1:9/hourly"}
  - id: busy
    group: busy
    schedule: {cron: "* * * * * ?"}
    target: {url: "http://127.0.0.1:9/busy"}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
FROM=2026-03-01T00:00:00Z TO=2026-03-08T00:00:00Z
rec=$NODE_DIR/record.csv
{
	echo "# daily, as the old system fired it (it does not know the 2 March exclusion)"
	for d in 01 02 03 04 05 06 07; do echo "daily,2026-03-${d}T08:00:00Z"; done
	for d in 01 02 03 04 05 06 07; do for h in $(seq -w 0 23); do echo "hourly,2026-03-${d}T$h:00:00Z"; done; done
	echo "daily,2026-02-28T08:00:00Z"   # before the range
} >"$rec"
sd() { "$PAL" shadow diff --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" "$@"; }
out=$(sd --against "$rec" --group reports --output json); ec=$?
expect_eq "the record differs from the plan by the excluded instant only: exit 2" 2 $ec
expect_eq "... old 7 instants in the range, 6 in palisade's plan" "7 6 6" \
	"$(jq -r '.counts | "\(.old) \(.palisade) \(.both)"' <<<"$out")"
expect_eq "... the one difference: 2 March, excluded" "old daily 2026-03-02T08:00:00Z excluded" \
	"$(jq -r '.differences[] | "\(.only) \(.job) \(.at) \(.reason)"' <<<"$out")"
expect_eq "... the line before the range and hourly's skipped (--group reports)" 169 "$(jq -r .skipped_lines <<<"$out")"

# One instant removed and one added: exactly those two.
grep -v -e '^daily,2026-03-02' -e '^daily,2026-03-05' "$rec" >"$rec.2"
echo "daily,2026-03-06T09:13:00Z" >>"$rec.2"
out=$(sd --against "$rec.2" --job daily --output json); ec=$?
expect_eq "one removed, one added: exit 2" 2 $ec
expect_eq "... exactly those two, with their reasons" \
	"palisade daily 2026-03-05T08:00:00Z not_fired|old daily 2026-03-06T09:13:00Z schedule" \
	"$(jq -r '[.differences[] | "\(.only) \(.job) \(.at) \(.reason)"] | join("|")' <<<"$out")"
txt=$(sd --against "$rec.2" --job daily); ec=$?
expect_eq "the table: exit 2 too" 2 $ec
check "... names the removed instant" grep -qE "^palisade +daily +2026-03-05T08:00:00Z +not_fired" <<<"$txt"
check "... and ends with the counts" grep -qE "^different: 1 only in the old record, 1 only in palisade's plan" <<<"$txt"

# Equal: the record without the excluded instant.
grep -v '^daily,2026-03-02' "$rec" >"$rec.3"
expect_exit "a record equal to the plan: exit 0" 0 sd --against "$rec.3" --group reports
expect_exit "... and one job's part of it: exit 0" 0 sd --against "$rec.3" --job hourly
# Unknown jobs and scopes.
{ cat "$rec.3"; echo "ghost,2026-03-03T00:00:00Z"; } >"$rec.4"
out=$(sd --against "$rec.4" --output json --limit 3); ec=$?
expect_eq "all jobs: busy never fired by the old system, ghost unknown: exit 2" 2 $ec
expect_eq "... ghost listed first, named unknown_job" "old ghost unknown_job" "$(jq -r '.differences[0] | "\(.only) \(.job) \(.reason)"' <<<"$out")"
expect_eq "... busy's instants counted, 2 listed (--limit 3)" "604800 2 true" "$(jq -r '"\(.counts.only_palisade) \([.differences[] | select(.job == "busy")] | length) \(.truncated)"' <<<"$out")"
out=$(sd --against "$rec.4" --group etl --output json); ec=$?
expect_eq "--group etl: hourly only, equal (exit 0)" "0 1 7" "$ec $(jq -r '"\(.jobs) \(.skipped_lines - 1)"' <<<"$out")"
# Errors.
printf 'daily,2026-03-01T08:00:00Z\ndaily 2026-03-02T08:00:00Z\n' >"$rec.bad"
err=$(sd --against "$rec.bad" 2>&1 >/dev/null); ec=$?
expect_eq "a malformed line: exit 65" 65 $ec
check "... naming the file and line" grep -q "record.csv.bad:2: expected \"job_id,RFC3339\"" <<<"$err"
expect_exit "a missing file: 65" 65 sd --against "$NODE_DIR/none.csv"
expect_exit "an unknown --job: 3" 3 sd --against "$rec" --job nosuch
expect_exit "no --against: 64" 64 "$PAL" shadow diff --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
expect_exit "a range of more instants than a diff takes: 65, as the API's 422" 65 \
	"$PAL" shadow diff --config "$CLUSTER_CONF" --from 2026-03-01T00:00:00Z --to 2026-04-01T00:00:00Z --against "$rec" --job busy
expect_match "naming the bound and how to narrow" "more than 1000000 instants of the jobs compared.*compare a shorter range.*--max-instants" "$OUT"
expect_exit "--max-instants 0: no bound (the operator's own process)" 2 \
	"$PAL" shadow diff --config "$CLUSTER_CONF" --from 2026-03-01T00:00:00Z --to 2026-03-20T00:00:00Z --against "$rec" --job busy --max-instants 0

# Through the API: the same report as the database's, with no database in
# the environment; the exit codes are the CLI's.  The node's controller
# activates the jobs now, so their plan starts now: the records a year on.
start_node d1
FROM=2027-03-01T00:00:00Z TO=2027-03-08T00:00:00Z
for f in "$rec" "$rec".[234] "$rec.bad"; do sed -i 's/^\([a-z]*\),2026-/\1,2027-/' "$f"; done
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[d1]}/readyz)\" = 200 ]"
"$PAL" token create --name diff-viewer --role viewer | tail -1 >"$NODE_DIR/viewer.token"
"$PAL" token create --name diff-acme --role viewer --tenant acme | tail -1 >"$NODE_DIR/acme.token"
api_sd() { # TOKEN-FILE ARGS...
	local tf=$1; shift
	env -u PALISADE_PG -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE PALISADE_SERVER="http://${NODE_ADMIN[d1]}" \
		"$PAL" shadow diff --token-file "$tf" --from "$FROM" --to "$TO" "$@"
}
for args in "--against $rec.2 --job daily" "--against $rec.4 --limit 3" "--against $rec.3 --group reports"; do
	direct=$(sd $args --output json); dec=$?
	via=$(api_sd "$NODE_DIR/viewer.token" $args --output json); vec=$?
	expect_eq "through the API, $args: the database's report and exit code ($dec)" "$dec $direct" "$vec $via"
done
expect_eq "a record on stdin, as a table: the same table" "$(sd --against - --job daily <"$rec.2")" \
	"$(api_sd "$NODE_DIR/viewer.token" --against - --job daily <"$rec.2")"
err=$(api_sd "$NODE_DIR/viewer.token" --against "$rec.bad" 2>&1 >/dev/null); ec=$?
expect_eq "a malformed line through the API: exit 65 (422)" 65 $ec
check "... naming the line" grep -q 'line 2: expected "job_id,RFC3339"' <<<"$err"
expect_exit "an unknown --job through the API: 3 (404)" 3 api_sd "$NODE_DIR/viewer.token" --against "$rec" --job nosuch
out=$(api_sd "$NODE_DIR/acme.token" --against "$rec.4" --output json); ec=$?
expect_eq "a token of tenant acme: its job daily only (equal); hourly's 168 lines and ghost's unknown_job" \
	"2 1 169 169" "$ec $(jq -r '"\(.jobs) \([.differences[] | select(.reason == "unknown_job")] | length) \(.counts.only_old)"' <<<"$out")"
expect_exit "... hourly, another tenant's job, not found: 3" 3 api_sd "$NODE_DIR/acme.token" --against "$rec" --job hourly
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$NODE_DIR/viewer.token")" \
	-H 'Content-Type: application/json' --data '{}' "http://${NODE_ADMIN[d1]}/api/v1/shadow/diff?from=$FROM&to=$TO")
expect_eq "a JSON body: 415" 415 "$code"
stop_node d1
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
