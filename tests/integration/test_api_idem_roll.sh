#!/usr/bin/env bash
# A keyed write that a 0.3.0 node accepted (with a field this release does
# not accept: 0.3.0 dropped such names) and answered, retried with the same
# Idempotency-Key on a node of this release during the roll: the key's
# stored answer is replayed (the request was done), not refused as "nothing
# was done".  A keyed request with an unknown name and no earlier attempt is
# still refused, and leaves no record: its corrected retry with the same key
# acts.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "an Idempotency-Key retry of a request a 0.3.0 node did is replayed, not refused as not done"
db_from_030 it_api_idem_roll || { finish; exit 1; }
F=$PALISADE_TEST_TMP/test_api_idem_roll.j.yaml
printf 'jobs:\n  - {id: j.live, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
expect_exit "apply (0.3.0 CLI)" 0 "$OLD_PAL" apply "$F"
SHARDS=1 write_conf "$CLUSTER_CONF"
PAL=$OLD_PAL start_node o1
start_node n1
wait_until "o1 ready" 20 node_ready o1
wait_until "n1 ready" 20 node_ready n1
OP=$("$PAL" token create --name op --role operator | tail -1)
O=$PALISADE_TEST_TMP/test_api_idem_roll.answer
post() { curl -s -o "$O" -w '%{http_code}' -X POST -H "Authorization: Bearer $OP" -H "Idempotency-Key: ${K:-K-1}" -H 'Content-Type: application/json' --data "$2" "http://${NODE_ADMIN[$1]}/api/v1/jobs/j.live/trigger"; }
b='{"reason":"re-run","requestid":"INC-1"}'
expect_eq "0.3.0 node o1 runs the trigger (201)" 201 "$(post o1 "$b")"
echo "    | o1: $(cat "$O")"
expect_eq "... one manual run" 1 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"
code=$(post n1 "$b")
echo "    | n1: $code $(cat "$O")"
expect_eq "the client's retry with the same key on n1 (this release) replays the stored answer (201)" 201 "$code"
expect_eq "... and does not say nothing was done" 0 "$(grep -c 'nothing was done' "$O")"
expect_eq "... still one manual run" 1 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"
# a new key with the unknown field: refused on n1, nothing recorded under it
code=$(K=K-2 post n1 "$b")
expect_eq "a new key with an unknown field on n1 is refused (422)" 422 "$code"
expect_eq "... nothing was run" 1 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"
expect_eq "... and the key has no record" 0 "$(sql "select count(*) from api_requests where key = 'K-2'")"
code=$(K=K-2 post n1 '{"reason":"re-run","request_id":"INC-1"}')
expect_eq "its corrected retry with the same key acts (201)" 201 "$code"
expect_eq "... a second manual run" 2 "$(sql "select count(*) from triggers where job_id='j.live' and source='manual'")"
stop_node n1
stop_node o1
finish
