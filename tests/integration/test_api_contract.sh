#!/usr/bin/env bash
# The API's contract: every operation of docs/api/openapi.json called on a
# live node, each answer valid against the document (tests/integration/
# api_contract.py); a route of src/api/api.c the document does not describe,
# or the reverse, fails.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the HTTP API answers as docs/api/openapi.json says: every documented operation called, every answer's status, type and body valid against its schema, no undocumented route"
T0=$SECONDS

it_db
printf 'jobs:\n  - {id: c.one, schedule: {cron: "0 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}, labels: {team: core}}\n' \
	>"$PALISADE_TEST_TMP/api-contract.yaml"
expect_exit "apply a job" 0 "$PAL" apply "$PALISADE_TEST_TMP/api-contract.yaml"
sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) VALUES ('c.one', 'contract test', '{}', ARRAY['abandon'])"
expect_eq "palisade jobs shows the job's labels (JSON and table)" '{"team": "core"}|    labels: team=core' \
	"$("$PAL" jobs --output json c.one | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)[0]["labels"]))')|$("$PAL" jobs c.one | grep labels:)"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node k1
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[k1]}/readyz)\" = 200 ]"
if python3 tests/integration/api_contract.py "http://${NODE_ADMIN[k1]}" "$PALISADE_ADMIN_TOKEN" \
	docs/api/openapi.json src/api/api.c; then
	pass "every documented operation answers as documented"
else
	fail "the API and docs/api/openapi.json disagree (lines above)"
fi
wait_until "the node drained by POST /api/v1/drain exits" 15 bash -c "! kill -0 ${NODE_PID[k1]} 2>/dev/null"
expect_eq "the drain is audited with the token, role and client" "drain|admin-token|admin|node:k1" \
	"$(sql "select action || '|' || actor || '|' || role || '|' || scope from audit_log where action = 'drain' and client like '127.0.0.1:%'")"
stop_node k1
echo "  took $((SECONDS - T0)) s"
finish
