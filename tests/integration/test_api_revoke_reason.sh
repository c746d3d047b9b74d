#!/usr/bin/env bash
# A token revocation's reason is kept in its audit row: POST
# /api/v1/tokens/{id}/revoke's "reason" (OptionalReason) and `palisade token
# revoke --reason` alike; without one the row's reason is empty.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a reason given to a token revoke is kept in its audit row"
fresh_db it_api_revoke_reason
"$PAL" migrate >/dev/null
SHARDS=1 write_conf "$CLUSTER_CONF"
start_node r1
wait_until "node r1 ready" 20 node_ready r1
AD=$("$PAL" token create --name ad --role admin | tail -1)
"$PAL" token create --name ci --role operator >/dev/null
"$PAL" token create --name cd --role operator >/dev/null
"$PAL" token create --name qa --role viewer >/dev/null
O=$PALISADE_TEST_TMP/test_api_revoke_reason.answer
code=$(curl -s -o "$O" -w '%{http_code}' -X POST -H "Authorization: Bearer $AD" -H 'Content-Type: application/json' \
	--data '{"reason":"INC-42 leaked in a CI log"}' "http://${NODE_ADMIN[r1]}/api/v1/tokens/ci/revoke")
echo "    | $code $(cat "$O")"
expect_eq "revoke with a reason answers 200" 200 "$code"
row=$(sql "select actor || '|' || coalesce(reason, '<null>') from audit_log where action = 'token.revoke' and scope = 'token:ci'")
expect_eq "... its audit row keeps the reason given" "ad|INC-42 leaked in a CI log" "$row"
expect_exit "token revoke --reason (the CLI, on the database)" 0 "$PAL" token revoke cd --reason "team left"
expect_eq "... its audit row keeps it" "team left" \
	"$(sql "select coalesce(reason, '<null>') from audit_log where action = 'token.revoke' and scope = 'token:cd'")"
expect_exit "token revoke without a reason" 0 "$PAL" token revoke qa
expect_eq "... its audit row has none" "<null>" \
	"$(sql "select coalesce(reason, '<null>') from audit_log where action = 'token.revoke' and scope = 'token:qa'")"
stop_node r1
finish
