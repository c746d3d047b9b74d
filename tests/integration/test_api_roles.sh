#!/usr/bin/env bash
# The HTTP API's identities: the same writes as a viewer, an operator, an
# admin and an operator limited to one tenant, each answered as the role
# allows, with one audit row per accepted write naming the token, its role
# and the client; a revoked token refused by the next request on every
# node; a retried write with its Idempotency-Key acting once.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "API roles and tenants (G7: every operator action audited with who did it): viewer writes nothing, operator acts on jobs and triggers, admin also on tokens, a tenant-scoped operator only on its tenant (reads of others 404, writes 403); revocation is immediate on every node; Idempotency-Key replays"
T0=$SECONDS

fresh_db it_api_roles
"$PAL" migrate >/dev/null
cat >"$PALISADE_TEST_TMP/api-roles.yaml" <<'YAML'
jobs:
  - {id: red.a, tenant: red, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: blue.b, tenant: blue, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply two jobs of two tenants" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-roles.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node r1
start_node r2
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1
wait_until "node r2 ready" 20 ready r2

declare -A TOK
for t in viewer:viewer operator:operator admin:admin op-red:operator admin-red:admin viewer-red:viewer; do
	name=${t%%:*} role=${t##*:}
	extra=(); [[ "$name" = *-red ]] && extra=(--tenant red)
	out=$("$PAL" token create --name "$name" --role "$role" "${extra[@]}") || fail "token create $name"
	TOK[$name]=$(tail -1 <<<"$out")
done
expect_match "token create prints the secret alone on its last line" '^pal_[0-9a-f]{16}_[0-9a-f]{64}$' "${TOK[admin]}"
expect_eq "only a salted hash is stored (no row holds the secret)" 0 \
	"$(sql "select count(*) from api_tokens where hash = '${TOK[admin]#pal_*_}' or position('${TOK[admin]#pal_*_}' in salt) > 0")"

# api NODE TOKEN METHOD PATH [BODY] [curl args...]: prints the status; the body in $BODY_OUT
api() {
	local node=$1 tok=$2 method=$3 path=$4 body=${5:-} f=$PALISADE_TEST_TMP/api-out
	shift 5 2>/dev/null || shift $#
	local args=(-s -o "$f" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok")
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data "$body")
	curl "${args[@]}" "$@" "http://${NODE_ADMIN[$node]}/api/v1$path"
	BODY_OUT=$(cat "$f")
}

# The same writes for every token: METHOD PATH BODY, and what each role answers.
WRITES=(
	"POST /jobs/red.a/pause {\"reason\":\"r\"}"
	"POST /jobs/red.a/resume {\"reason\":\"r\"}"
	"POST /jobs/blue.b/pause {\"reason\":\"r\"}"
	"POST /jobs/blue.b/resume {}"
	"POST /jobs/red.a/trigger {\"reason\":\"r\",\"at\":\"2098-01-01T00:00:00Z\"}"
	"POST /jobs/blue.b/trigger {\"reason\":\"r\",\"at\":\"2098-01-01T00:00:00Z\"}"
	"POST /jobs/red.a/cancel {\"reason\":\"r\"}"
	"POST /jobs/blue.b/cancel {\"reason\":\"r\"}"
	"POST /tenants/red/pause {\"reason\":\"r\"}"
	"POST /tenants/red/resume {\"reason\":\"r\"}"
	"POST /tenants/blue/pause {\"reason\":\"r\"}"
	"POST /tenants/blue/resume {\"reason\":\"r\"}"
	"POST /groups/default/pause {\"reason\":\"r\"}"
	"POST /groups/default/resume {\"reason\":\"r\"}"
	"POST /pause {\"reason\":\"r\"}"
	"POST /resume {\"reason\":\"r\"}"
	"POST /tickets/999999/resolve {\"reason\":\"r\",\"action\":\"abandon\"}"
	"POST /tokens {\"name\":\"made-by-TOKEN\",\"role\":\"viewer\"}"
	"POST /tokens/made-by-TOKEN/revoke {}"
	"POST /jobs/red.a/pause {}"
)
# Expected status per role, in the order of WRITES (ticket 999999 does not exist: 404 when allowed;
# the last write has no reason: 422 when allowed).
EXPECT_viewer="403 403 403 403 403 403 403 403 403 403 403 403 403 403 403 403 403 403 403 403"
EXPECT_operator="200 200 200 200 201 201 200 200 200 200 200 200 200 200 200 200 404 403 403 422"
EXPECT_admin="200 200 200 200 201 201 200 200 200 200 200 200 200 200 200 200 404 201 200 422"
EXPECT_op_red="200 200 403 403 201 403 200 403 200 200 403 403 403 403 403 403 404 403 403 422"
for name in viewer operator admin op-red; do
	var=EXPECT_${name//-/_}
	got=() ok2xx=0
	for w in "${WRITES[@]}"; do
		read -r m p b <<<"$w"
		p=${p//TOKEN/$name} b=${b//TOKEN/$name}
		s=$(api r1 "${TOK[$name]}" "$m" "$p" "$b")
		got+=("$s")
		[[ $s == 2* ]] && ok2xx=$((ok2xx + 1))
	done
	expect_eq "the $name token's 20 writes answered as its role allows" "${!var}" "${got[*]}"
	# one audit row per accepted write, each with the token's name, role and client address
	expect_eq "$name: one audit row per accepted write, naming token, role and client" "$ok2xx" \
		"$(sql "select count(*) from audit_log where actor = '$name' and role = '$( [ "$name" = op-red ] && echo operator || echo "$name")' and client like '127.0.0.1:%'")"
done
expect_eq "no audit row without its role and client" 0 \
	"$(sql "select count(*) from audit_log where actor in ('viewer','operator','admin','op-red') and (role is null or client is null)")"

# Reads: the scoped token sees its tenant only; another tenant's job is 404.
expect_eq "op-red reads red.a: 200" 200 "$(api r1 "${TOK[op-red]}" GET /jobs/red.a)"
expect_eq "op-red reads blue.b: 404 (as if it did not exist)" 404 "$(api r1 "${TOK[op-red]}" GET /jobs/blue.b)"
api r1 "${TOK[op-red]}" GET /jobs >/dev/null
expect_eq "op-red's job list holds red.a only" "red.a" "$(python3 -c 'import json,sys; print(",".join(j["job_id"] for j in json.loads(sys.argv[1])["items"]))' "$BODY_OUT")"
expect_eq "viewer-red's cluster-wide status: 403" 403 "$(api r1 "${TOK[viewer-red]}" GET /status)"
expect_eq "the viewer's: 200" 200 "$(api r1 "${TOK[viewer]}" GET /status)"
expect_eq "op-red's triggers of blue.b: 404" 404 "$(api r1 "${TOK[op-red]}" GET "/triggers?job=blue.b")"
expect_eq "viewer lists triggers of blue.b: 200" 200 "$(api r1 "${TOK[viewer]}" GET "/triggers?job=blue.b")"
RC="/report/cost?from=2026-01-01T00:00:00Z&to=2099-12-31T00:00:00Z"
expect_eq "viewer-red's cost report of red.a: 200" 200 "$(api r1 "${TOK[viewer-red]}" GET "$RC&job=red.a")"
expect_eq "... of blue.b: 404; of tenant blue: 404; of every job: 403" "404 404 403" \
	"$(api r1 "${TOK[viewer-red]}" GET "$RC&job=blue.b") $(api r1 "${TOK[viewer-red]}" GET "$RC&tenant=blue") $(api r1 "${TOK[viewer-red]}" GET "$RC")"
expect_eq "the viewer's cost report of every job: 200" 200 "$(api r1 "${TOK[viewer]}" GET "$RC")"
expect_eq "no token: 401" 401 "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[r1]}/api/v1/jobs")"
expect_match "errors are problem documents with a stable type" '"type": "urn:palisade:problem:unauthorized"' \
	"$(curl -s "http://${NODE_ADMIN[r1]}/api/v1/jobs")"
expect_match "served as application/problem+json" 'application/problem\+json' \
	"$(curl -s -D - -o /dev/null "http://${NODE_ADMIN[r1]}/api/v1/jobs")"
expect_eq "the node's admin token acts as admin" 200 "$(api r1 "$PALISADE_ADMIN_TOKEN" GET /tokens)"

# A tenant-limited token and a job file naming its tenant for another tenant's
# job: refused, the job keeps its tenant (apply rewrites a job's tenant).
steal=$PALISADE_TEST_TMP/api-steal.yaml
printf '%s\n' 'jobs:' '  - {id: blue.b, tenant: red, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}' >"$steal"
yapi() { curl -s -o "$PALISADE_TEST_TMP/api-out" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
	-H 'Content-Type: application/yaml' --data-binary @"$steal" "http://${NODE_ADMIN[r1]}/api/v1$2"; }
expect_eq "admin-red applies blue.b as tenant red: 403" 403 "$(yapi "${TOK[admin-red]}" /apply)"
expect_eq "blue.b is still of tenant blue, version 1" "blue 1" "$(sql "select tenant || ' ' || latest_version from jobs where job_id = 'blue.b'")"
expect_eq "admin-red still may not pause blue.b" 403 "$(api r1 "${TOK[admin-red]}" POST /jobs/blue.b/pause '{"reason":"r"}')"
expect_eq "viewer-red's plan diff of blue.b: 404, as its read of blue.b" 404 "$(yapi "${TOK[viewer-red]}" /plan/diff)"
expect_eq "the unlimited viewer's plan diff of it: 200" 200 "$(yapi "${TOK[viewer]}" /plan/diff)"
sed -i 's/blue\.b/red.new/' "$steal"
expect_eq "admin-red applies a new job of tenant red: 200" 200 "$(yapi "${TOK[admin-red]}" /apply)"
# Prune retires the live jobs of every tenant the file does not name: an
# unlimited token only; DELETE of another tenant's job: 403, a viewer's: 403.
expect_eq "admin-red applies with prune: 403, nothing retired" "403 0" \
	"$(yapi "${TOK[admin-red]}" '/apply?prune=true') $(sql "select count(*) from jobs where retired_at is not null")"
expect_eq "admin-red deletes blue.b: 403" 403 "$(api r1 "${TOK[admin-red]}" DELETE /jobs/blue.b '{"reason":"r"}')"
expect_eq "operator deletes red.new: 403 (admin only)" 403 "$(api r1 "${TOK[operator]}" DELETE /jobs/red.new '{"reason":"r"}')"
expect_eq "admin-red deletes red.new: 200, audited as the token" "200 admin-red|admin" \
	"$(api r1 "${TOK[admin-red]}" DELETE /jobs/red.new '{"reason":"gone"}') $(sql "select actor || '|' || role from audit_log where action = 'job.retire' and scope = 'job:red.new'")"

# Idempotency-Key: the retried trigger acts once and is answered the same.
s1=$(api r1 "${TOK[operator]}" POST /jobs/red.a/trigger '{"reason":"deploy 42"}' -H 'Idempotency-Key: deploy-42'); b1=$(cat "$PALISADE_TEST_TMP/api-out")
s2=$(api r2 "${TOK[operator]}" POST /jobs/red.a/trigger '{"reason":"deploy 42"}' -H 'Idempotency-Key: deploy-42' -D "$PALISADE_TEST_TMP/api-h"); b2=$(cat "$PALISADE_TEST_TMP/api-out")
expect_eq "first trigger with a key 201, its retry (on the other node) replayed with the same status" "201 201" "$s1 $s2"
expect_eq "the same answer" "$b1" "$b2"
expect_match "marked Idempotent-Replayed" 'Idempotent-Replayed: true' "$(cat "$PALISADE_TEST_TMP/api-h")"
expect_eq "one manual trigger for the key, its request id the key in the token's name space" 1 "$(sql "select count(*) from trigger_jobs where job_id = 'red.a' and request_id = 'operator:deploy-42'")"
# Keys are per token: another system (token) sending the same key for its own
# event gets a run of its own, not the first system's answer.
s3=$(api r1 "${TOK[op-red]}" POST /jobs/red.a/trigger '{"reason":"deploy 42"}' -H 'Idempotency-Key: deploy-42'); b3=$(cat "$PALISADE_TEST_TMP/api-out")
expect_eq "the same key from another token: a run of its own (201, not existed)" "201 false" "$s3 $(jq -r .existed <<<"$b3")"
expect_eq "... two manual triggers, one per token" "op-red:deploy-42,operator:deploy-42" \
	"$(sql "select string_agg(request_id, ',' order by request_id) from trigger_jobs where job_id = 'red.a' and request_id like '%deploy-42'")"
expect_eq "the key with another body: 422" 422 \
	"$(api r1 "${TOK[operator]}" POST /jobs/red.a/trigger '{"reason":"other"}' -H 'Idempotency-Key: deploy-42')"

# A token created with an Idempotency-Key: its secret is never kept; a replay says so.
s1=$(api r1 "${TOK[admin]}" POST /tokens '{"name":"keyed","role":"viewer"}' -H 'Idempotency-Key: mk-keyed')
expect_eq "token create with a key: 201 with the secret" "201 1" "$s1 $(grep -cE 'pal_[0-9a-f]{16}_[0-9a-f]{64}' "$PALISADE_TEST_TMP/api-out")"
expect_eq "no row of api_requests holds a secret" 0 \
	"$(sql "select count(*) from api_requests r where r::text ~ 'pal_[0-9a-f]{16}_[0-9a-f]{64}'")"
expect_eq "its replay: 409 (the secret is shown once)" 409 \
	"$(api r2 "${TOK[admin]}" POST /tokens '{"name":"keyed","role":"viewer"}' -H 'Idempotency-Key: mk-keyed')"
expect_match "as a secret-shown-once problem" 'problem:secret-shown-once' "$(cat "$PALISADE_TEST_TMP/api-out")"

# The query is part of the keyed request: a dry run, then the real apply with the same key.
sed -i 's/red\.new/red.idem/' "$steal"
kapi() { curl -s -o "$PALISADE_TEST_TMP/api-out" -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOK[admin]}" \
	-H 'Idempotency-Key: apply-idem' -H 'Content-Type: application/yaml' --data-binary @"$steal" "http://${NODE_ADMIN[r1]}/api/v1/apply$1"; }
expect_eq "dry run with a key: 200" 200 "$(kapi '?dry_run=true&reason=x')"
expect_eq "its arguments in another order: replayed" 200 "$(kapi '?reason=x&dry_run=true')"
expect_eq "dry_run=false with the same key: 422 (another request), not the dry run replayed" 422 "$(kapi '?dry_run=false&reason=x')"
expect_eq "red.idem not stored by the dry run" 0 "$(sql "select count(*) from jobs where job_id = 'red.idem'")"

# A key left in progress by a request that died with its node: 409 while young, taken
# over by the next retry once older than the bound (60 s), and acted on once.
stuck() { sql "insert into api_requests (token_id, key, method, path, digest, created_at)
	select id, '$1', 'POST', '/api/v1/jobs/red.a/pause', encode(sha256('{\"reason\":\"r\"}'), 'hex'),
	clock_timestamp() - interval '$2 seconds' from api_tokens where name = 'admin'" >/dev/null; }
stuck stuck-young 5
stuck stuck-old 61
expect_eq "a key in progress for 5 s: 409" 409 "$(api r1 "${TOK[admin]}" POST /jobs/red.a/pause '{"reason":"r"}' -H 'Idempotency-Key: stuck-young')"
expect_eq "one in progress for 61 s: taken over, acted (200)" 200 "$(api r1 "${TOK[admin]}" POST /jobs/red.a/pause '{"reason":"r"}' -H 'Idempotency-Key: stuck-old')"
expect_eq "and its answer kept" 200 "$(sql "select status from api_requests where key = 'stuck-old'")"
expect_eq "its retry: 200" 200 "$(api r2 "${TOK[admin]}" POST /jobs/red.a/pause '{"reason":"r"}' -H 'Idempotency-Key: stuck-old' -D "$PALISADE_TEST_TMP/api-h")"
expect_match "replayed" 'Idempotent-Replayed: true' "$(cat "$PALISADE_TEST_TMP/api-h")"

# The write rate limit: 150 writes at once from one token, over one connection.
urls=(); for _ in $(seq 150); do urls+=("http://${NODE_ADMIN[r2]}/api/v1/jobs/red.a/pause"); done
hdrs=$PALISADE_TEST_TMP/api-burst-headers
codes=$(curl -s -D "$hdrs" -w '\n%{http_code}\n' -X POST -H "Authorization: Bearer ${TOK[op-red]}" \
	-H 'Content-Type: application/json' --data '{}' "${urls[@]}" | grep -E '^[0-9]{3}$' | sort | uniq -c |
	awk '{print $2 ":" $1}' | tr '\n' ' ')
# the 60 of the bucket and what refilled (20/s) while the burst ran are served
served=$(grep -oE '422:[0-9]+' <<<"$codes" | cut -d: -f2)
expect_match "a burst over the write limit: only 422 (no reason) and 429 answers, some 429" '^422:[0-9]+ 429:[0-9]+ $' "$codes"
check "at least the bucket's 60 served, not all 150 ($codes)" test "${served:-0}" -ge 60 -a "${served:-0}" -lt 150
expect_match "a 429 says when to retry" 'Retry-After: [0-9]+' "$(cat "$hdrs")"
expect_eq "reads are not limited" 200 "$(api r2 "${TOK[op-red]}" GET /jobs/red.a)"

# Revoke by name or id never revokes two: a token named as another's id.
vid=$(sql "select id from api_tokens where name = 'viewer' and revoked_at is null")
"$PAL" token create --name "$vid" --role viewer >/dev/null || fail "token create $vid"
check "revoking \"$vid\" (the viewer's id, the other's name): refused" bash -c '! "$1" token revoke "$2" 2>/dev/null' _ "$PAL" "$vid"
expect_eq "both still live" 2 "$(sql "select count(*) from api_tokens where (id = '$vid' or name = '$vid') and revoked_at is null")"
expect_exit "the name-alike revoked by its own id" 0 "$PAL" token revoke "$(sql "select id from api_tokens where name = '$vid'")"
expect_eq "the viewer still live" 1 "$(sql "select count(*) from api_tokens where id = '$vid' and revoked_at is null")"
expect_eq "a revoke by a name that is not id-shaped: the name only" 200 "$(api r1 "${TOK[admin]}" POST /tokens/keyed/revoke '{}')"
# The node admin token acts as "admin-token": no API token may take its name
# (their audit rows and request ids would be one actor's).
expect_exit "token create --name admin-token: refused" 65 "$PAL" token create --name admin-token --role admin
expect_match "... naming the node admin token" "is the node admin token's" "$OUT"
expect_eq "... and through the API: 422" 422 "$(api r1 "${TOK[admin]}" POST /tokens '{"name": "admin-token", "role": "viewer"}')"
expect_eq "no token of that name was made" 0 "$(sql "select count(*) from api_tokens where name = 'admin-token'")"

# An apply whose last step fails (mode: shadow, refused here by a CHECK the
# test adds to shadow_scopes) is rolled back by the API itself: nothing of
# it stored, no session left in its transaction, the API's connection kept
# (on the old code it was abandoned to the 503's ping and reopened, and the
# apply's state leaked: LeakSanitizer names it under ASan), the next apply
# answered.
printf '%s\n' 'jobs:' '  - {id: red.sh, tenant: red, mode: shadow, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}' >"$steal"
sql "ALTER TABLE shadow_scopes ADD CONSTRAINT it_no_red_sh CHECK (scope <> 'job:red.sh') NOT VALID"
expect_eq "the API's connection is open before" 200 "$(yapi "${TOK[admin]}" /plan/diff)"
# The node's client connections (autovacuum workers and connections the
# node opens meanwhile come and go: only a lost one counts).
conns() { sql "select string_agg(pid::text, ' ' order by pid) from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()"; }
lost() { # BEFORE AFTER: the pids of BEFORE missing from AFTER
	local p out=
	for p in $1; do [[ " $2 " == *" $p "* ]] || out+="$p "; done
	echo "${out% }"
}
before=$(conns)
code=$(yapi "${TOK[admin]}" /apply)
expect_match "the apply whose shadow step fails: refused ($code)" '^5' "$code"
expect_match "... with the database's reason" 'it_no_red_sh' "$(cat "$PALISADE_TEST_TMP/api-out")"
expect_eq "... red.sh not applied" 0 "$(sql "select count(*) from jobs where job_id = 'red.sh'")"
# of this test's database (the server is shared with the tests running
# beside it), and not one caught between two statements of its transaction:
# a session left in the apply's stays there
no_idle_in_tx() { [ "$(sql "select count(*) from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'")" = 0 ]; }
wait_until "... no session left idle in a transaction" 5 no_idle_in_tx
expect_eq "... the node kept its database connections (rolled back, not dropped): none lost of [$before]" "" "$(lost "$before" "$(conns)")"
sql "ALTER TABLE shadow_scopes DROP CONSTRAINT it_no_red_sh"
expect_eq "... and the API answers the next apply" 200 "$(yapi "${TOK[admin]}" /apply)"
expect_eq "red.sh applied, in shadow" "1 1" \
	"$(sql "select count(*) from jobs where job_id = 'red.sh'") $(sql "select count(*) from shadow_scopes where scope = 'job:red.sh'")"


# rollback: admin only; a tenant-scoped admin on its own tenant's job only.
RB='{"reason":"r","wait_ms":0,"job":'
expect_eq "rollback by viewer, operator, admin-red of blue.b: 403 403 403" "403 403 403" \
	"$(api r1 "${TOK[viewer]}" POST /rollback "$RB\"red.a\"}") $(api r1 "${TOK[operator]}" POST /rollback "$RB\"red.a\"}") $(api r1 "${TOK[admin-red]}" POST /rollback "$RB\"blue.b\"}")"
expect_eq "by admin-red of red.a: 200, audited as admin-red" "200 admin-red|admin" \
	"$(api r1 "${TOK[admin-red]}" POST /rollback "$RB\"red.a\"}") $(sql "select actor || '|' || role from audit_log where action = 'rollback'")"

# A write to another tenant's job or trigger: 403 naming the job or trigger, never its tenant
BT=$(sql "select id from triggers where job_id = 'blue.b' order by id limit 1")
named=()
for w in "POST /jobs/blue.b/pause" "POST /jobs/blue.b/trigger" "POST /jobs/blue.b/backfill" \
	"POST /jobs/blue.b/release" "POST /jobs/blue.b/cancel" "DELETE /jobs/blue.b" "POST /triggers/$BT/cancel" \
	"POST /shadow job" "POST /rollback job"; do
	read -r m p k <<<"$w"
	b='{"reason":"r"}'; [ -n "$k" ] && b="{\"reason\":\"r\",\"$k\":\"blue.b\"}"
	[ "$p" = /rollback ] && b="{\"reason\":\"r\",\"wait_ms\":0,\"$k\":\"blue.b\"}" # shadow takes no wait_ms
	s=$(api r1 "${TOK[admin-red]}" "$m" "$p" "$b")
	f=$PALISADE_TEST_TMP/api-out
	named+=("$s:$(grep -c "is another tenant's" "$f"):$(grep -c 'tenant blue' "$f")")
done
expect_eq "admin-red's 9 writes to blue.b and its trigger $BT: 403, another tenant's, tenant blue unnamed" \
	"$(printf '403:1:0 %.0s' 1 2 3 4 5 6 7 8 9)" "${named[*]} "
CO='{"reason":"r","at":"2099-01-01T00:00:00Z","job":'
expect_eq "cutover by viewer, operator, admin-red of blue.b: 403 403 403" "403 403 403" \
	"$(api r1 "${TOK[viewer]}" POST /cutover "$CO\"red.a\"}") $(api r1 "${TOK[operator]}" POST /cutover "$CO\"red.a\"}") $(api r1 "${TOK[admin-red]}" POST /cutover "$CO\"blue.b\"}")"
expect_eq "by admin-red of red.a (in shadow since its roll-back): 200, audited as admin-red" "200 admin-red|admin" \
	"$(api r1 "${TOK[admin-red]}" POST /cutover "$CO\"red.a\"}") $(sql "select actor || '|' || role from audit_log where action = 'cutover'")"

expect_eq "shadow by operator, admin-red of blue.b; shadow list by viewer-red: 403 403 403" "403 403 403" \
	"$(api r1 "${TOK[operator]}" POST /shadow '{"reason":"r","job":"red.a"}') $(api r1 "${TOK[admin-red]}" POST /shadow '{"reason":"r","job":"blue.b"}') $(api r1 "${TOK[viewer-red]}" GET /shadow)"
expect_eq "shadow by admin-red of tenant red: 200; the viewer's shadow list: 200" "200 200" \
	"$(api r1 "${TOK[admin-red]}" POST /shadow '{"reason":"r","tenant":"red"}') $(api r1 "${TOK[viewer]}" GET /shadow)"
# Tickets of two tenants (and one of no job), read a page at a time: a
# tenant-scoped viewer's pages hold its tenant's only, its cursor going on
# past the others'.
sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) SELECT j, 'roles', '{}', ARRAY['abandon']
	FROM unnest(ARRAY['red.a', 'blue.b', NULL, 'red.a', 'blue.b', 'blue.b', 'red.a']) j" >/dev/null
tickets_of() { # TOKEN: the job of every ticket of its pages of 2, newest first
	local cursor="" page jobs=""
	while :; do
		api r1 "$1" GET "/tickets?all=true&limit=2${cursor:+&cursor=$cursor}" >/dev/null
		jobs+=$(jq -r '[.items[] | .job_id // "-"] | join(" ")' <<<"$BODY_OUT")" "
		cursor=$(jq -r '.next_cursor // empty' <<<"$BODY_OUT")
		[ -n "$cursor" ] || break
	done
	echo $jobs
}
expect_eq "viewer-red's tickets: red.a's only, in pages of 2" "red.a red.a red.a" "$(tickets_of "${TOK[viewer-red]}")"
expect_eq "the unscoped viewer's: every ticket" "red.a blue.b blue.b red.a - blue.b red.a" "$(tickets_of "${TOK[viewer]}")"
expect_eq "a cursor the API did not give: 400" 400 "$(api r1 "${TOK[viewer]}" GET "/tickets?cursor=abc")"

# A shared calendar followed by jobs of two tenants, and a blue job a red
# one could name as an upstream: a tenant-scoped token learns nothing of
# blue's jobs from plan diff, a dry run or apply (their ids, instants,
# existence), and cannot make a red job wait for a blue one.
office() { printf 'calendars:\n  - {name: office, timezone: UTC, exclude: {windows: ["%s"]}}\n' "$1"; }
tjob() { printf '  - {id: %s, tenant: %s, schedule: {cron: "0 0 * * * ?", calendar: office}, target: {url: "http://127.0.0.1:9/x"}%s}\n' "$@"; }
{ office "01:00:00-02:00:00"; echo 'jobs:'; tjob red.cal red ''; tjob blue.secret blue ''; tjob blue.other blue ''; } >"$PALISADE_TEST_TMP/office.yaml"
expect_exit "apply office, red.cal, blue.secret, blue.other" 0 "$PAL" apply "$PALISADE_TEST_TMP/office.yaml"
office "03:00:00-04:00:00" >"$steal"
expect_eq "viewer-red's plan diff of office alone: 200" 200 "$(yapi "${TOK[viewer-red]}" '/plan/diff?count=2')"
expect_eq "... shows red.cal only, blue's two followers counted unnamed" "red.cal 2 0" \
	"$(jq -r '([.jobs[].job_id] | join(",")) + " " + (.hidden_followers | tostring)' "$PALISADE_TEST_TMP/api-out") $(grep -c blue "$PALISADE_TEST_TMP/api-out")"
printf '%s\n' "${TOK[viewer-red]}" >"$PALISADE_TEST_TMP/viewer-red.token"
rplan() { "$PAL" plan diff --server "http://${NODE_ADMIN[r1]}" --token-file "$PALISADE_TEST_TMP/viewer-red.token" "$@"; }
expect_eq "viewer-red's plan diff --server of it: exit 0, red.cal shown, blue's not" "0 1 0" \
	"$(rplan "$steal" >"$PALISADE_TEST_TMP/rplan.out" 2>"$PALISADE_TEST_TMP/rplan.err"; echo $?) $(grep -c 'red\.cal' "$PALISADE_TEST_TMP/rplan.out") $(grep -c blue "$PALISADE_TEST_TMP/rplan.out" "$PALISADE_TEST_TMP/rplan.err" | awk -F: '{n += $2} END {print n}')"
expect_match "... and says 2 other tenants' followers are not shown" '2 stored jobs of tenants this token does not see follow a calendar of the file; not shown' "$(cat "$PALISADE_TEST_TMP/rplan.err")"
expect_eq "the unlimited viewer's shows the three" "blue.other,blue.secret,red.cal 0" \
	"$(yapi "${TOK[viewer]}" /plan/diff >/dev/null; jq -r '([.jobs[].job_id] | sort | join(",")) + " " + (.hidden_followers | tostring)' "$PALISADE_TEST_TMP/api-out")"
expect_eq "admin-red's dry run of it: 200 without blue's jobs" "200 2 0" \
	"$(yapi "${TOK[admin-red]}" '/apply?dry_run=true') $(jq -r .hidden_followers "$PALISADE_TEST_TMP/api-out") $(grep -c blue "$PALISADE_TEST_TMP/api-out")"
expect_eq "admin-red's apply of it: 403, nothing stored, blue's job and tenant unnamed" "403 0 1" \
	"$(yapi "${TOK[admin-red]}" /apply) $(grep -c blue "$PALISADE_TEST_TMP/api-out") $(sql "select latest_version from jobs where job_id = 'blue.secret'")"
expect_match "... a job of another tenant names calendar office" '"detail": "a job of another tenant names calendar office' "$(cat "$PALISADE_TEST_TMP/api-out")"
# after: another tenant's job is an unknown job to a red token (same 422, same diagnostic)
upjob() { printf 'jobs:\n  - {id: red.dep, tenant: red, after: [{job: %s}], target: {url: "http://127.0.0.1:9/x"}}\n' "$1" >"$steal"; }
diag() { jq -r '.errors[0].message' "$PALISADE_TEST_TMP/api-out" | sed "s/$1/X/"; }
for tok in viewer-red admin-red; do
	for route in /plan/diff '/apply?dry_run=true' /apply; do
		[ "$tok" = viewer-red ] && [ "$route" != /plan/diff ] && continue
		upjob nosuch.job; s1=$(yapi "${TOK[$tok]}" "$route"); d1=$(diag nosuch.job)
		upjob blue.other; s2=$(yapi "${TOK[$tok]}" "$route"); d2=$(diag blue.other)
		expect_eq "$tok $route: after blue.other answered as after nosuch.job ($s1 $d1)" "422 $d1" "$s2 $d2"
	done
done
expect_eq "red.dep not stored" 0 "$(sql "select count(*) from jobs where job_id = 'red.dep'")"
expect_eq "the unlimited admin's plan diff of red.dep after blue.other: 200" 200 "$(yapi "${TOK[admin]}" /plan/diff)"
# A job id of another tenant in the body: a read answers as GET /jobs/{id} does (404), a write 403; neither names blue
printf 'jobs:\n  - {id: blue.other, tenant: red, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$steal"
expect_eq "viewer-red's plan diff, admin-red's dry run of blue.other as red: 404 404, tenant blue unnamed" "404 404 0" \
	"$(yapi "${TOK[viewer-red]}" /plan/diff) $(yapi "${TOK[admin-red]}" '/apply?dry_run=true') $(grep -c '"tenant blue\| of tenant blue' "$PALISADE_TEST_TMP/api-out")"
expect_eq "admin-red's apply of it: 403 forbidden-tenant, tenant blue unnamed" "403 1 0" \
	"$(yapi "${TOK[admin-red]}" /apply) $(grep -c 'problem:forbidden-tenant' "$PALISADE_TEST_TMP/api-out") $(grep -c 'tenant blue' "$PALISADE_TEST_TMP/api-out")"
expect_eq "viewer-red's plan diff --server of it: exit 3 (not found)" 3 "$(rplan "$steal" 2>"$PALISADE_TEST_TMP/rplan.err" >/dev/null; echo $?)"
expect_match "... saying there is no job blue.other, no tenant named" '^palisade plan diff: no job "blue\.other" \(HTTP 404\)$' "$(cat "$PALISADE_TEST_TMP/rplan.err")"

# Revocation: refused by the next request on both nodes.
expect_eq "operator works on r2 before the revocation" 200 "$(api r2 "${TOK[operator]}" GET /jobs)"
expect_exit "token revoke" 0 "$PAL" token revoke operator
expect_eq "the revoked token at once: 401 on r1" 401 "$(api r1 "${TOK[operator]}" GET /jobs)"
expect_eq "and 401 on r2" 401 "$(api r2 "${TOK[operator]}" POST /jobs/red.a/pause '{"reason":"x"}')"
expect_match "token list shows it revoked" 'operator +operator .* [0-9]{4}-' "$("$PAL" token list)"

stop_node r1
stop_node r2
echo "  took $((SECONDS - T0)) s"
finish
