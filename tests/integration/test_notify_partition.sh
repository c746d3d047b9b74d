#!/usr/bin/env bash
# `recovered` is sent once every partition that failed has succeeded since
# (notify_parts, sql/functions/palisade_notify_result.sql): a partitioned
# job whose partition 1 fails at every instant while partition 0 succeeds
# tells its receiver `failed` and never `recovered`; once partition 1
# succeeds too, one `recovered` follows.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - recovered is not sent while a partition that failed still fails"

it_db
HOOK_PORT=$(free_port)
SVC_PORT=$(free_port)
HOOK_LOG=$NODE_DIR/hooks.jsonl
HOOK_PID= SVC_PID=
FIXED=$NODE_DIR/fixed
trap 'stop_all_nodes; for p in $HOOK_PID $SVC_PID; do kill "$p" 2>/dev/null; done' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
LOOKAHEAD=2s MISFIRE=10s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 2s}"
python3 tests/integration/webhook_receiver.py --port "$HOOK_PORT" --log "$HOOK_LOG" &
HOOK_PID=$!
# the service: partition 0 is applied (200), partition 1 always breaks (500)
python3 -c "
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def do_POST(self):
        b = self.rfile.read(int(self.headers.get('Content-Length', '0')))
        self.send_response(200 if b'\"p\": 0' in b or os.path.exists('$FIXED') else 500)
        self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
ThreadingHTTPServer.request_queue_size = 64
ThreadingHTTPServer(('127.0.0.1', $SVC_PORT), H).serve_forever()" &
SVC_PID=$!
# up before the first instant: a call a loaded box makes before the
# service listens fails partition 0 too, and sends a failed of its own
svc_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"p": 0}' "http://127.0.0.1:$SVC_PORT/apply")" = 200 ]; }
wait_until "the service answers" 20 svc_up
END=$(date -u -d '+16 seconds' +%Y-%m-%dT%H:%M:%SZ)
apply_jobs apply <<YAML
jobs:
  - id: split
    schedule: {cron: "*/2 * * * * ?", end: $END}
    partitions: 2
    retry: {max_attempts: 1}
    target: {url: "http://127.0.0.1:$SVC_PORT/apply", body: '{"p": {partition}}', timeout: 2s}
    notify: [{on: [failed, recovered], url: "http://127.0.0.1:$HOOK_PORT/hooks", secret: "\${HOOK_SECRET}"}]
YAML
lead_shards 20 n1 || { finish; exit 1; }
# every instant up to END planned (the watermarks past it: a loaded
# planner may not have planned the last ones yet when the first have run)
# and each one ended
ended() { planned_past "$END" &&
	[ "$(sql "select count(*) from trigger_jobs where job_id = 'split' and state not in ('failed', 'succeeded')")" = 0 ] &&
	[ "$(sql "select count(*) from trigger_jobs where job_id = 'split'")" -ge 6 ]; }
wait_until "the job's instants have run (its schedule's end)" 40 ended
wait_until "every notification delivered" 20 eval '[ "$(sql "select count(*) from notifications where delivered_at is null")" = 0 ]'
p1=$(sql "select string_agg(state, ',' order by scheduled_at) from trigger_jobs where job_id = 'split' and partition = 1")
p0=$(sql "select string_agg(state, ',' order by scheduled_at) from trigger_jobs where job_id = 'split' and partition = 0")
seq=$(sql "select string_agg(event, ' ' order by id) from notifications where job_id = 'split'")
echo "    figure: partition 0: $p0; partition 1: $p1"
echo "    figure: notifications in order: $seq"
expect_eq "partition 1 never succeeded" "" "$(tr ',' '\n' <<<"$p1" | grep -x succeeded)"
expect_eq "no recovered sent while partition 1 keeps failing" 0 \
	"$(sql "select count(*) from notifications where job_id = 'split' and event = 'recovered'")"
expect_eq "one failed sent per failed instant of partition 1" "$(tr ',' '\n' <<<"$p1" | grep -cx failed)" \
	"$(sql "select count(*) from notifications where job_id = 'split' and event = 'failed'")"
expect_eq "partition 1 is marked (notify_parts)" 1 "$(sql "select partition from notify_parts where job_id = 'split'")"

# the service applies partition 1 too now: a manual run succeeds on both
touch "$FIXED"
expect_exit "a manual run of both partitions" 0 "$PAL" trigger --job split --reason notify-test
wait_until "the manual run succeeded on both partitions" 20 eval \
	'[ "$(sql "select count(*) from trigger_jobs where job_id = '\''split'\'' and source = '\''manual'\'' and state = '\''succeeded'\''")" = 2 ]'
wait_until "every notification delivered" 20 eval '[ "$(sql "select count(*) from notifications where delivered_at is null")" = 0 ]'
seq=$(sql "select string_agg(event, ' ' order by id) from notifications where job_id = 'split'")
echo "    figure: notifications in order after the manual run: $seq"
expect_eq "one recovered once partition 1 succeeded, and it is the last event" "1 recovered" \
	"$(sql "select count(*) filter (where event = 'recovered') || ' ' || (array_agg(event order by id desc))[1] from notifications where job_id = 'split'")"
expect_eq "... carrying partition 1's trigger" 1 \
	"$(sql "select payload->'data'->>'partition' from notifications where job_id = 'split' and event = 'recovered'")"
expect_eq "... and the job's marks are cleared" "0 " \
	"$(sql "select (select count(*) from notify_parts where job_id = 'split') || ' ' || coalesce((select failed_since::text from notify_state where job_id = 'split'), '')")"
expect_eq "every request the receiver got was signed" true "$(jq -s 'all(.sig_ok)' "$HOOK_LOG")"
finish
