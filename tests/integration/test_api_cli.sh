#!/usr/bin/env bash
# The CLI through the HTTP API (--server): the operator actions of
# test_operator.sh run with no database credentials in the environment, as
# the token's name in the audit log, with the CLI's exit codes.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 through the API: pause, resume, trigger, cancel, backfill, tickets, release, apply and the reads work through --server with only an API token, audited under the token's name; the exit codes are the CLI's"
T0=$SECONDS

fresh_db it_api_cli
"$PAL" migrate >/dev/null
cat >"$PALISADE_TEST_TMP/api-cli.yaml" <<'YAML'
jobs:
  - {id: cli.a, tenant: t1, group: g1, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply a job (database)" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-cli.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[s1]}/readyz)\" = 200 ]"
OP=$("$PAL" token create --name ops-bot --role operator | tail -1)
"$PAL" token create --name deployer --role admin | tail -1 >"$PALISADE_TEST_TMP/admin.token"

# No database in the environment from here on: only the server and a token.
remote() { env -u PALISADE_PG -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE \
	PALISADE_SERVER="http://${NODE_ADMIN[s1]}" PALISADE_TOKEN="$OP" "$PAL" "$@"; }
expect_exit "pause --job through the API" 0 remote pause --job cli.a --reason "api cli"
expect_eq "the gate is set" "job:cli.a|ops-bot|operator" "$(sql "select scope || '|' || actor || '|' || (select role from audit_log where action = 'pause' order by id desc limit 1) from gates")"
expect_exit "resume --job" 0 remote resume --job cli.a
for s in "--group g1" "--tenant t1" "--all"; do
	expect_exit "pause $s" 0 remote pause $s --reason "api cli"
	expect_exit "resume $s" 0 remote resume $s
done
expect_eq "no gate left" 0 "$(sql "select count(*) from gates")"
expect_exit "trigger --at --request-id" 0 remote trigger --job cli.a --at 2098-01-01T00:00:30Z --request-id r-1 --reason "api cli"
expect_exit "the same request id again: nothing new (exit 0)" 0 remote trigger --job cli.a --at 2098-01-01T00:00:30Z --request-id r-1 --reason "api cli"
expect_match "it says so" 'existed: true' "$OUT"
TID=$(sql "select id from trigger_jobs where job_id = 'cli.a' and request_id = 'r-1'")
expect_exit "triggers --job lists it" 0 remote triggers --job cli.a --output json
expect_match "with its request id" '"request_id": "r-1"' "$OUT"
expect_exit "attempts of the trigger" 0 remote attempts "$TID"
expect_exit "cancel --trigger" 0 remote cancel --trigger "$TID" --reason "api cli"
expect_exit "cancel it again: refused (exit 4)" 4 remote cancel --trigger "$TID" --reason "api cli"
expect_exit "backfill" 0 remote backfill --job cli.a --from 2026-01-01T00:00:00Z --to 2026-01-01T03:00:00Z --reason "api cli"
expect_eq "four backfill triggers" 4 "$(sql "select count(*) from trigger_jobs where job_id = 'cli.a' and source = 'backfill'")"
# triggers --since through the API: the rows of the direct path (the
# backfill's 02:00 and 03:00 and what is planned after them, not 00:00, 01:00)
ids='import json,sys; o=json.loads(sys.stdin.read()); print(" ".join(str(r["id"]) for r in (o["items"] if isinstance(o, dict) else o)))'
expect_exit "triggers --since through the API" 0 remote triggers --job cli.a --since 2026-01-01T02:00:00Z --output json
via_api=$(python3 -c "$ids" <<<"$OUT")
expect_exit "triggers --since on the database" 0 "$PAL" triggers --job cli.a --since 2026-01-01T02:00:00Z --output json
expect_eq "the same triggers, without the backfill's first two" \
	"$(python3 -c "$ids" <<<"$OUT") 2" "$via_api $(sql "select count(*) from trigger_jobs where job_id = 'cli.a' and scheduled_at < '2026-01-01T02:00:00Z'")"
check "... the backfill's 02:00 and 03:00 among them ($via_api)" [ "$(wc -w <<<"$via_api")" -ge 2 ]
# triggers --job --until: the instants before it, not the one at it, on
# both paths (a page ending at an instant seen does not show it again)
expect_exit "triggers --job --until through the API" 0 remote triggers --job cli.a --until 2026-01-01T02:00:00Z --output json
via_api=$(jq -r '[.[].scheduled_at[11:13]] | join(" ")' <<<"$OUT")
expect_exit "triggers --job --until on the database" 0 "$PAL" triggers --job cli.a --until 2026-01-01T02:00:00Z --output json
expect_eq "the backfill's 01:00 and 00:00 on the database, not the 02:00 at --until" "01 00" "$(jq -r '[.[].scheduled_at[11:13]] | join(" ")' <<<"$OUT")"
expect_eq "... and through the API" "01 00" "$via_api"
# triggers --trace-id through the API, and the trace ids it prints: those of
# the node's cluster, as the database path prints them with the node's config
direct=$("$PAL" triggers --config "$CLUSTER_CONF" --job cli.a --output json)
TRACE=$(jq -r '.[0].trace_id' <<<"$direct")
expect_exit "triggers --trace-id through the API" 0 remote triggers --trace-id "$TRACE" --output json
expect_eq "... the trigger of that trace id" "$(jq -c '[.[0] | .id, .trace_id]' <<<"$direct")" "$(jq -c '[.[] | .id, .trace_id]' <<<"$OUT")"
expect_exit "triggers --job through the API" 0 remote triggers --job cli.a --output json
expect_eq "... with the trace ids of the node's cluster" "$(jq -c '[.[].trace_id]' <<<"$direct")" "$(jq -c '[.[].trace_id]' <<<"$OUT")"
# triggers of every job through the API: over --since/--until (at most a
# day), the database path's output, table and json; a second job of
# another tenant at the same instants
printf 'jobs:\n  - {id: cli.x, tenant: t2, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/api-x.yaml"
expect_exit "apply a second job (database)" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-x.yaml"
expect_exit "backfill it" 0 remote backfill --job cli.x --from 2026-01-01T00:00:00Z --to 2026-01-01T03:00:00Z --reason "api cli"
RANGE=(--since 2026-01-01T01:00:00Z --until 2026-01-01T03:00:00Z)
for out in json table; do
	expect_exit "triggers of every job through the API ($out)" 0 remote triggers "${RANGE[@]}" --output "$out"
	via_api=$OUT
	expect_exit "... on the database ($out)" 0 "$PAL" triggers --config "$CLUSTER_CONF" "${RANGE[@]}" --output "$out"
	expect_eq "... the same output ($out)" "$OUT" "$via_api"
done
expect_eq "... both jobs' 01:00 and 02:00, newest first" "cli.x 02 cli.a 02 cli.x 01 cli.a 01" \
	"$(jq -r '[.[] | .job_id + " " + .scheduled_at[11:13]] | join(" ")' <<<"$(remote triggers "${RANGE[@]}" --output json)")"
# triggers --tenant: only that tenant's jobs, through the API as on the database
for out in json table; do
	expect_exit "triggers --tenant t2 through the API ($out)" 0 remote triggers "${RANGE[@]}" --tenant t2 --output "$out"
	via_api=$OUT
	expect_exit "... on the database ($out)" 0 "$PAL" triggers --config "$CLUSTER_CONF" "${RANGE[@]}" --tenant t2 --output "$out"
	expect_eq "... the same output ($out)" "$OUT" "$via_api"
done
expect_eq "... cli.x's 02:00 and 01:00 only" "cli.x 02 cli.x 01" \
	"$(jq -r '[.[] | .job_id + " " + .scheduled_at[11:13]] | join(" ")' <<<"$(remote triggers "${RANGE[@]}" --tenant t2 --output json)")"
expect_exit "triggers --tenant with --job: usage (exit 64)" 64 "$PAL" triggers --job cli.a --tenant t2
expect_exit "... --state pending --limit 3 through the API" 0 remote triggers "${RANGE[@]}" --state pending --limit 3 --output json
via_api=$OUT
expect_exit "... on the database" 0 "$PAL" triggers --config "$CLUSTER_CONF" "${RANGE[@]}" --state pending --limit 3 --output json
expect_eq "... the same three" "$OUT" "$via_api"
expect_exit "triggers of every job without --until through the API: usage (exit 64)" 64 remote triggers --since 2026-01-01T00:00:00Z
expect_match "... it says what it needs" 'need --since and --until, at most 86400 s apart' "$OUT"
expect_exit "... more than a day apart: exit 64" 64 remote triggers --since 2026-01-01T00:00:00Z --until 2026-01-02T00:00:01Z
expect_exit "cancel --job" 0 remote cancel --job cli.a --reason "api cli"
expect_exit "tickets list" 0 remote tickets list
expect_exit "tickets resolve of no ticket: exit 3" 3 remote tickets resolve 999 --action abandon --reason "api cli"
expect_exit "release of a job not quarantined: exit 3" 3 remote release cli.a --reason "api cli"
expect_exit "jobs" 0 remote jobs
expect_match "lists the job" 'cli\.a' "$OUT"
expect_match "... with its schedule, as the direct path prints it" 'cli\.a .*v1  0 0 \* \* \* \? \(UTC\)' "$OUT"
expect_exit "jobs --output json through the API" 0 remote jobs --output json
expect_eq "... holds each job's versions, as on the database" \
	"$("$PAL" jobs --output json | jq -c '[.[] | [.job_id, [.versions[] | .version, .digest, .cron]]]')" \
	"$(jq -c '[.[] | [.job_id, [.versions[] | .version, .digest, .cron]]]' <<<"$OUT")"
expect_exit "jobs JOB" 0 remote jobs cli.a
expect_exit "gates" 0 remote gates
# status through the API: the node reads the shards and the live nodes
expect_exit "status through the API" 0 remote status --output json
expect_eq "... the two shards and the live node, as on the database with --zk" \
	"$("$PAL" status --config "$CLUSTER_CONF" --output json | jq -c '[[.shards[].shard], [.nodes[].id]]')" "$(jq -c '[[.shards[].shard], [.nodes[].id]]' <<<"$OUT")"
expect_exit "status through the API, as a table" 0 remote status
expect_match "... names the live node" 'nodes: 1 live' "$OUT"
expect_exit "audit" 0 remote audit --limit 5
expect_exit "misfires --job" 0 remote misfires --job cli.a
# misfires --from --to through the API: the rows of the direct path (of
# three decisions, the one whose range meets 04:00-06:00)
sql "INSERT INTO misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
     SELECT 'cli.a', 1, t, t, 1, 'skip', 'missed', 0, 1
     FROM unnest(ARRAY['2026-01-01T01:00:00Z', '2026-01-01T05:00:00Z', '2026-01-01T09:00:00Z']::timestamptz[]) t" >/dev/null
expect_exit "misfires --from --to through the API" 0 remote misfires --job cli.a --from 2026-01-01T04:00:00Z --to 2026-01-01T06:00:00Z --output json
via_api=$(python3 -c "$ids" <<<"$OUT")
expect_exit "misfires --from --to on the database" 0 "$PAL" misfires --job cli.a --from 2026-01-01T04:00:00Z --to 2026-01-01T06:00:00Z --output json
expect_eq "the same decision, the one at 05:00" \
	"$(python3 -c "$ids" <<<"$OUT") $(sql "select id from misfires where job_id = 'cli.a' and range_from = '2026-01-01T05:00:00Z'")" "$via_api $via_api"
expect_exit "audit --actor --action through the API" 0 remote audit --actor ops-bot --action trigger --output json
expect_eq "only that actor's triggers" "trigger" "$(python3 -c 'import json,sys; print(" ".join(sorted({r["action"] + ("" if r["actor"] == "ops-bot" else "!") for r in json.loads(sys.stdin.read())})))' <<<"$OUT")"
expect_exit "audit --actor on the database" 0 "$PAL" audit --actor ops-bot --action pause
expect_match "shows the role and the client" 'ops-bot .*pause .*\(role operator, client 127\.0\.0\.1:[0-9]+\)' "$OUT"
# audit --since through the API: the rows of the direct path (the newest
# second's only: the rows of the start are older)
# (a row the cluster writes between the two reads is left out of both: the
# comparison is of the rows up to the newest one before the first read)
since=$(sql "select to_char(date_trunc('second', max(at)) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from audit_log")
upto=$(sql "select max(id) from audit_log")
upto_ids='import json,sys; o=json.loads(sys.stdin.read()); print(" ".join(str(r["id"]) for r in (o["items"] if isinstance(o, dict) else o) if r["id"] <= int(sys.argv[1])))'
expect_exit "audit --since through the API" 0 remote audit --since "$since" --limit 1000 --output json
via_api=$(python3 -c "$upto_ids" "$upto" <<<"$OUT")
expect_exit "audit --since on the database" 0 "$PAL" audit --since "$since" --limit 1000 --output json
expect_eq "the same rows, newest first, fewer than the whole log ($upto rows up to the first read)" \
	"$(python3 -c "$upto_ids" "$upto" <<<"$OUT") yes" "$via_api $([ "$(wc -w <<<"$via_api")" -gt 0 ] && [ "$(wc -w <<<"$via_api")" -lt "$(sql "select count(*) from audit_log where id <= $upto")" ] && echo yes)"
# audit --until through the API: the rows of the direct path (all but the
# newest second's)
expect_exit "audit --until through the API" 0 remote audit --until "$since" --limit 1000 --output json
via_api=$(python3 -c "$ids" <<<"$OUT")
expect_exit "audit --until on the database" 0 "$PAL" audit --until "$since" --limit 1000 --output json
expect_eq "the same rows, some but not all of the log" \
	"$(python3 -c "$ids" <<<"$OUT") yes" "$via_api $(n=$(wc -w <<<"$via_api"); [ "$n" -gt 0 ] && [ "$n" -lt "$(sql "select count(*) from audit_log")" ] && echo yes)"
expect_eq "... none at or after --until" 0 "$(sql "select count(*) from audit_log where id in ($(tr ' ' ',' <<<"${via_api:-0}")) and at >= '$since'")"
expect_eq "the API refuses a since that is no instant: 400" 400 \
	"$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $OP" "http://${NODE_ADMIN[s1]}/api/v1/audit?since=yesterday")"
expect_exit "verify through the API" 0 remote verify --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z --job cli.a
expect_match "its verdict" '^verify: OK ' "$OUT"
expect_exit "apply as an operator: refused (exit 77)" 77 remote apply "$PALISADE_TEST_TMP/api-cli.yaml"
sed 's/0 0 \* \* \* ?/0 30 * * * ?/' "$PALISADE_TEST_TMP/api-cli.yaml" >"$PALISADE_TEST_TMP/api-cli2.yaml"
expect_exit "apply with the admin token file" 0 remote apply --token-file "$PALISADE_TEST_TMP/admin.token" "$PALISADE_TEST_TMP/api-cli2.yaml"
expect_match "a new version" 'updated' "$OUT"
printf 'jobs:\n  - {id: cli.other, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/api-other.yaml"
expect_exit "apply --prune --dry-run through the API" 0 remote apply --token-file "$PALISADE_TEST_TMP/admin.token" --prune --dry-run "$PALISADE_TEST_TMP/api-other.yaml"
expect_match "names the jobs that file leaves out" '^would_retire: \[.*"cli\.a"' "$OUT"
expect_eq "and retires nothing" 0 "$(sql "select count(*) from jobs where retired_at is not null")"
expect_exit "apply --prune-prefix --dry-run through the API" 0 remote apply --token-file "$PALISADE_TEST_TMP/admin.token" --prune-prefix cli.a --dry-run "$PALISADE_TEST_TMP/api-other.yaml"
expect_match "names the jobs of that prefix the file leaves out" '^would_retire: \[.*"cli\.a"' "$OUT"
expect_exit "... of another prefix" 0 remote apply --token-file "$PALISADE_TEST_TMP/admin.token" --prune-prefix cli.z. --dry-run "$PALISADE_TEST_TMP/api-other.yaml"
check "... names none of them" bash -c '! grep -q "cli\.a" <<<"$1"' _ "$OUT"
expect_eq "and retires nothing" 0 "$(sql "select count(*) from jobs where retired_at is not null")"
printf 'jobs:\n  - {id: cli.b, schedule: {cron: "61 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/api-bad.yaml"
expect_exit "an invalid file: exit 65" 65 remote apply --token-file "$PALISADE_TEST_TMP/admin.token" "$PALISADE_TEST_TMP/api-bad.yaml"
expect_match "with file:line:col" 'api-bad\.yaml:2:[0-9]+: error:' "$OUT"
# delete through the API: the direct path's output and exit codes.
printf 'jobs:\n' >"$PALISADE_TEST_TMP/api-del.yaml"
for j in d1 d2 d3; do
	printf '  - {id: cli.%s, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' "$j" >>"$PALISADE_TEST_TMP/api-del.yaml"
done
expect_exit "apply three jobs to delete (database)" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-del.yaml"
ADM=(--token-file "$PALISADE_TEST_TMP/admin.token")
expect_exit "delete --dry-run through the API" 0 remote delete "${ADM[@]}" --dry-run cli.d1
expect_eq "says what it would retire" "would retire cli.d1" "$OUT"
expect_exit "delete of a job and a missing one: exit 3" 3 remote delete "${ADM[@]}" cli.d1 cli.nope --reason "api cli"
expect_match "naming the missing one" 'no job "cli\.nope"' "$OUT"
expect_eq "and nothing retired" 0 "$(sql "select count(*) from jobs where retired_at is not null")"
expect_exit "delete as an operator: refused (exit 77)" 77 remote delete cli.d1 --reason "api cli"
expect_exit "delete through the API" 0 remote delete "${ADM[@]}" cli.d1 --reason "api cli"
expect_match "prints what the direct path prints" '^retired cli\.d1 v2: nothing planned from [0-9T:Z-]+; [0-9]+ pending triggers? cancelled$' "$OUT"
expect_eq "retired, audited as the token" "1 deployer" \
	"$(sql "select count(*) from jobs where job_id = 'cli.d1' and retired_at is not null") $(sql "select actor from audit_log where action = 'job.retire' order by id desc limit 1")"
expect_exit "again: exit 0" 0 remote delete "${ADM[@]}" cli.d1 --reason "api cli"
expect_eq "already retired" "already retired cli.d1 (v2)" "$OUT"
keys='import json,sys; o=json.loads(sys.stdin.read()); print(sorted(o), [(sorted(j), j["outcome"]) for j in o["jobs"]])'
expect_exit "delete --output json through the API" 0 remote delete "${ADM[@]}" --output json cli.d2 --reason "api cli"
via_api=$(python3 -c "$keys" <<<"$OUT")
expect_exit "delete --output json on the database" 0 "$PAL" delete --output json cli.d3 --reason "api cli"
expect_eq "the same JSON fields both ways" "$(python3 -c "$keys" <<<"$OUT")" "$via_api"
# plan diff through the API: the direct path's answer, --count and --from kept.
expect_exit "plan diff --output json through the API" 0 remote plan diff --count 3 --from 2030-01-01T00:00:00Z --output json "$PALISADE_TEST_TMP/api-cli2.yaml"
via_api=$OUT
expect_exit "plan diff --output json on the database" 0 "$PAL" plan diff --count 3 --from 2030-01-01T00:00:00Z --output json "$PALISADE_TEST_TMP/api-cli2.yaml"
expect_eq "the same JSON both ways" "$OUT" "$via_api"
expect_exit "plan diff through the API" 0 remote plan diff --count 2 --from 2030-01-01T00:00:00Z "$PALISADE_TEST_TMP/api-other.yaml"
via_api=$OUT
expect_exit "plan diff on the database" 0 "$PAL" plan diff --count 2 --from 2030-01-01T00:00:00Z "$PALISADE_TEST_TMP/api-other.yaml"
expect_eq "the same lines both ways" "$OUT" "$via_api"
expect_match "a new job's two instants after --from" '^cli\.other: new job.*\+ 2030-01-01T01:00:00Z.*\+ 2030-01-01T02:00:00Z$' "$(tr '\n' ' ' <<<"$via_api" | sed 's/ *$//')"
expect_exit "an invalid file through the API: exit 65" 65 remote plan diff "$PALISADE_TEST_TMP/api-bad.yaml"
expect_match "with file:line:col" 'api-bad\.yaml:2:[0-9]+: error:' "$OUT"
# report cost through the API: the direct path's report, table and JSON.
COST=(report cost --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z)
expect_exit "report cost --output json through the API" 0 remote "${COST[@]}" --job cli.a --output json
via_api=$OUT
expect_exit "report cost --output json on the database" 0 "$PAL" "${COST[@]}" --job cli.a --output json
expect_eq "the same report both ways" "$OUT" "$via_api"
expect_eq "of the backfill's four triggers" 4 "$(python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["total"]["triggers"])' <<<"$via_api")"
expect_exit "report cost through the API" 0 remote "${COST[@]}" --limit 1
via_api=$OUT
expect_exit "report cost on the database" 0 "$PAL" "${COST[@]}" --limit 1
expect_eq "the same table both ways" "$OUT" "$via_api"
expect_exit "report cost of no such job through the API: exit 3" 3 remote "${COST[@]}" --job cli.nope
# rollback through the API: admin only, audited as the token, the direct
# path's JSON fields and table.
expect_exit "rollback as an operator: refused (exit 77)" 77 remote rollback --job cli.a --reason "api cli" --wait 0s
fields='import json,sys; o=json.loads(sys.stdin.read()); print(sorted(o), o["scope"], sorted({k for r in o["unfinished"] for k in r}))'
expect_exit "rollback --output json through the API" 0 remote rollback "${ADM[@]}" --job cli.a --reason "api cli" --wait 0s --output json
via_api=$(python3 -c "$fields" <<<"$OUT")
expect_exit "rollback --output json on the database" 0 "$PAL" rollback --job cli.a --reason "api cli" --wait 0s --output json
expect_eq "the same JSON fields both ways" "$(python3 -c "$fields" <<<"$OUT")" "$via_api"
expect_eq "audited as the token" "deployer admin" "$(sql "select actor || ' ' || role from audit_log where action = 'rollback' order by id limit 1")"
expect_exit "rollback through the API" 0 remote rollback "${ADM[@]}" --job cli.a --reason "api cli" --wait 0s
expect_match "prints what the direct path prints" '^job:cli\.a rolled back at [0-9T:Z-]+: [0-9]+ due triggers handed back' "$OUT"
expect_exit "rollback of no such job through the API: exit 3" 3 remote rollback "${ADM[@]}" --job cli.nope --reason "api cli" --wait 0s
# cutover through the API (cli.a is in shadow since the roll-back): admin
# only, a step, its stop lines refusing the next one (exit 4) as the direct
# path refuses it.
at1=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ) at2=$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)
expect_exit "cutover as an operator: refused (exit 77)" 77 remote cutover --job cli.a --at "$at1" --reason "api cli"
expect_exit "cutover --percent 50 through the API" 0 remote cutover "${ADM[@]}" --job cli.a --at "$at1" --percent 50 --reason "api cli" --output json
expect_eq "the direct path's JSON fields" "['at', 'dry_run', 'hidden_split_chains', 'jobs', 'live_jobs', 'made_live', 'moved', 'percent', 'previous_percent', 'scope', 'split_chains'] 50" \
	"$(python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); print(sorted(o), o["percent"])' <<<"$OUT")"
expect_eq "audited as the token" "deployer admin" "$(sql "select actor || ' ' || role from audit_log where action = 'cutover' order by id desc limit 1")"
sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) VALUES ('cli.a', 'api cli', '{}', ARRAY['abandon'])" >/dev/null
expect_exit "with a ticket open, the next step through the API: refused (exit 4)" 4 remote cutover "${ADM[@]}" --job cli.a --at "$at2" --reason "api cli"
expect_match "naming the stop line" 'open_tickets = 1' "$OUT"
expect_exit "and on the database: refused alike (exit 4)" 4 "$PAL" cutover --job cli.a --at "$at2" --reason "api cli"
expect_match "naming the same line" 'open_tickets = 1 \(bound 0\)' "$OUT"
expect_exit "--sink-pg through the API: usage (exit 64)" 64 remote cutover "${ADM[@]}" --job cli.a --at "$at2" --reason "api cli" --sink-pg "dbname=x"
# shadow and shadow list through the API: the direct path's answers.
expect_exit "shadow as an operator: refused (exit 77)" 77 remote shadow --group g9 --reason "api cli"
expect_exit "shadow --group through the API" 0 remote shadow "${ADM[@]}" --group g9 --reason "api cli"
expect_match "prints what the direct path prints" '^group:g9 is in shadow from [0-9-]{10}T[0-9:]{8}Z on: 0 planned triggers moved to shadow$' "$OUT"
expect_exit "again through the API" 0 remote shadow "${ADM[@]}" --group g9 --reason "api cli" --output json
via_api=$OUT
expect_exit "again on the database" 0 "$PAL" shadow --group g9 --reason "api cli" --output json
expect_eq "the same JSON both ways" "$OUT" "$via_api"
expect_eq "audited as the token" "deployer admin" "$(sql "select actor || ' ' || role from audit_log where action = 'shadow' order by id limit 1")"
expect_exit "shadow list --output json through the API" 0 remote shadow list --output json
via_api=$OUT
expect_exit "shadow list --output json on the database" 0 "$PAL" shadow list --output json
expect_eq "the same list both ways" "$OUT" "$via_api"
expect_match "with the group" '"scope": "group:g9"' "$via_api"
# Lists longer than a page of the API (1000 rows): --server reads every page.
sql "INSERT INTO shadow_scopes (scope, actor, reason) SELECT 'group:pg' || i, 'api cli', 'pages' FROM generate_series(1, 1005) i;
	INSERT INTO gates (scope, paused, reason, actor) SELECT 'group:pg' || i, true, 'pages', 'api cli' FROM generate_series(1, 1005) i;
	INSERT INTO tickets (job_id, reason, evidence, allowed_actions) SELECT 'cli.a', 'pages', '{}', ARRAY['abandon'] FROM generate_series(1, 1005)" >/dev/null
for cmd in "shadow list" gates "tickets list --all"; do
	expect_exit "$cmd --output json through the API" 0 remote $cmd --output json
	via_api=$OUT
	"$PAL" $cmd --output json >"$PALISADE_TEST_TMP/direct.json" 2>&1
	expect_eq "... every row, as on the database ($(jq length <<<"$via_api") rows)" "$(cat "$PALISADE_TEST_TMP/direct.json")" "$via_api"
done
expect_exit "gates through the API, as a table" 0 remote gates
expect_eq "... every row of the database's table" "$("$PAL" gates)" "$OUT"
sql "DELETE FROM shadow_scopes WHERE reason = 'pages'; DELETE FROM gates WHERE reason = 'pages'; DELETE FROM tickets WHERE reason = 'pages'" >/dev/null
# A job of more versions than a page (copies of the retired cli.d1's first,
# which no controller plans): jobs JOB --server reads every page of them.
sql "DO \$\$ DECLARE c text; BEGIN
	SELECT string_agg(quote_ident(attname), ', ') INTO c FROM pg_attribute WHERE attrelid = 'job_versions'::regclass
	 AND attnum > 0 AND NOT attisdropped AND attgenerated = '' AND attname <> 'version';
	EXECUTE format('INSERT INTO job_versions (version, %s) SELECT v.version + g, %s FROM job_versions v,'
	 ' generate_series(1000, 2005) g WHERE v.job_id = ''cli.d1'' AND v.version = 1', c, c); END \$\$" >/dev/null
expect_exit "jobs cli.d1 --output json through the API" 0 remote jobs cli.d1 --output json
via_api=$OUT
expect_eq "... every version, as on the database ($(jq '.[0].versions | length' <<<"$via_api") versions)" \
	"$("$PAL" jobs cli.d1 --output json)" "$via_api"
sql "DELETE FROM job_versions WHERE job_id = 'cli.d1' AND version > 1000" >/dev/null
# jobs --next and --retired through the API: what the database path prints.
nexts='[.[] | [.job_id, .next]]'
expect_exit "jobs cli.a --next 3 through the API" 0 remote jobs cli.a --next 3 --output json
via_api=$OUT
expect_eq "... three next instants, those of the database path" \
	"3 $("$PAL" jobs cli.a --next 3 --output json | jq -c "$nexts")" "$(jq '.[0].next | length' <<<"$via_api") $(jq -c "$nexts" <<<"$via_api")"
expect_exit "jobs --next 150 through the API (pages within the API's bound of instants)" 0 remote jobs --next 150 --output json
via_api=$OUT
expect_eq "... every live job with its next instants, as on the database" \
	"$("$PAL" jobs --next 150 --output json | jq -c "$nexts")" "$(jq -c "$nexts" <<<"$via_api")"
expect_exit "jobs --retired through the API" 0 remote jobs --retired --output json
via_api=$OUT
expect_eq "... the retired jobs of the database" \
	"$("$PAL" jobs --retired --output json | jq -c '[.[] | [.job_id, .latest_version]]')" "$(jq -c '[.[] | [.job_id, .latest_version]]' <<<"$via_api")"
expect_exit "jobs --retired through the API, as a table" 0 remote jobs --retired
expect_eq "... the database's table (retired at whole seconds)" "$("$PAL" jobs --retired)" "$OUT"
# --limit above a page: audit and triggers --job read pages up to it.
sql "INSERT INTO audit_log (actor, action, scope, reason, details)
	SELECT 'api cli', 'pages', 'job:cli.a', 'row ' || i, '{}' FROM generate_series(1, 1100) i" >/dev/null
expect_exit "audit --action pages --limit 1050 through the API" 0 remote audit --action pages --limit 1050 --output json
via_api=$OUT
expect_eq "... the database's 1050 rows, newest first ($(jq length <<<"$via_api"))" \
	"$("$PAL" audit --action pages --limit 1050 --output json | jq -c '[.[].id]')" "$(jq -c '[.[].id]' <<<"$via_api")"
sql "INSERT INTO misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
	SELECT 'cli.a', 1, t, t, 1, 'skip', 'pages', 0, 1
	FROM generate_series('2025-01-01T00:00:00Z'::timestamptz, '2025-01-01T00:00:00Z'::timestamptz + interval '1100 minutes', interval '1 minute') t" >/dev/null
expect_exit "misfires --job --limit 1050 through the API" 0 remote misfires --job cli.a --limit 1050 --output json
via_api=$OUT
expect_eq "... the database's 1050 rows, newest first ($(jq length <<<"$via_api"))" \
	"$("$PAL" misfires --job cli.a --limit 1050 --output json | jq -c '[.[].id]')" "$(jq -c '[.[].id]' <<<"$via_api")"
sql "DELETE FROM misfires WHERE reason = 'pages'" >/dev/null
# calendars through the API: a calendar 150 jobs name (more than the 100 a
# list's item holds), every job of it as on the database.
{
	printf 'calendars:\n  - {name: office, timezone: UTC, exclude: {yearly: ["12-25"]}}\njobs:\n'
	for i in $(seq 1 150); do
		printf '  - {id: cal.j%03d, schedule: {cron: "0 0 * * * ?", calendar: office}, target: {url: "http://127.0.0.1:9/x"}}\n' "$i"
	done
} >"$PALISADE_TEST_TMP/api-cal.yaml"
expect_exit "apply a calendar and 150 jobs naming it (database)" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-cal.yaml"
expect_exit "calendars --output json through the API" 0 remote calendars --output json
via_api=$OUT
expect_eq "... every calendar with every job, as on the database ($(jq '.[0].jobs | length' <<<"$via_api") jobs)" \
	"$("$PAL" calendars --output json)" "$via_api"
expect_exit "calendars office through the API, as a table" 0 remote calendars office
expect_eq "... the database's table" "$("$PAL" calendars office)" "$OUT"
expect_exit "calendars of an unknown name through the API: exit 3" 3 remote calendars nope
# notify-rules through the API: the database path's rows and table, each
# secret its ${NAME} reference, never its value
export CLI_HOOK=whsec_cliparityvalue
cat >"$PALISADE_TEST_TMP/api-rules.yaml" <<'YAML'
notify_rules:
  - {group: g1, on: [failed], url: "http://127.0.0.1:9/g1", secret: "${CLI_HOOK}"}
  - {tenant: t2, on: [failed, manual], url: "http://127.0.0.1:9/t2", secret: "${CLI_HOOK}"}
YAML
expect_exit "apply two notify rules (database)" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-rules.yaml"
for out in json table; do
	expect_exit "notify-rules through the API ($out)" 0 remote notify-rules --output "$out"
	via_api=$OUT
	expect_exit "... on the database ($out)" 0 "$PAL" notify-rules --output "$out"
	expect_eq "... the same output ($out)" "$OUT" "$via_api"
done
expect_eq "... both rules, the group's first, with the secret's reference" \
	'group g1 failed ${CLI_HOOK}|tenant t2 failed,manual ${CLI_HOOK}' \
	"$(jq -r '[.[] | "\(.scope) \(.name) \(.events | join(",")) \(.secret)"] | join("|")' <<<"$(remote notify-rules --output json)")"
expect_eq "... never the secret's value" 0 "$( (remote notify-rules; "$PAL" notify-rules --output json) | grep -c cliparityvalue)"
expect_exit "a database-only command with --server: usage (exit 64)" 64 \
	env -u PALISADE_PG "$PAL" verify --server "http://${NODE_ADMIN[s1]}"
expect_exit "no token: exit 64" 64 env -u PALISADE_PG -u PALISADE_TOKEN "$PAL" pause --all --reason x --server "http://${NODE_ADMIN[s1]}"
# (the rows the system writes for its own reasons carry a cause: an apply's
# or the controller's cancel of the triggers a version change replaced, which
# exist only when an instant of the old schedule was within the lookahead)
by_others="from audit_log where action in ('pause','resume','trigger','cancel','backfill') and actor not in ('ops-bot') and not coalesce(details ? 'cause', false)"
expect_eq "every write audited as the token, none as a unix user" "0 " \
	"$(sql "select count(*) $by_others") $(sql "select string_agg(id || ' ' || actor || ' ' || action || ' ' || details::text, '; ') $by_others")"
expect_eq "with the client address" 0 "$(sql "select count(*) from audit_log where actor = 'ops-bot' and client is null")"
# A server whose answer never ends (65 MiB here): the CLI stops reading at 64 MiB.
big_port=$(free_port)
python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        chunk = b" " * (1 << 20)
        try:
            for _ in range(65): self.wfile.write(chunk)
            self.wfile.write(b"{\"items\": [], \"next_cursor\": null}")
        except OSError: pass
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$big_port" &
big_pid=$!
wait_until "the oversized server listens" 10 bash -c "curl -s -o /dev/null --max-filesize 1 http://127.0.0.1:$big_port/; [ \$? -ne 7 ]"
big_err=$(env -u PALISADE_PG PALISADE_SERVER="http://127.0.0.1:$big_port" PALISADE_TOKEN="$OP" "$PAL" jobs 2>&1 >/dev/null)
check "an answer over 64 MiB refused (exit not 0)" bash -c '! env -u PALISADE_PG PALISADE_SERVER="$1" PALISADE_TOKEN="$2" "$3" jobs >/dev/null 2>&1' _ "http://127.0.0.1:$big_port" "$OP" "$PAL"
expect_match "with a clear error" 'larger than 64 MiB' "$big_err"
kill "$big_pid"; wait "$big_pid" 2>/dev/null
# drain through the API: an admin token, no admin token of the node, no ZooKeeper
expect_exit "drain --server with an operator token: refused (77)" 77 remote drain
expect_exit "drain --server with an admin token" 0 env -u PALISADE_PG -u PALISADE_ADMIN_TOKEN \
	"$PAL" drain --server "http://${NODE_ADMIN[s1]}" --token-file "$PALISADE_TEST_TMP/admin.token"
expect_match "... accepted by the node that serves it" '^drain: accepted by s1 at ' "$OUT"
wait_until "the node drained through the API exits" 15 bash -c "! kill -0 ${NODE_PID[s1]} 2>/dev/null"
expect_eq "the drain audited under the token's name and role" "deployer|admin|node:s1" \
	"$(sql "select actor || '|' || role || '|' || scope from audit_log where action = 'drain'")"
stop_node s1
echo "  took $((SECONDS - T0)) s"
finish
