#!/usr/bin/env bash
# executor.target_hosts binds the hosts a job may call and notify to its
# tenant (docs/jobs.md, "Target hosts").  Two tenants: red is given the
# tenants' endpoint (127.0.0.1:LPORT), blue an internal service
# (127.0.0.1:IPORT) that red must not reach.  A token limited to red
# applies a job whose target is the node's own loopback admin port with
# keep_body (the answer would come back through the attempts): refused at
# apply (422 forbidden-target naming the job, the url and the tenant;
# validate/apply --config exit 65 with file:line:col), as is a notify url
# of another host.  A job of red stored by the CLI without --config, which
# cannot know the setting, targets the internal service with keep_body and
# a notify url there: the executor never calls it, hands the trigger back
# as for a secret the node does not give (target_not_granted; with no
# other node, manual with a ticket), and the notification sender never
# posts it (logged, counted, last_error): the internal service sees none of
# red's requests.  Granted hosts are called as before: red's endpoint by
# red, the internal service by blue.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job calls and notifies only the hosts its tenant was given: a token limited to a tenant cannot make the executor read the node's admin port or an internal service and hand the answer back through keep_body"
it_db
# listen.py PORT FILE: answers every request 200 {"internal": "data"} and
# records its method and path
cat >"$NODE_DIR/listen.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def answer(self):
        n = int(self.headers.get('Content-Length') or 0); self.rfile.read(n)
        with open(sys.argv[2], 'a') as f: f.write(self.command + ' ' + self.path + '\n')
        b = b'{"internal": "data"}'
        self.send_response(200); self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)
    do_GET = do_POST = answer
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY
LPORT=$(free_port)
IPORT=$(free_port)
: >"$NODE_DIR/calls.txt"
: >"$NODE_DIR/internal.txt"
python3 "$NODE_DIR/listen.py" "$LPORT" "$NODE_DIR/calls.txt" & LPID=$!
python3 "$NODE_DIR/listen.py" "$IPORT" "$NODE_DIR/internal.txt" & IPID=$!
trap 'kill $LPID $IPID 2>/dev/null; stop_all_nodes' EXIT
export RED_WHSEC=whsec_cmVkLXdlYmhvb2stc2VjcmV0
SHARDS=2 write_exec_conf "$CLUSTER_CONF" \
	"executor: {lease: 5s, heartbeat: 1s, target_hosts: {red: [\"127.0.0.1:$LPORT\"], blue: [\"127.0.0.1:$IPORT\", \"*.blue.example\"]}}" \
	"notify: {interval: 200ms}"
out=$("$PAL" token create --name admin-red --role admin --tenant red) || fail "token create"
TOK=$(tail -1 <<<"$out")
start_node x1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[x1]}/readyz")" = 200 ]; }
wait_until "node x1 ready" 30 ready
ADMIN=${NODE_ADMIN[x1]}
api() { curl -s -o "$NODE_DIR/api.out" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" "${@:4}" "http://$ADMIN/api/v1$3"; }
apply_red() { api "$TOK" POST /apply -H 'Content-Type: application/yaml' --data-binary @"$1"; }
problem() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p.get("type", "").rsplit(":",1)[-1], " ".join("%d:%d" % (e["line"], e["column"]) for e in p.get("errors", [])))' "$NODE_DIR/api.out"; }

# job ID TENANT URL [more target lines]: a job calling URL every 2 s
job() {
	printf 'jobs:\n  - id: %s\n    tenant: %s\n    schedule: {cron: "0/2 * * * * ?"}\n    target:\n      url: %s\n' "$1" "$2" "$3"
	for l in "${@:4}"; do echo "$l"; done
}

# The node's own admin port, with keep_body: refused at apply.
job red.probe red "http://$ADMIN/metrics" "      method: GET" "      keep_body: 64KiB" >"$NODE_DIR/probe.yaml"
expect_eq "admin-red applies a job of red calling the node's loopback admin port (keep_body): refused" 422 \
	"$(apply_red "$NODE_DIR/probe.yaml")"
expect_eq "... forbidden-target, at the job's line:col" "forbidden-target 2:5" "$(problem)"
check "... the message names the job, the url, the host and the tenant" \
	grep -qF "job \\\"red.probe\\\": target.url http://$ADMIN/metrics: executor.target_hosts does not give host $ADMIN to tenant red" "$NODE_DIR/api.out"
job red.probe red "http://127.0.0.1:$LPORT/red.probe" \
	"    notify: [{on: [manual], url: \"http://127.0.0.1:$IPORT/notify\", secret: \"\${RED_WHSEC}\"}]" >"$NODE_DIR/probe2.yaml"
expect_eq "... a job of red whose notify url is blue's internal service: refused" 422 "$(apply_red "$NODE_DIR/probe2.yaml")"
expect_eq "... forbidden-target" "forbidden-target 2:5" "$(problem)"
check "... the message names notify[0].url and the tenant" \
	grep -qF "notify[0].url http://127.0.0.1:$IPORT/notify: executor.target_hosts does not give host 127.0.0.1:$IPORT to tenant red" "$NODE_DIR/api.out"
expect_eq "... nor through plan diff (the same check)" 422 \
	"$(api "$TOK" POST /plan/diff -H 'Content-Type: application/yaml' --data-binary @"$NODE_DIR/probe.yaml")"
expect_eq "none of them was stored" 0 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'red.probe'")"
job red.ok red "http://127.0.0.1:$LPORT/red.ok" "      keep_body: 1KiB" >"$NODE_DIR/ok.yaml"
expect_eq "admin-red applies a job of red calling red's endpoint (granted)" 200 "$(apply_red "$NODE_DIR/ok.yaml")"

# The CLI with the node's config refuses the same; without it, it cannot know.
expect_exit "validate --config of the admin-port job" 65 "$PAL" validate --config "$CLUSTER_CONF" "$NODE_DIR/probe.yaml"
expect_match "... at file:line:col, naming the url and the tenant" \
	"probe.yaml:2:5: error: job \"red.probe\": target.url http://$ADMIN/metrics: executor.target_hosts does not give host $ADMIN to tenant red" "$OUT"
expect_exit "apply --config of it: refused" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/probe.yaml"
expect_exit "apply --config of the notify one: refused" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/probe2.yaml"
expect_eq "... nothing stored" 0 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'red.probe'")"

# Stored without the node's policy: the executor and the notification
# sender refuse before sending.
job red.sneak red "http://127.0.0.1:$IPORT/red.sneak" "      method: GET" "      keep_body: 64KiB" \
	"    notify: [{on: [manual], url: \"http://127.0.0.1:$IPORT/notify\", secret: \"\${RED_WHSEC}\"}]" >"$NODE_DIR/sneak.yaml"
job blue.ok blue "http://127.0.0.1:$IPORT/blue.ok" >"$NODE_DIR/blue.yaml"
expect_exit "palisade apply without --config stores red.sneak (blue's internal service, keep_body, notify there)" 0 \
	"$PAL" apply "$NODE_DIR/sneak.yaml"
expect_exit "... and blue.ok (blue's internal service, granted to blue)" 0 "$PAL" apply "$NODE_DIR/blue.yaml"
refused() { has "SELECT count(*) FROM triggers WHERE job_id = 'red.sneak' AND state = 'manual'"; }
wait_until "a trigger of red.sneak handed back until manual (no other node)" 20 refused
called() { grep -q "^POST /red.ok$" "$NODE_DIR/calls.txt" && grep -q "^POST /blue.ok$" "$NODE_DIR/internal.txt"; }
wait_until "red.ok called red's endpoint, blue.ok the internal service" 15 called
notified() { has "SELECT count(*) FROM notifications WHERE job_id = 'red.sneak' AND attempts > 0"; }
wait_until "red.sneak's notification tried" 15 notified
sleep 3 # more triggers and deliveries: a call or a post would show
expect_eq "the internal service was called by blue.ok only (never red.sneak, never a notification)" "POST /blue.ok" \
	"$(sort -u "$NODE_DIR/internal.txt" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "red.sneak: handed back, not failed: manual target_not_granted, its attempt given back; none failed" \
	"manual target_not_granted 0 0" \
	"$(sql "SELECT string_agg(DISTINCT state || ' ' || last_error_class || ' ' || attempt_count, ',') || ' ' || (SELECT count(*) FROM triggers WHERE job_id = 'red.sneak' AND state = 'failed')
	       FROM triggers WHERE job_id = 'red.sneak' AND state = 'manual'")"
expect_eq "... every attempt of it ended target_not_granted, no response kept" "target_not_granted 0" \
	"$(sql "SELECT string_agg(DISTINCT a.error_class, ',') || ' ' || (SELECT count(*) FROM attempt_responses r JOIN triggers t ON t.id = r.trigger_id WHERE t.job_id = 'red.sneak')
	       FROM attempt_ledger a JOIN triggers t ON t.id = a.trigger_id WHERE t.job_id = 'red.sneak'")"
TID=$(sql "SELECT id FROM triggers WHERE job_id = 'red.sneak' AND state = 'manual' ORDER BY id LIMIT 1")
expect_eq "admin-red reads the attempts of its trigger (200): nothing of the internal service's answer" "200 0" \
	"$(api "$TOK" GET "/triggers/$TID/attempts") $(grep -c internal "$NODE_DIR/api.out")"
expect_match "... a ticket naming the url, the host and the tenant" \
	"no live executor node can render the request: target.url http://127.0.0.1:$IPORT/red.sneak: executor.target_hosts does not give host 127.0.0.1:$IPORT to tenant red" \
	"$(sql "SELECT reason FROM tickets WHERE job_id = 'red.sneak' ORDER BY id LIMIT 1")"
expect_eq "... x1 skips red.sneak for a while (render_skips)" 1 \
	"$(sql "SELECT count(*) FROM render_skips WHERE node = 'x1' AND job_id = 'red.sneak' AND until > clock_timestamp()")"
check "... logged executor.render_skip, naming the host and the tenant" \
	bash -c "grep executor.render_skip '$NODE_DIR/x1.log' | grep red.sneak | grep -q 'does not give host 127.0.0.1:$IPORT to tenant red'"
check "... counted (palisade_executor_render_skips_total)" \
	[ "$(metric x1 palisade_executor_render_skips_total | cut -d. -f1)" -ge 1 ]
expect_match "the notification was not posted: its last_error names the host and the tenant" \
	"url http://127.0.0.1:$IPORT/notify: executor.target_hosts does not give host 127.0.0.1:$IPORT to tenant red" \
	"$(sql "SELECT last_error FROM notifications WHERE job_id = 'red.sneak' ORDER BY id LIMIT 1")"
check "... logged notify.target_refused with the tenant" \
	bash -c "grep notify.target_refused '$NODE_DIR/x1.log' | grep -q '\"tenant\":\"red\"'"
check "... counted (palisade_notify_target_refusals_total)" \
	[ "$(metric x1 palisade_notify_target_refusals_total | cut -d. -f1)" -ge 1 ]
expect_eq "granted hosts work: red.ok and blue.ok succeeded, nothing of theirs failed" "1 1 0" \
	"$(sql "SELECT (SELECT count(*) > 0 FROM triggers WHERE job_id = 'red.ok' AND state = 'succeeded')::int || ' ' ||
	               (SELECT count(*) > 0 FROM triggers WHERE job_id = 'blue.ok' AND state = 'succeeded')::int || ' ' ||
	               (SELECT count(*) FROM triggers WHERE job_id IN ('red.ok', 'blue.ok') AND state IN ('failed', 'manual'))")"
finish
