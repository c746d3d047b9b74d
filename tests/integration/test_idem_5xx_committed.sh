#!/usr/bin/env bash
# Idempotency-Key when the handler commits its action and then answers 5xx
# while its connection stays up (docs/api.md, "Idempotency"): a 5xx is not
# kept, but the key of an action that committed (an audit row names it) is
# not deleted either: it is left in progress, dated back past the take-over
# bound, so the next retry, on any node, takes it over at once and does not
# act again (409 request-committed-answer-lost, or the route run again as a
# take-over runs it).  A 5xx after nothing committed still deletes the key:
# the retry is served.  Node r1 answers 500 after every keyed write that
# succeeded, through its test-only fault PALISADE_FAULT_API_500_AFTER_ACTION;
# the retries go to r2.  No PALISADE_IDEM_TAKEOVER_S: the default 60 s bound.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "Idempotency-Key: a retried request does nothing twice, even when its first attempt committed and then answered 5xx"
fresh_db it_idem_5xx_committed
"$PAL" migrate >/dev/null
J='schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}'
printf 'jobs:\n  - {id: five.a, %s}\n  - {id: five.b, %s}\n' "$J" "$J" >"$NODE_DIR/jobs.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
TOK=$("$PAL" token create --name adm --role admin | tail -1)
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
PALISADE_FAULT_API_500_AFTER_ACTION=1 start_node r1
start_node r2
wait_until "node r1 (500 after its keyed writes) ready" 20 ready r1 || { finish; exit 1; }
wait_until "node r2 ready" 20 ready r2 || { finish; exit 1; }

# NODE KEY PATH BODY: a keyed POST; prints the status; the answer in $NODE_DIR/ans-KEY-NODE
call() {
	curl -s -o "$NODE_DIR/ans-$2-$1" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
		-H "Idempotency-Key: $2" --data "$4" "http://${NODE_ADMIN[$1]}/api/v1$3"
}
audits() { sql "select count(*) from audit_log where actor = 'adm'"; }
ptype() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("type"))' "$NODE_DIR/ans-$1-r2"; }
keyed() { sql "select count(*) from audit_log where details->'api_request'->>'key' = '$1'"; }

# 1. a pause committed, then 500: the retry does not pause again
S=$(call r1 p-1 /jobs/five.a/pause '{"reason":"r"}')
expect_eq "a pause on r1: committed (five.a paused, one audit row naming the key), answered 500" \
	"500 1 1" "$S $(sql "select count(*) from gates where scope = 'job:five.a' and paused") $(keyed p-1)"
expect_eq "... its key left in progress, not deleted" 1 \
	"$(sql "select count(*) from api_requests where key = 'p-1' and status is null")"
A0=$(audits)
S=$(call r2 p-1 /jobs/five.a/pause '{"reason":"r"}')
expect_eq "the retry on r2, at once: 409 request-committed-answer-lost, nothing done again" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0" "$S $(ptype p-1) $(audits)"
S=$(call r2 p-1 /jobs/five.a/pause '{"reason":"r"}')
expect_eq "a second retry: that answer replayed, nothing done" "409 $A0" "$S $(audits)"

# 2. a token created, then 500: no second token
S=$(call r1 t-1 /tokens '{"name":"five-tok","role":"viewer"}')
A0=$(audits)
S=$(call r2 t-1 /tokens '{"name":"five-tok","role":"viewer"}')
expect_eq "a token create answered 500 after its commit: 409 on the retry, one token" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0 1" \
	"$S $(ptype t-1) $(audits) $(sql "select count(*) from api_tokens where name = 'five-tok'")"

# 3. a resume (the gate of 1.) committed, then 500: no second resume
S=$(call r1 r-1 /jobs/five.a/resume '{"reason":"r"}')
A0=$(audits)
S=$(call r2 r-1 /jobs/five.a/resume '{"reason":"r"}')
expect_eq "a resume answered 500 after its commit: 409 on the retry, nothing done again" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0 1" "$S $(ptype r-1) $(audits) $(keyed r-1)"

# 4. a trigger and a backfill are run again on the retry: their request id
# names the first attempt's runs, so they make none
S=$(call r1 g-1 /jobs/five.b/trigger '{"reason":"r"}')
expect_eq "a trigger on r1: 500 after its run was made" "500 1" \
	"$S $(sql "select count(*) from triggers where job_id = 'five.b'")"
S=$(call r2 g-1 /jobs/five.b/trigger '{"reason":"r"}')
expect_eq "its retry: the first run answered (existed), one trigger" "200 true 1" \
	"$S $(python3 -c 'import json,sys; print(str(json.load(open(sys.argv[1]))["existed"]).lower())' "$NODE_DIR/ans-g-1-r2") $(sql "select count(*) from triggers where job_id = 'five.b'")"
B='{"reason":"r","from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:00:00Z"}'
sed -i 's/0 0 0 1 1 ? 2099/0 0 0 1 1 ?/' "$NODE_DIR/jobs.yaml"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
S=$(call r1 b-1 /jobs/five.a/backfill "$B")
N=$(sql "select count(*) from triggers where job_id = 'five.a' and request_id is not null")
expect_eq "a backfill on r1: 500 after its run was made" "500 1" "$S $N"
S=$(call r2 b-1 /jobs/five.a/backfill "$B")
expect_eq "its retry: answered, no second run" "200 1" \
	"$S $(sql "select count(*) from triggers where job_id = 'five.a' and request_id is not null")"

# 5. a keyed write that commits nothing (a plan diff writes no audit row),
# answered 500: its key is deleted, and the retry is served
S=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOK" \
	-H 'Content-Type: application/yaml' -H 'Idempotency-Key: d-1' --data-binary @"$NODE_DIR/jobs.yaml" \
	"http://${NODE_ADMIN[r1]}/api/v1/plan/diff")
expect_eq "a plan diff on r1: 500, its key deleted (nothing committed)" "500 0" \
	"$S $(sql "select count(*) from api_requests where key = 'd-1'")"
S=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $TOK" \
	-H 'Content-Type: application/yaml' -H 'Idempotency-Key: d-1' --data-binary @"$NODE_DIR/jobs.yaml" \
	"http://${NODE_ADMIN[r2]}/api/v1/plan/diff")
expect_eq "its retry on r2 is served" 200 "$S"
stop_node r1
stop_node r2
finish
