#!/usr/bin/env bash
# Notifications to a receiver that never answers do not hold up the other
# receivers' notifications, whatever its backlog: a node has at most 4
# deliveries to one receiver URL under way (of 32), claims never-tried rows
# before retries, and claims again as deliveries end (src/notify/deliver.c).
# So 64 notifications to a receiver that accepts the connection and never
# answers (more than a round's deliveries) hold 4 deliveries at a time for
# one timeout (5 s) each, and notifications to a receiver that answers,
# older or newer than that backlog, arrive at once.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a receiver that never answers delays no other receiver's notifications"
T_START=$(date +%s)

fresh_db it_notify_slow
"$PAL" migrate >/dev/null
HOOK_PORT=$(free_port)
HOLE_PORT=$(free_port)
HOOK_LOG=$NODE_DIR/hooks.jsonl
HOOK_PID= HOLE_PID=
trap 'stop_all_nodes; for p in $HOOK_PID $HOLE_PID; do kill "$p" 2>/dev/null; done' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_conf "$CLUSTER_CONF" "notify: {interval: 200ms, backoff_max: 60s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"

# the black hole: the kernel accepts the connections (backlog), nobody reads
python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $HOLE_PORT)); s.listen(128); time.sleep(300)" &
HOLE_PID=$!
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" &
HOOK_PID=$!
wait_until "the receivers listen" 10 eval "(exec 3<>/dev/tcp/127.0.0.1/$HOLE_PORT) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$HOOK_PORT) 2>/dev/null"

# 64 notifications to the black hole due first, one to the receiver after
# them (older than the black hole's retries will be, newer than its backlog)
row() { # WEBHOOK_ID URL AGE_S
	echo "('$1', 'slow.job', 'failed', '$2', '\${HOOK_SECRET}',
	  '{\"type\": \"palisade.job.failed\", \"data\": {\"job\": \"slow.job\", \"event\": \"failed\"}}',
	  clock_timestamp() - interval '$3 seconds')"
}
values=
for i in $(seq 1 64); do values+="$(row "msg_hole_$i" "http://127.0.0.1:$HOLE_PORT/hooks" $((100 - i))),"; done
values+="$(row msg_answered "http://127.0.0.1:$HOOK_PORT/hooks" 5)"
sql "insert into notifications (webhook_id, job_id, event, url, secret, payload, next_attempt_at) values $values" >/dev/null
expect_eq "65 notifications due" 65 "$(sql "select count(*) from notifications where next_attempt_at <= now()")"

start_node n1
t0=$(date +%s%N)
answered() { [ "$(sql "select count(*) from notifications where webhook_id = '$1' and delivered_at is not null")" = 1 ]; }
WAIT_STEP=0.2 wait_until "the answering receiver's notification is delivered while the black hole holds 64" 20 answered msg_answered
took=$((($(date +%s%N) - t0) / 1000000))
expect_eq "... on its first attempt" 1 "$(sql "select attempts from notifications where webhook_id = 'msg_answered'")"
expect_eq "... once, signed" "1 true" "$(jq -s '[.[] | select(.id == "msg_answered" and .status == 200)] | "\(length) \(all(.sig_ok))"' -r "$HOOK_LOG")"

# new events for the answering receiver while the black hole's backlog is
# still being tried: each arrives at once, none waits for the backlog
late=()
for k in 1 2 3; do
	sleep 1.5
	sql "insert into notifications (webhook_id, job_id, event, url, secret, payload, next_attempt_at)
	  values $(row "msg_late_$k" "http://127.0.0.1:$HOOK_PORT/hooks" 0)" >/dev/null
	t1=$(date +%s%N)
	WAIT_STEP=0.1 wait_until "a new event for the answering receiver ($k) is delivered" 20 answered "msg_late_$k"
	late+=("$((($(date +%s%N) - t1) / 1000000))")
	held=$(sql "select count(*) from notifications where webhook_id like 'msg_hole_%' and lease_owner is not null")
	expect_eq "... while the black hole holds at most 4 deliveries" t "$([ "$held" -le 4 ] && echo t || echo "f ($held)")"
done
expect_eq "the black hole's backlog was still being tried meanwhile" t \
	"$(sql "select count(*) filter (where attempts = 0) > 0 from notifications where webhook_id like 'msg_hole_%'")"
slowest=$(printf '%s\n' "${late[@]}" | sort -n | tail -1)
expect_eq "each new event arrived within 2 s of being queued" t "$([ "$slowest" -lt 2000 ] && echo t || echo "f ($slowest ms)")"
wait_until "the first 4 of the black hole fail at their timeout" 15 eval \
	'[ "$(sql "select count(*) from notifications where webhook_id like '\''msg_hole_%'\'' and last_error is not null")" -ge 4 ]'
# the retention pass (every 10 intervals, 2 s) reads the oldest pending
# event's age: the black hole's events, queued when the test began
oldest_ok() {
	awk -v v="$(metric n1 palisade_notify_oldest_pending_seconds)" \
		-v a="$(sql "select extract(epoch from now() - min(created_at)) from notifications where delivered_at is null")" \
		'BEGIN { exit !(v >= 5 && v <= a && v > a - 3) }'
}
wait_until "metrics: the oldest pending notification's age (the black hole's first event's, within a retention pass)" 10 oldest_ok
expect_eq "... and the pending ones are counted" t "$([ "$(metric n1 palisade_notify_pending)" -ge 60 ] && echo t)"
expect_eq "... none delivered" 0 "$(sql "select count(*) from notifications where webhook_id like 'msg_hole_%' and delivered_at is not null")"
echo "    figure: the answering receiver's first notification arrived $took ms after the node started; the new ones ${late[*]} ms after they were queued; took $(($(date +%s) - T_START)) s"
finish
