#!/usr/bin/env bash
# Notifications to a receiver that never answers do not hold up the other
# receivers' notifications: a node delivers the notifications it claimed in
# one round at once (src/notify/deliver.c), so twelve notifications to a
# receiver that accepts the connection and never answers cost the round one
# timeout (5 s), not one each, and a notification to a receiver that
# answers, claimed in the same round after them, arrives at once.
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
s.bind(('127.0.0.1', $HOLE_PORT)); s.listen(64); time.sleep(300)" &
HOLE_PID=$!
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" &
HOOK_PID=$!
wait_until "the receivers listen" 10 eval "(exec 3<>/dev/tcp/127.0.0.1/$HOLE_PORT) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$HOOK_PORT) 2>/dev/null"

# twelve notifications to the black hole due first, one to the receiver after
# them: one round claims all thirteen (up to 16), oldest first
row() { # WEBHOOK_ID URL AGE_S
	echo "('$1', 'slow.job', 'failed', '$2', '\${HOOK_SECRET}',
	  '{\"type\": \"palisade.job.failed\", \"data\": {\"job\": \"slow.job\", \"event\": \"failed\"}}',
	  clock_timestamp() - interval '$3 seconds')"
}
values=
for i in $(seq 1 12); do values+="$(row "msg_hole_$i" "http://127.0.0.1:$HOLE_PORT/hooks" $((30 - i))),"; done
values+="$(row msg_answered "http://127.0.0.1:$HOOK_PORT/hooks" 5)"
sql "insert into notifications (webhook_id, job_id, event, url, secret, payload, next_attempt_at) values $values" >/dev/null
expect_eq "thirteen notifications due" 13 "$(sql "select count(*) from notifications where next_attempt_at <= now()")"

start_node n1
t0=$(date +%s%N)
answered() { [ "$(sql "select count(*) from notifications where webhook_id = 'msg_answered' and delivered_at is not null")" = 1 ]; }
WAIT_STEP=0.2 wait_until "the answering receiver's notification is delivered while the black hole holds twelve" 20 answered
took=$((($(date +%s%N) - t0) / 1000000))
expect_eq "... in the same round as the twelve (delivered on the first attempt)" 1 \
	"$(sql "select attempts from notifications where webhook_id = 'msg_answered'")"
expect_eq "... once, signed" "1 true" "$(jq -s '[.[] | select(.id == "msg_answered" and .status == 200)] | "\(length) \(all(.sig_ok))"' -r "$HOOK_LOG")"
wait_until "the twelve fail at their timeout, the round's one timeout" 15 eval \
	'[ "$(sql "select count(*) from notifications where webhook_id like '\''msg_hole_%'\'' and last_error is not null and attempts = 1")" = 12 ]'
# a failed delivery's next try is its record time + 1 s (the first backoff)
expect_eq "the answer was recorded at least 3 s before the twelve's timeouts were" t \
	"$(sql "select (select delivered_at from notifications where webhook_id = 'msg_answered') + interval '3 seconds'
	  < (select min(next_attempt_at) - interval '1 second' from notifications where webhook_id like 'msg_hole_%')")"
expect_eq "... none delivered" 0 "$(sql "select count(*) from notifications where webhook_id like 'msg_hole_%' and delivered_at is not null")"
echo "    figure: the answering receiver's notification arrived $took ms after the node started; took $(($(date +%s) - T_START)) s"
finish
