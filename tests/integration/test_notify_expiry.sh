#!/usr/bin/env bash
# An undelivered notification gets a last try at its expiry (its event +
# notify.retention) before the retention deletes it: a retry's backoff
# never pushes the next try past the expiry (src/store/notify.c), and the
# retention deletes only a row whose last try came at or after it.  Here
# retention 12 s and backoff_max 10 s: tries at ~0, 1, 3, 7 s, then at 12 s
# (not 15 s).  A receiver down for the first 9.5 s gets its event at that
# try; one that never answers has it expired after it, counted in
# palisade_notify_expired_total.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a receiver down for less than notify.retention loses nothing; an event expires only after a try at its expiry"

it_db
HOOK_PORT=$(free_port)
DEAD_PORT=$(free_port)
HOOK_LOG=$NODE_DIR/hooks.jsonl
HOOK_PID=
trap 'stop_all_nodes; [ -n "$HOOK_PID" ] && kill "$HOOK_PID" 2>/dev/null' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_exec_conf "$CLUSTER_CONF" "notify: {interval: 200ms, backoff_max: 10s, retention: 12s}"
start_node n1
wait_until "node up" 20 all_shards_led || { finish; exit 1; }
row() { # WEBHOOK_ID PORT
	echo "('$1', 'x.job', 'failed', 'http://127.0.0.1:$2/hooks', '\${HOOK_SECRET}',
	  '{\"type\": \"palisade.job.failed\", \"data\": {\"job\": \"x.job\", \"event\": \"failed\"}}')"
}
sql "insert into notifications (webhook_id, job_id, event, url, secret, payload) values
  $(row msg_late "$HOOK_PORT"), $(row msg_dead "$DEAD_PORT")" >/dev/null
t0=$(date +%s%N)
sleep 9.5
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" &
HOOK_PID=$!
fig=$(sql "select attempts, round(extract(epoch from next_attempt_at - created_at)) from notifications where webhook_id = 'msg_late'")
echo "    figure: receiver up after $((($(date +%s%N) - t0) / 1000000)) ms; the row: attempts, next try after its event (s): $fig"
expect_eq "the next try is due at the expiry (12 s), not after it" t \
	"$(sql "select next_attempt_at <= created_at + interval '12 seconds' from notifications where webhook_id = 'msg_late'")"
delivered() { [ "$(sql "select count(*) from notifications where webhook_id = 'msg_late' and delivered_at is not null")" = 1 ]; }
WAIT_STEP=0.2 wait_until "the event reached the receiver, down 9.5 s of a 12 s retention" 10 delivered
expect_eq "... at its try at the expiry" t \
	"$(sql "select delivered_at >= created_at + interval '12 seconds' from notifications where webhook_id = 'msg_late'")"
expect_eq "... signed, once" "1 true" "$(jq -s '[.[] | select(.id == "msg_late")] | "\(length) \(all(.sig_ok))"' -r "$HOOK_LOG")"
gone() { [ "$(sql "select count(*) from notifications where webhook_id = 'msg_dead'")" = 0 ]; }
wait_until "the event of the receiver that never answers expires" 10 gone
expect_eq "... after its try at the expiry (the node logged its 5th failed attempt, at 12 s)" true \
	"$(jq -rs '[.[] | select(.event == "notify.delivery_failed" and .webhook_id == "msg_dead")] | length >= 5' "$NODE_DIR/n1.log")"
expect_eq "... counted in palisade_notify_expired_total" 1 "$(metric n1 palisade_notify_expired_total)"
finish
