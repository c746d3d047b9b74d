#!/usr/bin/env bash
# shadow list after a cut-over of a group whose jobs are in shadow by their
# files' `mode: shadow` (the migration of docs/migrating.md): the group is
# listed with its step, and each job with the percent the step gives it, on
# the database and through the API; a roll-back of one job brings it to 0.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow list names a group's or tenant's cut-over step and the live percent it gives each job in shadow by its file"
fresh_db it_shadow_list_steps
"$PAL" migrate >/dev/null
F=$PALISADE_TEST_TMP/test_shadow_list_steps.j.yaml
cat >"$F" <<'YAML'
jobs:
  - {id: hb.a, group: hb, mode: shadow, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: hb.b, group: hb, mode: shadow, schedule: {cron: "0 0 4 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: tc.a, tenant: tc, mode: shadow, schedule: {cron: "0 0 5 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply three jobs in shadow by their file" 0 "$PAL" apply "$F"
expect_exit "cutover --group hb" 0 "$PAL" cutover --group hb --at "$(date -u -d '+1 hour' +%FT%TZ)" --reason "move hb"
expect_exit "cutover --tenant tc at 30 %" 0 "$PAL" cutover --tenant tc --percent 30 --at "$(date -u -d '+1 hour' +%FT%TZ)" --reason "move tc"
row='.[] | select(.scope == $s) | [.source, .percent, .percent_from, (.steps | length)] | map(tostring) | join(" ")'
expect_exit "shadow list" 0 "$PAL" shadow list --output json
L=$OUT
expect_eq "group:hb is listed with its step (source steps, 100 %)" "steps 100 group:hb 1" "$(jq -r --arg s group:hb "$row" <<<"$L")"
expect_eq "tenant:tc with its 30 % step" "steps 30 tenant:tc 1" "$(jq -r --arg s tenant:tc "$row" <<<"$L")"
expect_eq "job:hb.a at the group's 100 %" "spec 100 group:hb 0" "$(jq -r --arg s job:hb.a "$row" <<<"$L")"
expect_eq "job:hb.b at the group's 100 %" "spec 100 group:hb 0" "$(jq -r --arg s job:hb.b "$row" <<<"$L")"
expect_eq "job:tc.a at the tenant's 30 %" "spec 30 tenant:tc 0" "$(jq -r --arg s job:tc.a "$row" <<<"$L")"
expect_exit "shadow list as a table" 0 "$PAL" shadow list
expect_match "... the job's line names the step's scope" 'job:hb\.a +spec +100 .*\(live % by group:hb\)' "$OUT"
expect_exit "rollback --job hb.a" 0 "$PAL" rollback --job hb.a --reason "back"
expect_exit "shadow list" 0 "$PAL" shadow list --output json
expect_eq "job:hb.a at its roll-back's 0 % (the group's earlier step left out)" "spec 0 job:hb.a 1" "$(jq -r --arg s job:hb.a "$row" <<<"$OUT")"
expect_eq "job:hb.b still at the group's 100 %" "spec 100 group:hb 0" "$(jq -r --arg s job:hb.b "$row" <<<"$OUT")"
L=$OUT
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[s1]}/readyz)\" = 200 ]"
TOK=$("$PAL" token create --name v --role viewer | tail -1)
expect_exit "shadow list through the API" 0 env -u PALISADE_PG PALISADE_SERVER="http://${NODE_ADMIN[s1]}" PALISADE_TOKEN="$TOK" "$PAL" shadow list --output json
expect_eq "... the rows of the database path" "$(jq -c . <<<"$L")" "$(jq -c . <<<"$OUT")"
stop_node s1
finish
