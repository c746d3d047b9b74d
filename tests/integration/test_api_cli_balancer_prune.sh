#!/usr/bin/env bash
# `apply --prune-prefix --server` through a balancer over the admin listeners
# during a roll: the CLI's HEAD /api/v1/openapi.json reaches a 0.4.0 node, the
# apply itself a 0.3.0 node, which drops ?prune_prefix= and applies without
# retiring.  The CLI judges what was done from the answer: a 0.4.0 node echoes
# prune_prefix, and an answer without it is an error (exit 70), for the dry run
# as for the apply.  The balancer here sends HEAD to n1 (0.4.0) and the rest to
# o1 (0.3.0).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "apply --prune-prefix through --server never exits 0 without retiring"
db_from_030 it_api_cli_balancer_prune || { finish; exit 1; }
SHARDS=1 write_conf "$CLUSTER_CONF"
PAL=$OLD_PAL start_node o1
start_node n1
wait_until "o1 ready" 20 node_ready o1
wait_until "n1 ready" 20 node_ready n1
LB_PORT=$(free_port)
cat >"$PALISADE_TEST_TMP/lb.py" <<'PY'
import http.server, http.client, sys
port, head_to, rest_to = int(sys.argv[1]), sys.argv[2], sys.argv[3]
class H(http.server.BaseHTTPRequestHandler):
    def fwd(self, target):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else None
        c = http.client.HTTPConnection(target, timeout=30)
        hdr = {k: v for k, v in self.headers.items() if k.lower() not in ('host', 'connection')}
        c.request(self.command, self.path, body=body, headers=hdr)
        r = c.getresponse(); data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ('connection', 'transfer-encoding', 'content-length'):
                self.send_header(k, v)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)
    def do_HEAD(self): self.fwd(head_to)
    def do_GET(self): self.fwd(rest_to)
    def do_POST(self): self.fwd(rest_to)
    def do_DELETE(self): self.fwd(rest_to)
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()
PY
python3 "$PALISADE_TEST_TMP/lb.py" "$LB_PORT" "${NODE_ADMIN[n1]}" "${NODE_ADMIN[o1]}" &
LB_PID=$!
wait_until "balancer up" 10 curl -sf -o /dev/null "http://127.0.0.1:$LB_PORT/api/v1/openapi.json"
AD=$("$PAL" token create --name ad --role admin | tail -1)
printf 'jobs:\n  - {id: team.a, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n  - {id: team.b, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/test_api_cli_balancer_prune.t2.yaml"
expect_exit "team.a and team.b applied (0.3.0 CLI)" 0 "$OLD_PAL" apply "$PALISADE_TEST_TMP/test_api_cli_balancer_prune.t2.yaml"
printf 'jobs:\n  - {id: team.a, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/test_api_cli_balancer_prune.t1.yaml"
lb() { env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" "$@" --server "http://127.0.0.1:$LB_PORT" "$PALISADE_TEST_TMP/test_api_cli_balancer_prune.t1.yaml"; }
out=$(lb apply --dry-run --prune-prefix team --reason "team.b goes" 2>&1); ec=$?
echo "$out" | head -4 | sed 's/^/    | /'
expect_eq "dry run --prune-prefix answered by the 0.3.0 node: exit 70" 70 "$ec"
expect_match "... saying the answer names no prune_prefix" "names no prune_prefix" "$out"
out=$(lb apply --prune-prefix team --reason "team.b goes" 2>&1); ec=$?
echo "$out" | head -4 | sed 's/^/    | /'
expect_eq "apply --prune-prefix answered by the 0.3.0 node: exit 70, not 0" 70 "$ec"
expect_match "... saying the file was applied and nothing retired" "WAS applied and nothing was retired" "$out"
expect_eq "team.b not retired (0.3.0 dropped the prefix)" f "$(sql "select retired_at is not null from jobs where job_id = 'team.b'")"
# the same straight to the 0.4.0 node: the answer echoes the prefix
out=$(env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" apply --prune-prefix team --reason "team.b goes" --output json --server "http://${NODE_ADMIN[n1]}" "$PALISADE_TEST_TMP/test_api_cli_balancer_prune.t1.yaml"); ec=$?
expect_eq "apply --prune-prefix through the 0.4.0 node: exit 0" 0 "$ec"
expect_eq "... its answer echoes prune_prefix" team "$(jq -r .prune_prefix <<<"$out")"
expect_eq "... and retires team.b" t "$(sql "select retired_at is not null from jobs where job_id = 'team.b'")"
kill "$LB_PID" 2>/dev/null; wait "$LB_PID" 2>/dev/null
stop_node n1
stop_node o1
finish
