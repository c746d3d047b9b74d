#!/usr/bin/env bash
# A query argument given twice is refused (400 bad-parameter) on every
# route: the handlers read one occurrence, the Idempotency-Key digest covers
# the sorted arguments, so `?dry_run=true&dry_run=false` and
# `?dry_run=false&dry_run=true` would share a digest while meaning a dry run
# and a real apply (the second answered with the first's replay, nothing
# stored).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a repeated query argument is refused, not half-read: one Idempotency-Key digest never stands for two readings of a request"
fresh_db it_api_repeated_arg
"$PAL" migrate >/dev/null
F=$NODE_DIR/e.yaml
printf 'jobs:\n  - {id: e.two, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node r1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1
TOK=$("$PAL" token create --name e-admin --role admin | tail -1)
O=$NODE_DIR/answer
apply() { curl -s -o "$O" -D "$O.h" -w '%{http_code}' -H "Authorization: Bearer $TOK" -H 'Content-Type: application/yaml' \
	-H "Idempotency-Key: $1" --data-binary @"$F" "http://${NODE_ADMIN[r1]}/api/v1/apply?reason=x&$2"; }
ptype() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d.get("type"), d.get("detail"))' "$O"; }

expect_eq "an apply with dry_run given twice is refused (400), not read as its first value" 400 "$(apply k1 'dry_run=true&dry_run=false')"
expect_eq "... as bad-parameter, naming the argument" \
	"urn:palisade:problem:bad-parameter argument dry_run given twice (give each argument once)" "$(ptype)"
expect_match "... as problem+json" '^[Cc]ontent-[Tt]ype: application/problem\+json' "$(cat "$O.h")"
expect_eq "the same key with the arguments the other way round: refused too" 400 "$(apply k1 'dry_run=false&dry_run=true')"
expect_eq "... not answered with a replay" 0 "$(grep -ci '^Idempotent-Replayed: true' "$O.h")"
expect_eq "nothing stored" 0 "$(sql "select count(*) from jobs where job_id = 'e.two'")"
expect_eq "the same key with dry_run given once: the real apply" 200 "$(apply k1 'dry_run=false')"
expect_eq "... not a replay" 0 "$(grep -ci '^Idempotent-Replayed: true' "$O.h")"
expect_eq "... stored" 1 "$(sql "select count(*) from jobs where job_id = 'e.two'")"
get() { curl -s -o "$O" -w '%{http_code}' -H "Authorization: Bearer $TOK" "http://${NODE_ADMIN[r1]}/api/v1$1"; }
expect_eq "a read with limit given twice is refused (400)" 400 "$(get '/jobs?limit=1&limit=1')"
expect_eq "... with limit given once it is read" 200 "$(get '/jobs?limit=1')"
expect_eq "an argument given twice with an empty value is refused too" 400 "$(get '/jobs?tenant=&tenant=')"
expect_eq "a token-less request is 401 first" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[r1]}/api/v1/jobs?limit=1&limit=2")"
stop_node r1
finish
