#!/usr/bin/env bash
# ${NAME} secrets of a job: the node's own variables are never a job's, and
# executor.secrets binds the others to tenants (docs/jobs.md, "Secrets").
# A token limited to tenant red applies red's jobs through the API; the
# node's admin token is in NODE_TOK (admin.token_env), red is given RED_*,
# blue's credentials are in BLUE_*.  Refused at apply (422
# forbidden-secret, validate --config exit 65 with file:line:col), and
# again by the executor and the notification delivery for jobs stored
# without the node's config (`palisade apply` without --config): no call;
# for the node's own variable the attempt fails `secret_refused` once (no
# retry), for a name not given to the tenant the trigger is handed back as
# for a missing secret and, with no other node that could send it, is
# `manual` with a ticket.  A name that merely begins with PG is a job's.
# Last, a roll of executor.secrets: a node still on the old config hands
# back a trigger it may not render, and the node on the new one runs it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job names only the secrets its tenant was given and never the node's own: a token limited to a tenant cannot obtain the node's admin token, libpq's or another tenant's credentials through the executor"
fresh_db it_secrets_tenant
"$PAL" migrate >/dev/null
# the tenants' endpoint: records the path and the X-Leak header of each call
LPORT=$(free_port)
cat >"$NODE_DIR/listen.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get('Content-Length') or 0); self.rfile.read(n)
        with open(sys.argv[2], 'a') as f: f.write(self.path + ' ' + self.headers.get('X-Leak', '') + '\n')
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'{}')
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY
: >"$NODE_DIR/calls.txt"
python3 "$NODE_DIR/listen.py" "$LPORT" "$NODE_DIR/calls.txt" & LPID=$!
trap 'kill $LPID 2>/dev/null; stop_all_nodes' EXIT
export NODE_TOK=$PALISADE_ADMIN_TOKEN RED_API_KEY=red-secret BLUE_API_KEY=blue-secret
export BLUE_WHSEC=whsec_Ymx1ZS13ZWJob29rLXNlY3JldA==
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s, secrets: {red: [RED_*]}}" \
	"admin: {token_env: NODE_TOK}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
printf 'jobs:\n  - {id: blue.b, tenant: blue, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$NODE_DIR/blue.yaml"
expect_exit "apply blue.b (tenant blue)" 0 "$PAL" apply "$NODE_DIR/blue.yaml"
out=$("$PAL" token create --name admin-red --role admin --tenant red) || fail "token create"
TOK=$(tail -1 <<<"$out")
start_node x1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[x1]}/readyz")" = 200 ]; }
wait_until "node x1 ready" 30 ready
api() { curl -s -o "$NODE_DIR/api.out" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" "${@:4}" "http://${NODE_ADMIN[x1]}/api/v1$3"; }
expect_eq "admin-red may not read blue.b (404) nor the audit log (403)" "404 403" "$(api "$TOK" GET /jobs/blue.b) $(api "$TOK" GET /audit)"

# red_job ID HEADER-VALUE [more target lines]: a job of tenant red calling
# the endpoint every 2 s with X-Leak: HEADER-VALUE
red_job() {
	printf 'jobs:\n  - id: %s\n    tenant: red\n    schedule: {cron: "0/2 * * * * ?"}\n    target:\n      url: http://127.0.0.1:%s/%s\n      headers: {X-Leak: "%s"}\n' \
		"$1" "$LPORT" "$1" "$2"
	for l in "${@:3}"; do echo "$l"; done
}
apply_red() { api "$TOK" POST /apply -H 'Content-Type: application/yaml' --data-binary @"$1"; }
problem() { python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["type"].rsplit(":",1)[-1], " ".join("%d:%d" % (e["line"], e["column"]) for e in p.get("errors", [])))' "$NODE_DIR/api.out"; }

red_job red.probe '${PALISADE_ADMIN_TOKEN}' >"$NODE_DIR/p1.yaml"
expect_eq "admin-red applies a job naming \${PALISADE_ADMIN_TOKEN}: refused" 422 "$(apply_red "$NODE_DIR/p1.yaml")"
expect_eq "... forbidden-secret, at the job's line:col" "forbidden-secret 2:5" "$(problem)"
check "... the message names the variable as the node's own" grep -q "PALISADE_ADMIN_TOKEN is one of the node's own variables" "$NODE_DIR/api.out"
red_job red.probe '${NODE_TOK}' >"$NODE_DIR/p2.yaml"
expect_eq "... \${NODE_TOK}, the variable this node's admin.token_env names: refused" 422 "$(apply_red "$NODE_DIR/p2.yaml")"
red_job red.probe 'x' '      body: "{\"p\": \"${PGPASSWORD}\"}"' >"$NODE_DIR/p3.yaml"
expect_eq "... \${PGPASSWORD} (libpq's) in the body: refused" 422 "$(apply_red "$NODE_DIR/p3.yaml")"
red_job red.probe '${BLUE_API_KEY}' >"$NODE_DIR/p4.yaml"
expect_eq "... \${BLUE_API_KEY}, not given to red by executor.secrets: refused" 422 "$(apply_red "$NODE_DIR/p4.yaml")"
check "... the message says which tenant lacks it" grep -q "does not give BLUE_API_KEY to tenant red" "$NODE_DIR/api.out"
expect_eq "... nor through plan diff (the same check)" 422 \
	"$(api "$TOK" POST /plan/diff -H 'Content-Type: application/yaml' --data-binary @"$NODE_DIR/p4.yaml")"
expect_eq "none of them was stored" 0 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'red.probe'")"
red_job red.ok '${RED_API_KEY}' >"$NODE_DIR/ok.yaml"
expect_eq "admin-red applies a job naming \${RED_API_KEY} (red is given RED_*)" 200 "$(apply_red "$NODE_DIR/ok.yaml")"

# The same refusals from the CLI with the node's config: exit 65, file:line:col.
expect_exit "validate --config of the \${NODE_TOK} file" 65 "$PAL" validate --config "$CLUSTER_CONF" "$NODE_DIR/p2.yaml"
expect_match "... at file:line:col" "p2.yaml:2:5: error: job \"red.probe\": target.headers.X-Leak: secret reference \\$\\{NODE_TOK\\}" "$OUT"
expect_exit "validate --config of the \${BLUE_API_KEY} file" 65 "$PAL" validate --config "$CLUSTER_CONF" "$NODE_DIR/p4.yaml"
expect_match "... at file:line:col" "p4.yaml:2:5: error: .*does not give BLUE_API_KEY to tenant red" "$OUT"
expect_exit "apply --config of it: refused" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/p4.yaml"
expect_eq "... nothing stored" 0 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'red.probe'")"
expect_exit "validate without --config knows the fixed names only: PALISADE_* refused" 65 "$PAL" validate "$NODE_DIR/p1.yaml"
printf 'jobs:\n  - {id: sign.x, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x", headers: {X-Sig: "${PGP_SIGNING_KEY}"}}}\n' >"$NODE_DIR/pgp.yaml"
expect_exit "\${PGP_SIGNING_KEY} begins with PG but is not libpq's: a job's" 0 "$PAL" validate "$NODE_DIR/pgp.yaml"
sed -i 's/PGP_SIGNING_KEY/PGSSLKEY/' "$NODE_DIR/pgp.yaml"
expect_exit "... while libpq's \${PGSSLKEY} is refused" 65 "$PAL" validate "$NODE_DIR/pgp.yaml"

# Stored without the node's policy (the CLI without --config does not know
# NODE_TOK nor executor.secrets): the executor refuses at render time.
red_job red.sneak '${NODE_TOK}' >"$NODE_DIR/sneak.yaml"
red_job red.cross '${BLUE_API_KEY}' \
	"    notify: [{on: [manual], url: \"http://127.0.0.1:$LPORT/notify\", secret: \"\${BLUE_WHSEC}\"}]" >"$NODE_DIR/cross.yaml"
expect_exit "palisade apply without --config stores red.sneak (\${NODE_TOK})" 0 "$PAL" apply "$NODE_DIR/sneak.yaml"
expect_exit "... and red.cross (\${BLUE_API_KEY}, notify secret \${BLUE_WHSEC})" 0 "$PAL" apply "$NODE_DIR/cross.yaml"
refused() { [ "$(sql "SELECT count(DISTINCT t.job_id) FROM triggers t WHERE (t.job_id = 'red.sneak' AND t.state = 'failed') OR (t.job_id = 'red.cross' AND t.state = 'manual')")" = 2 ]; }
wait_until "a trigger of red.sneak ended failed, one of red.cross manual" 20 refused
called_ok() { grep -q "^/red.ok red-secret$" "$NODE_DIR/calls.txt"; }
wait_until "red.ok called with red's secret" 15 called_ok
notified() { has "SELECT count(*) FROM notifications WHERE job_id = 'red.cross' AND attempts > 0"; }
wait_until "red.cross's notification tried" 15 notified
sleep 3 # more triggers, a retry would show
expect_eq "the endpoint was called by red.ok only (never by red.sneak, red.cross, nor a notification)" "/red.ok" \
	"$(cut -d' ' -f1 "$NODE_DIR/calls.txt" | sort -u | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the endpoint never received the node's admin token nor blue's key" "" \
	"$(grep -e "$PALISADE_ADMIN_TOKEN" -e blue-secret "$NODE_DIR/calls.txt")"
expect_eq "every attempt of red.sneak (the node's own variable): secret_refused, one per trigger (no retry)" "secret_refused 1" \
	"$(sql "SELECT string_agg(DISTINCT a.error_class, ',') || ' ' || max(n)
	       FROM (SELECT trigger_id, count(*) OVER (PARTITION BY trigger_id) n, error_class
	             FROM attempt_ledger WHERE trigger_id IN (SELECT id FROM triggers WHERE job_id = 'red.sneak')) a")"
expect_eq "... and no trigger of red.sneak waits for a retry, is pending again or manual" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.sneak' AND (state IN ('retry_wait', 'unknown', 'manual') OR (state = 'pending' AND attempt_count > 0))")"
expect_eq "red.cross (\${BLUE_API_KEY}, not given to red here): handed back, not failed; no other node could send it, so manual, its attempt given back" \
	"manual secret_not_granted 0 0" \
	"$(sql "SELECT string_agg(DISTINCT state || ' ' || last_error_class || ' ' || attempt_count, ',') || ' ' || (SELECT count(*) FROM triggers WHERE job_id = 'red.cross' AND state = 'failed')
	       FROM triggers WHERE job_id = 'red.cross' AND state = 'manual'")"
expect_match "... with a ticket naming the variable and the tenant" "no live executor node can render the request: .*does not give BLUE_API_KEY to tenant red" \
	"$(sql "SELECT reason FROM tickets WHERE job_id = 'red.cross' ORDER BY id LIMIT 1")"
expect_eq "... x1 skips red.cross for a while (render_skips)" 1 \
	"$(sql "SELECT count(*) FROM render_skips WHERE node = 'x1' AND job_id = 'red.cross' AND until > clock_timestamp()")"
check "... logged executor.render_skip, naming the variable" \
	bash -c "grep executor.render_skip '$NODE_DIR/x1.log' | grep -q BLUE_API_KEY"
check "... counted (palisade_executor_render_skips_total)" \
	[ "$(metric x1 palisade_executor_render_skips_total | cut -d. -f1)" -ge 1 ]
check "log: executor.secret_refused names the variable and the tenant" \
	bash -c "grep executor.secret_refused '$NODE_DIR/x1.log' | grep NODE_TOK | grep -q red"
check "metric palisade_executor_secret_refusals_total counts them" \
	[ "$(metric x1 palisade_executor_secret_refusals_total | cut -d. -f1)" -ge 1 ]
expect_match "the notification's delivery was refused too (last_error)" "does not give BLUE_WHSEC to tenant red" \
	"$(sql "SELECT last_error FROM notifications WHERE job_id = 'red.cross' ORDER BY id LIMIT 1")"
check "no log line holds the node's admin token or blue's key" \
	bash -c "! grep -q -e '$PALISADE_ADMIN_TOKEN' -e blue-secret '$NODE_DIR/x1.log'"

# A roll of executor.secrets (restart-only): x2 still runs the old config,
# where red is not given RED_*; x1, on the new one, is down for its restart
# but was seen within the minute.  red.roll, applied under the new config,
# has one instant.  x2 hands its trigger back instead of ending it; x1 back
# up runs it: the instant is not lost to the roll.
OLD=$NODE_DIR/old.yaml
CLUSTER_CONF=$OLD SHARDS=2 write_conf "$OLD" "executor: {lease: 5s, heartbeat: 1s, secrets: {blue: [BLUE_*]}}" \
	"admin: {token_env: NODE_TOK}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$OLD"
stop_node x1
CLUSTER_CONF=$OLD start_node x2
ready2() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[x2]}/readyz")" = 200 ]; }
wait_until "node x2 (old config) ready" 30 ready2
AT=$(date -u -d "@$(( $(date +%s) + 4 ))" +'%S %M %H %d %m ? %Y')
printf 'jobs:\n  - id: red.roll\n    tenant: red\n    schedule: {cron: "%s"}\n    target:\n      url: http://127.0.0.1:%s/red.roll\n      headers: {X-Leak: "${RED_API_KEY}"}\n' \
	"$AT" "$LPORT" >"$NODE_DIR/roll.yaml"
expect_exit "apply --config (the new config) of red.roll, one instant" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/roll.yaml"
handed() { has "SELECT count(*) FROM attempt_ledger a JOIN triggers t ON t.id = a.trigger_id WHERE t.job_id = 'red.roll' AND a.error_class = 'secret_not_granted'"; }
wait_until "x2 renders red.roll's trigger" 25 handed
expect_eq "x2 (old config) hands it back: pending, secret_not_granted, its attempt given back" "pending secret_not_granted 0" \
	"$(sql "SELECT state || ' ' || last_error_class || ' ' || attempt_count FROM triggers WHERE job_id = 'red.roll'")"
check "... and skips red.roll for a while, logged executor.render_skip" \
	bash -c "grep executor.render_skip '$NODE_DIR/x2.log' | grep red.roll | grep -q 'does not give RED_API_KEY to tenant red'"
start_node x1
roll_ok() { has "SELECT count(*) FROM triggers WHERE job_id = 'red.roll' AND state = 'succeeded'"; }
wait_until "x1 (new config) runs red.roll" 25 roll_ok
expect_eq "red.roll's one instant succeeded (nothing failed nor manual), called once with red's secret" "succeeded 1" \
	"$(sql "SELECT string_agg(state, ',') FROM triggers WHERE job_id = 'red.roll'") $(grep -c '^/red.roll red-secret$' "$NODE_DIR/calls.txt")"
finish
