#!/usr/bin/env bash
# The node's admin listener and the sink's two listeners stay up under slow
# and idle clients: probes of /healthz and /readyz are answered within 1 s
# while 64 and then 256 connections trickle their heads and 1,500 idle
# sockets are held (from 127.0.0.2.., so that the probes' own address is
# not the attacker's; the limits exempt no address: docs/operations.md,
# "Listener limits"); a trickled head is cut at its deadline; a client
# address, and all of them, hold at most their limits, the oldest waiting
# connection making room; request smuggling shapes are refused with 400
# and the connection closed.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "listeners: /healthz and /readyz answer >= 95 % of probes within 1 s under 64 and 256 trickling and 1,500 idle connections (node admin, sink, sink admin); a head is cut at its deadline; per-address and total limits make room by closing the oldest waiting connection; duplicated or conflicting Content-Length and Transfer-Encoding with Content-Length get 400 and a closed connection"
T0=$(date +%s.%N)

# 1,500 attacker sockets, the probes, and the same again on the server side
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)"
expect_eq "descriptors enough for 1,500 sockets a side" yes "$([ "$(ulimit -n)" -ge 4096 ] && echo yes)"
SIEGE="python3 tests/integration/siege.py"

fresh_db it_listener
"$PAL" migrate >/dev/null
SHARDS=2 write_conf "$CLUSTER_CONF" "admin: {head_timeout: 2s, body_timeout: 2s}"
start_node l1
NA=${NODE_ADMIN[l1]}
wait_until "node ready" 20 bash -c "[ \"\$(curl -s http://$NA/readyz)\" = ready ]"
start_sink --noop --head-timeout-ms 2000 --body-timeout-ms 2000 --max-connections-per-address 300 || { fail "sink start"; finish; exit 1; }

# ---- head and body deadlines: a header line or a body byte a second, cut at 2 s
heads=()
for t in "$NA" "$SINK_ADDR" "$SINK_ADMIN"; do
	$SIEGE head --target "$t" >"$NODE_DIR/head.$t" &
	heads+=($!)
done
$SIEGE head --body --target "$NA" --path /drain >"$NODE_DIR/body.node" &
heads+=($!)
$SIEGE head --body --target "$SINK_ADDR" --path /effects/k >"$NODE_DIR/body.sink" &
heads+=($!)
wait "${heads[@]}"
within() { awk -v s="$1" 'BEGIN { exit !(s != "never" && s >= 1.8 && s <= 3.5) }'; }
for t in "$NA" "$SINK_ADDR" "$SINK_ADMIN"; do
	s=$(sed -n 's/^closed_after_s=//p' "$NODE_DIR/head.$t")
	check "$t: a trickled head is cut at its 2 s deadline (closed after ${s}s)" within "$s"
done
for t in node sink; do
	s=$(sed -n 's/^closed_after_s=//p' "$NODE_DIR/body.$t")
	check "$t: a trickled body is cut 2 s after its head (closed after ${s}s)" within "$s"
done

# ---- the limits make room: the oldest waiting connection goes -----------------
# node admin: 32 per address, 256 in all (the defaults); its four threads
# accept at once, so "the oldest" is the first N give or take 3 places
expect_eq "node admin: 40 idle from one address, the 8 oldest closed" "closed=8 oldest=yes" \
	"$($SIEGE crowd --target "$NA" --count 40 --addrs 1 --slack 3)"
expect_eq "node admin: 300 idle from 10 addresses (30 each), the 44 oldest closed" \
	"closed=44 oldest=yes" "$($SIEGE crowd --target "$NA" --count 300 --addrs 10 --slack 3)"
# The node admin's limit is the listener's, not a share of each of its
# threads: with three of its four threads held by console pages that wait
# on a database lock, the fourth accepts the whole crowd, and the guard
# (not the HTTP library's per-thread share, 80) decides who goes: the 47
# oldest waiting (300 + 3 pages against 256), the pages kept.
"$PSQL" "$PALISADE_PG" -XAtq -c "BEGIN; LOCK TABLE gates IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT" >/dev/null 2>&1 &
LOCK_PID=$!
wait_until "a lock on gates held" 5 has "select count(*) from pg_locks l join pg_class c on c.oid = l.relation where l.database = (select oid from pg_database where datname = current_database()) and c.relname = 'gates' and l.mode = 'AccessExclusiveLock' and l.granted"
pages=()
for i in 1 2 3; do
	curl -s -o /dev/null -w '%{http_code}\n' "http://$NA/console" >"$NODE_DIR/page.$i" &
	pages+=($!)
	sleep 0.3 # each page is accepted, and waits, before the next connects
done
expect_eq "node admin, three threads held: 300 idle from 10 addresses, the 47 oldest closed" \
	"closed=47 oldest=yes" "$($SIEGE crowd --target "$NA" --count 300 --addrs 10 --slack 3)"
# the lock held until the crowd is counted, then ended
sql "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like '%LOCK TABLE gates%' and pid <> pg_backend_pid()" >/dev/null
wait "${pages[@]}" "$LOCK_PID"
expect_eq "... and the three pages answered once the lock went" "200 200 200" \
	"$(cat "$NODE_DIR"/page.{1,2,3} | xargs)"
# sink: 300 per address (set here; by default all), 1000 in all; sink admin: 16 and 64
expect_eq "sink: 320 idle from one address, the 20 oldest closed" "closed=20 oldest=yes" \
	"$($SIEGE crowd --target "$SINK_ADDR" --count 320 --addrs 1)"
expect_eq "sink: 1,100 idle from 4 addresses, the 100 oldest closed" "closed=100 oldest=yes" \
	"$($SIEGE crowd --target "$SINK_ADDR" --count 1100 --addrs 4)"
expect_eq "sink admin: 20 idle from one address, the 4 oldest closed" "closed=4 oldest=yes" \
	"$($SIEGE crowd --target "$SINK_ADMIN" --count 20 --addrs 1)"

# ---- smuggling shapes: 400 and the connection closed ---------------------------
smuggle() { # smuggle NAME TARGET PATH
	local out shape
	out=$($SIEGE smuggle --target "$2" --path "$3")
	for shape in cl_conflict cl_duplicate te_and_cl cl_list; do
		expect_match "$1: $shape refused with 400, connection closed" \
			"shape=$shape status=400 closed=yes" "$out"
	done
}
smuggle "node admin POST /drain" "$NA" /drain
smuggle "sink POST /effects/k" "$SINK_ADDR" /effects/k
smuggle "sink admin POST /admin/faults" "$SINK_ADMIN" /admin/faults

# ---- the siege: probes every 200 ms, each phase 3 s -----------------------------
# The three listeners are besieged at once (each by its own attacker, from
# the same 127.0.0.2.. addresses): the probes of each then wait beside the
# load on the other two, the sink's two listeners in one process.
siege_start() { # siege_start NAME TARGET PROBE-PATHS...: the attack, in the background
	local name=$1 target=$2 p; shift 2
	local probes=()
	for p in "$@"; do probes+=(--probe "$p"); done
	$SIEGE attack --target "$target" "${probes[@]}" \
		--phase trickle:64:1:3 --phase trickle:256:8:3 --phase idle:1500:10:3 \
		>"$NODE_DIR/siege.${name// /_}" &
	SIEGES+=($!)
}
siege_check() { # siege_check NAME: its phases and probes, once it ended
	local name=$1 out sent ok
	out=$(cat "$NODE_DIR/siege.${name// /_}")
	echo "$out" | sed "s/^/    $name: /"
	sent=$(echo "$out" | sed -n 's/.* probes=\([0-9]*\).*/\1/p' | paste -sd+ | bc)
	ok=$(echo "$out" | sed -n 's/.* answered=\([0-9]*\).*/\1/p' | paste -sd+ | bc)
	check "$name: at least 95 % of $sent probes answered 2xx within 1 s ($ok)" \
		awk -v s="$sent" -v o="$ok" 'BEGIN { exit !(s >= 36 && o * 100 >= s * 95) }'
	expect_eq "$name: all three phases ran" 3 "$(echo "$out" | grep -c '^phase=')"
}
SIEGES=()
siege_start "node admin" "$NA" /healthz /readyz
siege_start "sink" "$SINK_ADDR" /healthz
siege_start "sink admin" "$SINK_ADMIN" /healthz
wait "${SIEGES[@]}"
siege_check "node admin"
check "the node is still running" node_alive l1
siege_check "sink"
siege_check "sink admin"
check "the sink is still running" kill -0 "$SINK_PID"
expect_eq "and answers afterwards" '{"ok":true}' "$(curl -s "http://$SINK_ADDR/healthz")"

# ---- what the limits did, in the metrics -----------------------------------------
closed() { # closed METRICS-URL LISTENER REASON: the counter's value (0 when absent)
	curl -s "$1" | awk -v k="palisade_http_connections_closed_total{listener=\"$2\",reason=\"$3\"}" \
		'$1 == k { v = $2 } END { print v + 0 }'
}
for r in head_timeout body_timeout evicted; do
	check "node /metrics counts connections closed for $r" \
		[ "$(closed "http://$NA/metrics" admin "$r")" -gt 0 ]
	check "sink /metrics counts connections closed for $r" \
		[ "$(closed "http://$SINK_ADMIN/metrics" sink "$r")" -gt 0 ]
done
# three of the four shapes reach the guard; libmicrohttpd answers the list itself
expect_eq "node /metrics: 3 requests with an ambiguous length" 3 \
	"$(closed "http://$NA/metrics" admin ambiguous_length)"
expect_eq "sink /metrics: 3 requests with an ambiguous length" 3 \
	"$(closed "http://$SINK_ADMIN/metrics" sink ambiguous_length)"

echo "  took $(printf '%.1f' "$(echo "$(date +%s.%N) - $T0" | bc)") s"
finish
