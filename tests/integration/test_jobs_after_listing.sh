#!/usr/bin/env bash
# A dependent job (after:) is listed with its upstreams, not with the
# never-firing cron it is stored with (0 0 0 1 1 ? 1970): `jobs`, `jobs
# --versions`, JSON, the API's list and job, the console; `jobs --next` and
# `plan diff` say its instants are its upstream's instead of listing none.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a dependent job's schedule is shown as its upstreams everywhere a job is listed, and its instants as its upstream's"
fresh_db it_jobs_after_listing
"$PAL" migrate >/dev/null
F=$PALISADE_TEST_TMP/test_jobs_after_listing.j.yaml
cat >"$F" <<'YAML'
jobs:
  - {id: j.up, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: j.up2, schedule: {cron: "0 0 4 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: j.dep, after: [{job: j.up}, {job: j.up2}], target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "plan diff of a new dependent job" 0 "$PAL" plan diff "$F"
expect_eq "... says it runs at its upstream's instants" "  (after: no schedule of its own; it runs at the instants of j.up)" \
	"$(grep -A1 '^j\.dep: new job$' <<<"$OUT" | tail -n +2)"
expect_exit "plan diff --output json" 0 "$PAL" plan diff "$F" --output json
expect_eq "... names the upstream" "j.up" "$(jq -r '.[] | select(.job_id == "j.dep") | .after' <<<"$OUT")"
expect_exit "apply" 0 "$PAL" apply "$F"
no1970() { ! grep -q 1970 <<<"$1"; }
expect_exit "jobs" 0 "$PAL" jobs
expect_match "jobs shows j.dep's upstreams as its schedule" 'j\.dep .*  after: j\.up, j\.up2' "$OUT"
check "... not the placeholder cron of 1970" no1970 "$OUT"
expect_exit "jobs --versions j.dep" 0 "$PAL" jobs --versions j.dep
expect_match "... each version too" 'v1 +digest [0-9a-f]{12}  after: j\.up, j\.up2  by ' "$OUT"
check "... no 1970" no1970 "$OUT"
expect_exit "jobs --next 2 j.dep" 0 "$PAL" jobs --next 2 j.dep
expect_match "... says its instants are its upstream's" 'next: at the instants of j\.up, as it runs them' "$OUT"
expect_exit "jobs --next 2 j.up" 0 "$PAL" jobs --next 2 j.up
expect_match "... an upstream lists its own" 'next: [0-9-]+T03:00:00Z' "$OUT"
expect_exit "jobs --output json j.dep" 0 "$PAL" jobs --output json j.dep
expect_eq "... the versions carry after" '["j.up","j.up2"]' "$(jq -c '.[0].versions[-1].after' <<<"$OUT")"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[s1]}/readyz)\" = 200 ]"
TOK=$("$PAL" token create --name v --role viewer | tail -1)
A=http://${NODE_ADMIN[s1]}
expect_eq "GET /api/v1/jobs: j.dep's latest carries after, j.up's none" '["j.up","j.up2"] null' \
	"$(curl -s -H "Authorization: Bearer $TOK" "$A/api/v1/jobs" | jq -c '[.items[] | select(.job_id == "j.dep" or .job_id == "j.up") | .latest.after] | map(tostring) | join(" ")' -r)"
expect_exit "jobs through the API" 0 env -u PALISADE_PG PALISADE_SERVER="$A" PALISADE_TOKEN="$TOK" "$PAL" jobs
expect_match "... shows j.dep's upstreams" 'j\.dep .*  after: j\.up, j\.up2' "$OUT"
expect_exit "plan diff through the API" 0 env -u PALISADE_PG PALISADE_SERVER="$A" PALISADE_TOKEN="$TOK" "$PAL" plan diff "$F"
expect_match "... j.dep unchanged (no note)" 'j\.dep: unchanged' "$OUT"
printf 'jobs:\n  - {id: j.dep2, after: [{job: j.up2}], target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/d2.yaml"
expect_exit "plan diff of a new dependent through the API" 0 env -u PALISADE_PG PALISADE_SERVER="$A" PALISADE_TOKEN="$TOK" "$PAL" plan diff "$PALISADE_TEST_TMP/d2.yaml"
expect_eq "... says it runs at its upstream's instants" "  (after: no schedule of its own; it runs at the instants of j.up2)" \
	"$(grep -A1 '^j\.dep2: new job$' <<<"$OUT" | tail -n +2)"
page=$(curl -s "$A/console/job?id=j.dep")
expect_match "the console's job page shows the upstreams" 'after: j\.up, j\.up2' "$page"
check "... and no 1970" no1970 "$page"
page=$(curl -s "$A/console/")
check "the console's job list: no 1970" no1970 "$page"
expect_match "... the upstreams" 'after: j\.up, j\.up2' "$(curl -s "$A/api/cluster?section=jobs")"
stop_node s1
finish
