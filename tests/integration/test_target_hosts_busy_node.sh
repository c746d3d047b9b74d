#!/usr/bin/env bash
# A live executor node at its in-flight limit still counts as live for the
# rule that a job no live executor node can send goes `manual`
# (docs/executor.md, "A secret missing on one node", "A host the tenant is
# not given").  x1's executor.target_hosts does not give red the host, x2's
# does; x2 has executor.max_inflight 1 and a call the service holds 100 s
# (timeout 5m), so it sends no claim for longer than the minute that
# liveness looks back.  Its lease thread marks it seen every 2 s whatever
# its claims do, so x1's sweep and hand-backs must leave the job's instants
# `pending` for x2 (no `manual`, no ticket saying no live node can render
# them).  test_target_hosts_busy_old_node.sh runs this with x2 a 0.3.0 node
# (BUSY_OLD_PAL: its binary), which marks itself seen at its claims only:
# the lease it renews keeps it live.
source tests/integration/lib.sh
source tests/integration/cluster.sh
if [ -z "${BUSY_OLD_PAL:-}" ]; then
	guarantee "a live executor node at its in-flight limit that can send a job keeps the job's instants out of manual"
	fresh_db it_target_hosts_busy_node
fi
# a 0.3.0 executor runs on it too: this tree's after-roll steps stay pending
"$PAL" migrate ${BUSY_OLD_PAL:+--before-roll} >/dev/null
IPORT=$(free_port)
cat >"$NODE_DIR/slow.py" <<'PY'
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(100)
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, f, *a):
        sys.stderr.write("GET %s\n" % self.path); sys.stderr.flush()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$NODE_DIR/slow.py" "$IPORT" >"$NODE_DIR/http.log" 2>&1 & IPID=$!
trap 'kill $IPID 2>/dev/null; stop_all_nodes' EXIT
# 0.3.0 knows no executor.target_hosts: it sends any host
X2_HOSTS=", target_hosts: {red: [\"127.0.0.1:$IPORT\"]}"
[ -n "${BUSY_OLD_PAL:-}" ] && X2_HOSTS=
PAL2=${BUSY_OLD_PAL:-$PAL} start_executor_pair ", target_hosts: {red: [\"other.example\"]}" \
	", max_inflight: 1$X2_HOSTS"
printf 'jobs:\n  - id: red.slow\n    tenant: red\n    schedule: {cron: "0/2 * * * * ?"}\n    target:\n      url: http://127.0.0.1:%s/x\n      method: GET\n      timeout: 5m\n' "$IPORT" >"$NODE_DIR/slow.yaml"
expect_exit "apply without --config" 0 "$PAL" apply "$NODE_DIR/slow.yaml"
running() { [ "$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.slow' AND state = 'running'")" -ge 1 ]; }
wait_until "x2 sends one call (held 100 s by the service)" 20 running
CLAIMED=$(date +%s) # x2's last claim is before this
skipped() { [ "$(sql "SELECT count(*) FROM render_skips WHERE job_id = 'red.slow' AND node = 'x1' AND until > now()")" = 1 ]; }
wait_until "x1 skips the job (it does not give the host)" 20 skipped
# past the minute that liveness looks back from x2's last claim, and 10 s
# of x1's sweeps (its lease thread's, every heartbeat) more
sleep $((CLAIMED + 70 - $(date +%s)))
echo "    states: $(sql "SELECT string_agg(state || '=' || n, ' ') FROM (SELECT state, count(*) n FROM triggers WHERE job_id = 'red.slow' GROUP BY state) s")"
echo "    executor_nodes: $(sql "SELECT string_agg(node || ' seen ' || round(extract(epoch FROM clock_timestamp() - seen_at)) || 's ago', ', ') FROM executor_nodes")"
check "x2 is alive (readyz)" node_ready x2
expect_eq "x2 still runs its one call (no claim for over a minute)" 1 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.slow' AND state = 'running' AND lease_owner = 'x2' AND lease_until > clock_timestamp()")"
if [ -z "${BUSY_OLD_PAL:-}" ]; then
	expect_eq "x2 was seen in the last 10 s all the same (its lease thread)" 1 \
		"$(sql "SELECT count(*) FROM executor_nodes WHERE node = 'x2' AND seen_at > clock_timestamp() - interval '10 seconds'")"
else
	expect_eq "x2's seen_at is over a minute old (0.3.0 writes it at claims only)" 1 \
		"$(sql "SELECT count(*) FROM executor_nodes WHERE node = 'x2' AND seen_at < clock_timestamp() - interval '1 minute'")"
fi
expect_eq "no trigger manual (x2 is live and gives the host)" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.slow' AND state = 'manual'")"
expect_eq "no ticket saying no live node can render" 0 \
	"$(sql "SELECT count(*) FROM tickets WHERE job_id = 'red.slow' AND reason LIKE 'no live executor node%'")"
expect_eq "the instants due meanwhile wait pending for x2" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.slow' AND state NOT IN ('pending', 'running') AND scheduled_at < now() - interval '5 seconds'")"
finish
