#!/usr/bin/env bash
# The systemd notify protocol as a service manager sees it: a datagram
# socket of the test's own in NOTIFY_SOCKET, the watchdog asked for with
# WATCHDOG_USEC.  READY=1 once the node runs, WATCHDOG=1 while it is
# healthy (none while its main loop is stuck), RELOADING=1 then READY=1
# around SIGHUP, STOPPING=1 when it drains.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "sd_notify: READY=1 after start, WATCHDOG=1 pings only while healthy, RELOADING=1 ... READY=1 around a reload, STOPPING=1 at drain"

it_db notify
SHARDS=2 write_conf "$CLUSTER_CONF"
SOCK=$NODE_DIR/notify.sock
MSGS=$NODE_DIR/notify.log
: >"$MSGS"
# A service manager's notify socket at $SOCK: one line per datagram in
# $MSGS, "<ms since start> <fields joined by |>", until STOPPING=1.
listen_notify() {
	: >"$MSGS"; rm -f "$SOCK"
	python3 - "$SOCK" "$MSGS" <<'PY' &
import socket, sys, time
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
t0 = time.monotonic()
with open(out, "a", buffering=1) as f:
    while True:
        msg = s.recv(4096).decode()
        f.write("%d %s\n" % ((time.monotonic() - t0) * 1000, msg.strip().replace("\n", "|")))
        if "STOPPING=1" in msg:
            break
PY
	LISTENER=$!
}
listen_notify
wait_until "the test's notify socket is bound" 5 test -S "$SOCK"
# watchdog of 400 ms: pings every 200 ms; the drill stalls the main loop 2 s on SIGHUP
NOTIFY_SOCKET=$SOCK WATCHDOG_USEC=400000 PALISADE_STALL_LIMIT_MS=1000 start_node s1
wait_until "READY=1 arrives" 20 grep -q 'READY=1' "$MSGS"
first_ready=$(grep -n 'READY=1' "$MSGS" | head -1 | cut -d: -f1)
check "no WATCHDOG=1 before READY=1" bash -c "head -n $((first_ready - 1)) '$MSGS' | (! grep -q WATCHDOG=1)"
wait_until "WATCHDOG=1 pings follow" 5 bash -c "[ \$(grep -c 'WATCHDOG=1' '$MSGS') -ge 3 ]"
expect_eq "/readyz agrees with READY=1" 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[s1]}/readyz")"

kill -HUP "${NODE_PID[s1]}"
wait_until "RELOADING=1 on SIGHUP" 5 grep -q 'RELOADING=1' "$MSGS"
check "RELOADING=1 carries MONOTONIC_USEC" grep -q 'RELOADING=1.*MONOTONIC_USEC=[0-9]' "$MSGS"
reloading=$(grep -n 'RELOADING=1' "$MSGS" | head -1 | cut -d: -f1)
wait_until "READY=1 again after the reload" 5 bash -c "tail -n +$((reloading + 1)) '$MSGS' | grep -q 'READY=1'"
expect_match "the reload result is in STATUS" 'READY=1.*STATUS=ready, configuration reloaded' "$(cat "$MSGS")"
stop_node s1
wait_until "STOPPING=1 at drain" 10 grep -q 'STOPPING=1' "$MSGS"
stopping=$(grep -n 'STOPPING=1' "$MSGS" | head -1 | cut -d: -f1)
check "STOPPING=1 comes after the READY=1 of the reload" [ "$stopping" -gt "$reloading" ]
expect_eq "the node drained (exit 0)" 0 "${NODE_EXIT[s1]}"
wait "$LISTENER" 2>/dev/null

# A stuck main loop sends no WATCHDOG=1 (systemd would kill and restart it).
listen_notify
wait_until "the socket is bound again" 5 test -S "$SOCK"
NOTIFY_SOCKET=$SOCK WATCHDOG_USEC=400000 PALISADE_STALL_LIMIT_MS=1000 PALISADE_FAULT_STALL_MAIN_MS=4000 start_node s2
wait_until "s2 READY=1" 20 grep -q 'READY=1' "$MSGS"
wait_until "s2 pings" 5 bash -c "[ \$(grep -c 'WATCHDOG=1' '$MSGS') -ge 2 ]"
kill -HUP "${NODE_PID[s2]}"   # the drill: the main loop hangs 4 s
wait_until "the stall begins" 5 grep -q '"event":"node.fault_stall"' "$NODE_DIR/s2.log"
sleep 1
before=$(grep -c 'WATCHDOG=1' "$MSGS")
sleep 1
expect_eq "no WATCHDOG=1 while the main loop is stuck" "$before" "$(grep -c 'WATCHDOG=1' "$MSGS")"
wait_until "pings resume once it beats again" 10 bash -c "[ \$(grep -c 'WATCHDOG=1' '$MSGS') -gt $before ]"
stop_node s2
wait "$LISTENER" 2>/dev/null
finish
