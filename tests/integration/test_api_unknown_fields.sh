#!/usr/bin/env bash
# The API refuses a body field or a query argument its route does not read
# (docs/api.md, "Unknown fields and arguments"): a misspelt name would
# otherwise be dropped and the request do something else than asked (a
# retry with "requestid" a second run, "dry_run" in a body a real backfill
# or cut-over step, "precent": 10 a 100 % step, ?dry-run=true an apply,
# DELETE ?dry_run=true a retirement).  Refused before anything is done: 422
# for a body field, 400 for a query argument, the problem naming it and the
# accepted names.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the HTTP API refuses unknown body fields (422) and query arguments (400) before acting, naming them and the accepted ones; known ones still work"
fresh_db it_api_unknown_fields
"$PAL" migrate >/dev/null
F=$PALISADE_TEST_TMP/test_api_unknown_fields.j.yaml
cat >"$F" <<'YAML'
jobs:
  - {id: j.live, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: j.keep, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: j.imp2, group: hostc, mode: shadow, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: j.imp, group: hostb, mode: shadow, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply" 0 "$PAL" apply "$F"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node r1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1
OP=$("$PAL" token create --name op --role operator | tail -1)
AD=$("$PAL" token create --name ad --role admin | tail -1)
O=$PALISADE_TEST_TMP/test_api_unknown_fields.answer
URL=http://${NODE_ADMIN[r1]}/api/v1
post() { curl -s -o "$O" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' --data "$3" "$URL$2"; }
audit_rows() { sql "select count(*) from audit_log where actor in ('op', 'ad')"; }
A0=$(audit_rows)

# a trigger with a misspelt request id, sent twice (a client's retry)
b='{"reason":"re-run","scheduled_at":"2030-01-01T00:00:00Z","requestid":"INC-1"}'
expect_eq "trigger with unknown fields \"requestid\", \"scheduled_at\" is refused (422)" 422 "$(post "$OP" /jobs/j.live/trigger "$b")"
expect_eq "... the problem names them and the accepted fields" \
	'urn:palisade:problem:invalid|unknown fields "requestid", "scheduled_at" (expected reason, at, request_id, new_effect); nothing was done|requestid scheduled_at|reason at request_id new_effect' \
	"$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["type"]+"|"+p["detail"]+"|"+" ".join(p["unknown"])+"|"+" ".join(p["accepted"]))' "$O")"
post "$OP" /jobs/j.live/trigger "$b" >/dev/null
expect_eq "... and its retry made no manual run" 0 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"

# a backfill with "dry_run": true in the body
sleep 3
b="{\"reason\":\"look first\",\"from\":\"$(date -u -d '-6 sec' +%FT%TZ)\",\"to\":\"$(date -u -d '-2 sec' +%FT%TZ)\",\"dry_run\":true}"
expect_eq "backfill with an unknown field \"dry_run\" is refused (422)" 422 "$(post "$OP" /jobs/j.live/backfill "$b")"
expect_eq "... and wrote no backfill trigger" 0 "$(sql "select count(*) from triggers where job_id='j.live' and source='backfill'")"

# a cut-over dry run with "precent": 10
b="{\"group\":\"hostb\",\"reason\":\"step 1\",\"at\":\"$(date -u -d '+1 hour' +%FT%TZ)\",\"precent\":10}"
expect_eq "cutover with an unknown field \"precent\" is refused (422), not taken as 100 %" 422 "$(post "$AD" '/cutover?dry_run=true' "$b")"

# a cut-over with "dry_run": true in the body (the argument is a query's)
b="{\"group\":\"hostc\",\"reason\":\"look first\",\"at\":\"$(date -u -d '+5 sec' +%FT%TZ)\",\"dry_run\":true}"
expect_eq "cutover with \"dry_run\" in the body is refused (422), not taken as a real step" 422 "$(post "$AD" /cutover "$b")"
expect_eq "... and took no step" 0 "$(sql "select count(*) from cutover_steps where scope = 'group:hostc'")"

# an apply with a misspelt query argument ?dry-run=true
printf 'jobs:\n  - {id: j.new, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/n.yaml"
code=$(curl -s -o "$O" -w '%{http_code}' -X POST -H "Authorization: Bearer $AD" -H 'Content-Type: application/yaml' --data-binary @"$PALISADE_TEST_TMP/n.yaml" "$URL/apply?dry-run=true&reason=look")
expect_eq "apply with an unknown query argument dry-run is refused (400)" 400 "$code"
expect_match "... the problem names it and the accepted arguments" \
	'bad-parameter.*unknown query argument \\"dry-run\\" \(expected dry_run, reason, file, prune, prune_prefix\)' "$(tr -d '\n' <"$O")"
expect_eq "... and stored nothing" 0 "$(sql "select count(*) from jobs where job_id = 'j.new'")"

# DELETE with ?dry_run=true (the CLI's --dry-run only reads: there is none)
code=$(curl -s -o "$O" -w '%{http_code}' -X DELETE -H "Authorization: Bearer $AD" -H 'Content-Type: application/json' --data '{"reason":"look"}' "$URL/jobs/j.keep?dry_run=true")
expect_eq "DELETE /jobs/j.keep?dry_run=true is refused (400)" 400 "$code"
expect_eq "... and j.keep is not retired" "t" "$(sql "select retired_at is null from jobs where job_id = 'j.keep'")"

# a read with a misspelt argument: refused, not answered for every tenant
code=$(curl -s -o "$O" -w '%{http_code}' -H "Authorization: Bearer $AD" "$URL/jobs?tennant=t1")
expect_eq "GET /jobs?tennant=t1 is refused (400)" 400 "$code"
code=$(curl -s -o "$O" -w '%{http_code}' -H "Authorization: Bearer $AD" "$URL/status?verbose=1")
expect_eq "GET /status?verbose=1 (a route that takes no argument) is refused (400)" 400 "$code"
expect_match "... saying it takes none" 'GET /api/v1/status takes no query arguments' "$(cat "$O")"
expect_eq "nothing refused wrote an audit row" "$A0" "$(audit_rows)"

# known names still work
b='{"reason":"re-run","request_id":"INC-1"}'
expect_eq "trigger with request_id is accepted (201)" 201 "$(post "$OP" /jobs/j.live/trigger "$b")"
expect_match "... and its retry is the same run (200 or 201)" '^20[01]$' "$(post "$OP" /jobs/j.live/trigger "$b")"
expect_eq "... one manual run" 1 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"
code=$(curl -s -o "$O" -w '%{http_code}' -H "Authorization: Bearer $AD" "$URL/jobs?limit=2&retired=false&next=1")
expect_eq "GET /jobs?limit=2&retired=false&next=1 answers (200)" 200 "$code"
stop_node r1
finish
