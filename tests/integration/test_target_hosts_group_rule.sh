#!/usr/bin/env bash
# executor.target_hosts and a group's notify rule (docs/jobs.md, "Target
# hosts"): the rule is the operator's channel (only a token without a tenant
# limit sets one), so its deliveries are not judged by the tenant of the job
# they tell of.  red is given only its endpoint (LPORT); a group rule of
# `reports` posts failures to the ops hook (OPORT).  A red job of the group
# fails: validate and apply --config accept the rule, and the ops hook gets
# the failure.  A red job's own `notify:` entry to the same ops host (stored
# without --config, which would refuse it) is still refused at the sender:
# the exemption is the group rule's, not the host's.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an operator's group notify rule reaches its hook for the jobs of every tenant, while a tenant's own notify url is still bound to its tenant's hosts"
it_db
cat >"$NODE_DIR/listen.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get('Content-Length') or 0); self.rfile.read(n)
        with open(sys.argv[2], 'a') as f: f.write(self.command + ' ' + self.path + '\n')
        code = 500 if self.path.startswith('/fail') else 200
        self.send_response(code); self.send_header('Content-Length', '0'); self.end_headers()
    do_GET = do_POST = answer
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY
LPORT=$(free_port); OPORT=$(free_port)
: >"$NODE_DIR/red.txt"; : >"$NODE_DIR/ops.txt"
python3 "$NODE_DIR/listen.py" "$LPORT" "$NODE_DIR/red.txt" & LPID=$!
python3 "$NODE_DIR/listen.py" "$OPORT" "$NODE_DIR/ops.txt" & OPID=$!
trap 'kill $LPID $OPID 2>/dev/null; stop_all_nodes' EXIT
export OPS_WHSEC=whsec_cmVkLXdlYmhvb2stc2VjcmV0
SHARDS=2 write_exec_conf "$CLUSTER_CONF" \
	"executor: {lease: 5s, heartbeat: 1s, target_hosts: {red: [\"127.0.0.1:$LPORT\"]}, secrets: {red: [\"OPS_WHSEC\"]}}" \
	"notify: {interval: 200ms}"
cat >"$NODE_DIR/jobs.yaml" <<YAML
notify_rules:
  - group: reports
    on: [failed]
    url: http://127.0.0.1:$OPORT/ops-hook
    secret: \${OPS_WHSEC}
jobs:
  - id: red.rep
    tenant: red
    group: reports
    schedule: {cron: "0/2 * * * * ?"}
    target:
      url: http://127.0.0.1:$LPORT/fail
    retry: {max_attempts: 1}
YAML
cat >"$NODE_DIR/own.yaml" <<YAML
jobs:
  - id: red.own
    tenant: red
    schedule: {cron: "1/2 * * * * ?"}
    target:
      url: http://127.0.0.1:$LPORT/fail
    retry: {max_attempts: 1}
    notify:
      - on: [failed]
        url: http://127.0.0.1:$OPORT/own-hook
        secret: \${OPS_WHSEC}
YAML
expect_exit "validate --config accepts the group rule" 0 "$PAL" validate --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_exit "apply --config stores it" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_exit "validate --config refuses red.own's own notify url (65)" 65 "$PAL" validate --config "$CLUSTER_CONF" "$NODE_DIR/own.yaml"
expect_exit "apply without --config stores it" 0 "$PAL" apply "$NODE_DIR/own.yaml"
start_node x1
got() { grep -q "POST /ops-hook" "$NODE_DIR/ops.txt"; }
wait_until "the ops hook receives red.rep's failure (group rule)" 30 got
expect_eq "red.rep's group-rule notifications carry no refusal" 0 \
	"$(sql "SELECT count(*) FROM notifications WHERE job_id = 'red.rep' AND last_error LIKE '%target_hosts%'")"
tried() { has "SELECT count(*) FROM notifications WHERE job_id = 'red.own' AND attempts > 0"; }
wait_until "a red.own notification tried" 30 tried
expect_match "red.own's own notify url is refused for tenant red" \
	"executor.target_hosts does not give host 127.0.0.1:$OPORT to tenant red" \
	"$(sql "SELECT last_error FROM notifications WHERE job_id = 'red.own' AND attempts > 0 ORDER BY id LIMIT 1")"
expect_eq "the ops hook never received red.own's" 0 "$(grep -c own-hook "$NODE_DIR/ops.txt")"
finish
