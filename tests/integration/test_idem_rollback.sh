#!/usr/bin/env bash
# Idempotency-Key over a long request (docs/api.md, "Idempotency"): a
# POST /rollback that waits for a call in flight is still being served
# when its record passes the take-over bound; a retry on another node
# answers 409 request-in-progress (it acted again before: two roll-back
# steps, two audit rows), then the kept answer once the first is done.  A
# request whose node was killed mid-request is taken over after the bound;
# its step was committed but its hand-back (after the wait) was not, so the
# retry rolls back again: a second step, and the hand-back.
# The bound is PALISADE_IDEM_TAKEOVER_S (2 s here; IT_IDEM_TAKEOVER_S=60
# runs it at the real bound, about 2.5 minutes).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "Idempotency-Key: nothing is done twice - a request still being served is never taken over, however long it takes; one whose node died is, after the bound"
T_START=$(date +%s)
BOUND=${IT_IDEM_TAKEOVER_S:-2}
export PALISADE_IDEM_TAKEOVER_S=$BOUND

fresh_db it_idem_rollback
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2
write_conf "$CLUSTER_CONF"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - {id: idem.a, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/idem.a", timeout: 5m}, retry: {max_attempts: 1}}
Y
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
TOKEN=$("$PAL" token create --name adm --role admin | tail -1)
start_node r1
start_node r2
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node r1 ready" 20 ready r1
wait_until "node r2 ready" 20 ready r2
sink_faults '{"delay_ms": 600000}'
wait_until "a call of idem.a in flight (the roll-back waits for it)" 20 \
	has "select count(*) from triggers where job_id = 'idem.a' and state = 'running'"

# the roll-back waits for the call up to WAIT_MS, past the bound
WAIT_MS=$(( BOUND * 1000 + 4000 > 60000 ? 60000 : BOUND * 1000 + 4000 ))
BODY="{\"job\":\"idem.a\",\"reason\":\"back\",\"wait_ms\":$WAIT_MS}"
# NODE KEY: POST /rollback with the key; prints the status, the answer and its headers in $NODE_DIR
call() {
	curl -s -o "$NODE_DIR/ans-$1-$2" -D "$NODE_DIR/hdr-$1-$2" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
		-H "Idempotency-Key: $2" --data "$BODY" "http://${NODE_ADMIN[$1]}/api/v1/rollback"
}
recorded() { has "select count(*) from api_requests where key = '$1'"; }
past_bound() { [ "$(sql "select clock_timestamp() > created_at + interval '$BOUND s' + interval '0.3 s' from api_requests where key = '$1'")" = t ]; }
steps() { sql "select count(*) from cutover_steps"; }
audits() { sql "select count(*) from audit_log where action = 'rollback'"; }

# 1. served while the retry comes: 409, then the kept answer
# a lock on the shadow tables makes the first request wait 2 s more first
sql "begin; lock table shadow_scopes in access exclusive mode; select pg_sleep(2); commit" >/dev/null &
LOCKER=$!
sleep 0.3
( call r1 rb-1 >"$NODE_DIR/first.status" ) &
FIRST=$!
wait_until "the first request recorded" 10 recorded rb-1
wait_until "... and older than the take-over bound ($BOUND s)" $((BOUND + 5)) past_bound rb-1
check "... still being served" kill -0 "$FIRST"
S=$(call r2 rb-1)
expect_eq "a retry on r2 meanwhile: 409 request-in-progress, nothing done again (the first's step only)" "409 1 1 1" \
	"$S $(grep -c request-in-progress "$NODE_DIR/ans-r2-rb-1") $(steps) $(audits)"
wait "$FIRST"; wait "$LOCKER"
expect_eq "the first request: 200" 200 "$(cat "$NODE_DIR/first.status")"
S=$(call r2 rb-1)
expect_eq "the retry after it: 200 replayed, the same answer, one step, one audit row" "200 1 same 1 1" \
	"$S $(grep -ci '^Idempotent-Replayed: true' "$NODE_DIR/hdr-r2-rb-1") $(cmp -s "$NODE_DIR/ans-r1-rb-1" "$NODE_DIR/ans-r2-rb-1" && echo same || echo differ) $(steps) $(audits)"

# 2. a node killed mid-request: its session ends, the retry takes over after the bound
( call r1 rb-2 >/dev/null ) &
SECOND=$!
two_steps() { [ "$(steps)" = 2 ]; }
wait_until "the second request recorded and acting (its step taken)" 10 two_steps
kill9_node r1
wait "$SECOND" 2>/dev/null
expect_eq "... r1 killed while it waits: the record still in progress" "1" \
	"$(sql "select count(*) from api_requests where key = 'rb-2' and status is null")"
wait_until "... its record older than the take-over bound" $((BOUND + 5)) past_bound rb-2
S=$(call r2 rb-2)
expect_eq "the retry on r2 takes it over and acts (a step again, then the hand-back the first did not reach)" \
	"200 3 3" "$S $(steps) $(audits)"

sink_faults '{"delay_ms": 0}'
stop_node r2
echo "  took $(( $(date +%s) - T_START )) s"
finish
