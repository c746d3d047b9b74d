#!/usr/bin/env bash
# The admin endpoint of a node: writes need the bearer token, cross-site and
# rebound requests are refused, an API request without a token is answered
# before its body is read, an accepted drain is audited; /healthz fails
# while a thread is stuck, /readyz while PostgreSQL or ZooKeeper is out of
# reach.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "admin security and health: POST /drain without the token, from a form of another site or under a foreign Host is refused and the node keeps running; with the token it drains, audited with the client address; /healthz names a stuck thread; /readyz fails without PostgreSQL (at start, and when cut while running), and without ZooKeeper"

it_db admin
SHARDS=2 write_conf "$CLUSTER_CONF"
# the main loop hangs 3 s on SIGHUP (drill), a thread silent 1 s is stuck
PALISADE_STALL_LIMIT_MS=1000 PALISADE_FAULT_STALL_MAIN_MS=3000 start_node a1
A=${NODE_ADMIN[a1]}
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$A/readyz")" = 200 ]; }
wait_until "node ready" 20 ready
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

expect_eq "POST /drain without a token: 401" 401 "$(code -X POST "http://$A/drain")"
expect_eq "with a wrong token: 401" 401 "$(code -X POST -H 'Authorization: Bearer nope' "http://$A/drain")"
expect_eq "a cross-origin form post (with the token even): 403" 403 \
	"$(code -X POST -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" -H 'Origin: http://evil.example' \
		--data 'x=1' "http://$A/drain")"
expect_eq "a plain form post of the same origin: 415 (no simple request acts)" 415 \
	"$(code -X POST -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" --data 'x=1' "http://$A/drain")"
expect_eq "a foreign Host (DNS rebinding): 421" 421 \
	"$(code -X POST -H 'Host: evil.example' -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" "http://$A/drain")"
expect_eq "a foreign Host on a read: 421" 421 "$(code -H 'Host: rebound.example' "http://$A/status")"
expect_eq "reads stay open: /metrics 200" 200 "$(code "http://$A/metrics")"
# An API write without a token is answered from its head: the 4 MB body it
# announces (and never sends) is not waited for, let alone kept.
expect_eq "an API write without a token announcing a 4 MB body: 401 at once" 401 \
	"$(code --max-time 5 -X POST -H 'Content-Type: application/yaml' -H 'Content-Length: 4000000' \
		--data-binary '' "http://$A/api/v1/apply")"
expect_eq "the API's document needs no token: 200" 200 "$(code "http://$A/api/v1/openapi.json")"
# A body over the API's 4 MiB: 413 as a problem, as every API error is, with
# a Content-Length (answered from the head) and chunked (read to its end).
BIG_TOKEN=$("$PAL" token create --name big-body --role admin | tail -1)
head -c 5000000 /dev/zero | tr '\0' 'a' >"$NODE_DIR/big.yaml"
big() { curl -s -o /dev/null -w '%{http_code} %{content_type}' --max-time 20 -X POST -H "Authorization: Bearer $BIG_TOKEN" \
	-H 'Content-Type: application/yaml' "$@" --data-binary @"$NODE_DIR/big.yaml" "http://$A/api/v1/apply"; }
expect_eq "an API body over 4 MiB: 413 as application/problem+json" "413 application/problem+json" "$(big)"
expect_eq "the same body chunked: 413 as a problem too, not a dropped connection" "413 application/problem+json" \
	"$(big -H 'Transfer-Encoding: chunked')"
sleep 0.5
check "after all that the node still runs" node_alive a1
check "and is still ready" ready
expect_eq "no audit row yet" 0 "$(sql "select count(*) from audit_log where action = 'drain'")"
expect_match "refusals are logged with the client" '"event":"admin.refused".*"client":"127.0.0.1:' "$(cat "$NODE_DIR/a1.log")"

# A stuck main loop: /healthz 503 naming it, then healthy again.
healthz() { curl -s "http://$A/healthz"; }
kill -HUP "${NODE_PID[a1]}"
wait_until "/healthz fails while the main loop is stuck, naming it" 5 bash -c "curl -s http://$A/healthz | grep -q 'not healthy: main silent'"
wait_until "and recovers when it beats again" 10 bash -c "[ \"\$(curl -s http://$A/healthz)\" = ok ]"

# The drain with the token.
expect_eq "POST /drain with the token: 202" 202 \
	"$(code -X POST -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" "http://$A/drain")"
wait_until "the node drains and exits" 15 bash -c "! kill -0 ${NODE_PID[a1]} 2>/dev/null"
wait "${NODE_PID[a1]}"; rc=$?; unset "NODE_PID[a1]"
expect_eq "a drained node exits 0" 0 "$rc"
expect_match "the audit row names the action, the node and the client address" \
	"drain|node:a1|127.0.0.1:" \
	"$(sql "select action || '|' || scope || '|' || (details->>'client') from audit_log where action = 'drain'")"
expect_match "the log says it was draining" '"event":"node.draining"' "$(cat "$NODE_DIR/a1.log")"

# Readiness without PostgreSQL (a dead port) and without ZooKeeper.
dead=$(free_port)
start_node nopg --pg "host=127.0.0.1 port=$dead dbname=x user=x"
NP=${NODE_ADMIN[nopg]}
wait_until "a node without PostgreSQL answers /readyz 503" 10 bash -c "curl -s http://$NP/readyz | grep -q 'not ready: waiting for PostgreSQL'"
expect_eq "while /healthz says it is alive" 200 "$(code "http://$NP/healthz")"
start_node nozk --zk "127.0.0.1:$dead"
NZ=${NODE_ADMIN[nozk]}
wait_until "a node without ZooKeeper answers /readyz 503" 10 bash -c "curl -s http://$NZ/readyz | grep -q 'not ready: ZooKeeper unreachable'"
check "no raw ZooKeeper client line in its log (every line is JSON)" \
	bash -c "grep -v '^{' '$NODE_DIR/nozk.log' | (! grep -q .)"
stop_node nopg
stop_node nozk

# A running node that loses PostgreSQL: its path goes through a forwarder
# that the test kills (every connection reset) and starts again.
PGPORT_FWD=$(free_port)
fwd() { python3 tests/integration/slowlane.py --listen "$PGPORT_FWD" --to "127.0.0.1:$PALISADE_PG_PORT" >/dev/null 2>&1 & FWD=$!; }
fwd
wait_until "the forwarder listens" 5 bash -c "nc -z 127.0.0.1 $PGPORT_FWD"
start_node viafwd --pg "${PALISADE_PG/port=$PALISADE_PG_PORT/port=$PGPORT_FWD}"
NV=${NODE_ADMIN[viafwd]}
rz() { curl -s "http://$NV/readyz"; }
wait_until "the node behind the forwarder is ready" 20 bash -c "[ \"\$(curl -s http://$NV/readyz)\" = ready ]"
kill "$FWD"; wait "$FWD" 2>/dev/null
wait_until "PostgreSQL cut: /readyz 503 PostgreSQL unreachable" 15 bash -c "curl -s http://$NV/readyz | grep -q 'not ready: PostgreSQL unreachable'"
expect_eq "and /healthz stays 200 (nothing is stuck)" 200 "$(code "http://$NV/healthz")"
fwd
wait_until "PostgreSQL back: ready again" 20 bash -c "[ \"\$(curl -s http://$NV/readyz)\" = ready ]"
stop_node viafwd
kill "$FWD" 2>/dev/null; wait "$FWD" 2>/dev/null

# `palisade drain` carries the token ($PALISADE_ADMIN_TOKEN).
start_node a2
A2=${NODE_ADMIN[a2]}
wait_until "a2 ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://$A2/readyz)\" = 200 ]"
"$PAL" drain --node a2 --zk "$PALISADE_ZK" --config "$CLUSTER_CONF" >/dev/null
rc=$?
expect_eq "palisade drain sends the token (accepted)" 0 "$rc"
finish
