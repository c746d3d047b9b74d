#!/usr/bin/env bash
# The cluster console in a real browser: two nodes (controller + executor)
# driven into a known state - a failing job, a paused group, an open ticket,
# a misfire - and the pages that headless Chromium renders from either node
# show each of them, escaped; a third node whose database is unreachable
# still answers, says so, and shows what it knows.  Screenshots are kept as
# artifacts ($PALISADE_ARTIFACTS, default .state/artifacts/console).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console is one cluster view read from PostgreSQL and ZooKeeper, served alike by every node, every value escaped, and still served (with the outage named) when the database is unreachable"

CHROME=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROME" ]; then
	fail "chromium is not installed (apt-get install -y chromium)"
	finish
	exit
fi
ART=${PALISADE_ARTIFACTS:-$PWD/.state/artifacts}/console
mkdir -p "$ART"
DOMCHECK="python3 tests/integration/console_dom.py"

fresh_db it_console
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
SHARDS=4 LOOKAHEAD=2s OVERLAP=2s write_conf "$CLUSTER_CONF"
SHARDS=4

# A service that accepts connections and never answers: every call to it
# times out with an unknown outcome.
start_hold
trap 'stop_all_nodes; kill $HOLD_PID 2>/dev/null; wait $HOLD_PID 2>/dev/null' EXIT

cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  # connection refused, one attempt: failed, error class "connect"
  - id: con.failing
    tenant: shop
    schedule: {cron: "* * * * * ?"}
    retry: {max_attempts: 1}
    target: {url: "http://127.0.0.1:9/refused", timeout: 1s}
  # never answered, one attempt: unknown outcome spent -> a ticket; the next
  # instant while it runs is skipped (overlap: forbid) -> a misfire
  - id: con.hang
    tenant: shop
    schedule: {cron: "* * * * * ?"}
    overlap: forbid
    retry: {max_attempts: 1}
    labels: {team: shop-ops, app.kubernetes.io/name: hold}
    target: {url: "http://127.0.0.1:$HOLD_PORT/hold", timeout: 2s}
  - id: con.paused
    tenant: books
    group: nightly
    schedule: {cron: "* * * * * ?"}
    target: {url: "http://127.0.0.1:9/never-called"}
YAML
"$PAL" apply --config "$CLUSTER_CONF" --reason setup "$NODE_DIR/jobs.yaml" >/dev/null || { echo "  apply failed"; exit 1; }
REASON='<script>alert(1)</script> & "maintenance"'
"$PAL" pause --group nightly --reason "$REASON" >/dev/null

start_node c1 --roles controller,executor
start_node c2 --roles controller,executor
wait_until "shards led" 20 all_shards_led
wait_until "a failed trigger of con.failing" 20 has "select count(*) from trigger_jobs where job_id = 'con.failing' and state = 'failed'"
wait_until "an open ticket for con.hang" 20 has "select count(*) from tickets where job_id = 'con.hang' and state = 'open'"
wait_until "an overlap misfire of con.hang" 20 has "select count(*) from misfires where job_id = 'con.hang' and reason = 'overlap'"
wait_until "a due backlog in the paused group" 20 has "select count(*) from trigger_jobs where resource_group = 'nightly' and state = 'pending' and due_at < clock_timestamp()"
TICKET=$(sql "select min(id) from tickets where job_id = 'con.hang' and state = 'open'")
CLASS=$(sql "select last_error_class from trigger_jobs where job_id = 'con.failing' and state = 'failed' order by id desc limit 1")
echo "    state: ticket $TICKET, con.failing fails with error class [$CLASS]"

# browse URL NAME: DOM into $ART/NAME.html and a 1366x900 screenshot NAME.png
browse() {
	local t0=$SECONDS
	timeout 60 "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$PALISADE_TEST_TMP/chromium-$2" --window-size=1366,900 \
		--screenshot="$ART/$2.png" --dump-dom "$1" >"$ART/$2.html" 2>"$PALISADE_TEST_TMP/chromium-$2.log"
	echo "    figure: $2 rendered in $((SECONDS - t0)) s ($(wc -c <"$ART/$2.html") bytes of DOM)"
}
# dom NAME DESC ID TEXT...: the element ID of the rendered page contains each TEXT
dom() {
	local name=$1 desc=$2; shift 2
	local out; out=$($DOMCHECK "$ART/$name.html" "$@" 2>&1)
	if [ $? -eq 0 ]; then pass "$desc"; else fail "$desc: $(echo "$out" | tail -2)"; fi
}

echo "  -- the cluster page, from c1"
A1=${NODE_ADMIN[c1]}
browse "http://$A1/console" cluster
check "the screenshot exists" [ -s "$ART/cluster.png" ]
dom cluster "both nodes are listed live, with version and roles" nodes c1 c2 controller executor
dom cluster "the failing job shows its last failure and error class" jobs con.failing "$CLASS"
dom cluster "the paused group is listed with its reason, as text" gates "group:nightly" "$REASON"
dom cluster "the paused group's held instants are counted (a resume decides them)" gates "instants held" "oldest held"
dom cluster "the paused group's backlog is marked paused" backlog-groups nightly
dom cluster "the open ticket with its allowed actions" tickets "$TICKET" con.hang retry mark_succeeded abandon
dom cluster "the misfire by reason" misfires overlap
dom cluster "the open-tickets figure" card-tickets "open tickets"
dom cluster "shards with leaders and epochs" shards c1
dom cluster "no script element (the reason stayed text)" script
check "every figure links to a JSON endpoint or the job page" \
	[ "$(grep -o '<a href="[^"]*"' "$ART/cluster.html" | grep -vc 'href="/api/\|href="/console\|href="/metrics"\|href="/"')" = 0 ]

echo "  -- the job page"
browse "http://$A1/console/job?id=con.hang" job
dom job "versions" versions "$(sql "select digest from job_versions where job_id = 'con.hang' and version = 1" | cut -c1-12)"
dom job "recent triggers with their attempts (node, outcome)" triggers manual c
dom job "the job's ticket" tickets "$TICKET"
dom job "the job's misfires" misfires overlap
dom job "the job's labels" job-labels "app.kubernetes.io/name=hold, team=shop-ops"
check "an attempt row under a trigger" grep -q 'class="attempt"' "$ART/job.html"

echo "  -- the same view from c2, as JSON"
open_tickets() { sql "select count(*) from tickets where state = 'open'"; }
api_tickets() { curl -s "http://$1/api/cluster?section=tickets" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tickets"]["open"])'; }
before=$(open_tickets)
n1=$(api_tickets "$A1")
n2=$(api_tickets "${NODE_ADMIN[c2]}")
after=$(open_tickets)
echo "    figure: open tickets: database $before..$after, c1 $n1, c2 $n2"
check "c1 and c2 count the open tickets the database holds (tickets keep opening meanwhile)" \
	[ "$before" -le "$n1" -a "$n1" -le "$n2" -a "$n2" -le "$after" ]
expect_eq "the job endpoint answers 404 for an unknown job" 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://$A1/api/job?id=no.such")"
weird=$(curl -s -w '\n%{http_code}' "http://$A1/console/job?id=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E%27%22%0A")
expect_eq "a job id with markup in it: 404" 404 "$(tail -1 <<<"$weird")"
check "and the id is shown escaped, never as markup" bash -c '! grep -q "<img" <<<"$1" && grep -q "&lt;img src=x onerror=alert(1)&gt;&#39;&quot;" <<<"$1"' _ "$weird"
expect_eq "an unknown section is 404" 404 "$(curl -s -o /dev/null -w '%{http_code}' "http://$A1/api/cluster?section=nope")"

echo "  -- reads behind the token (admin.reads: token)"
SHARDS=4 LOOKAHEAD=2s OVERLAP=2s write_conf "$NODE_DIR/token.yaml" "admin: {reads: token}"
PALISADE_ADMIN_TOKEN=console-test-token CLUSTER_CONF=$NODE_DIR/token.yaml start_node c4 --roles executor
A4=${NODE_ADMIN[c4]}
wait_until "c4 answers with the token" 20 curl -sf -H "Authorization: Bearer console-test-token" "http://$A4/healthz"
# ready (its schema checked, its database and ZooKeeper sessions up) a moment
# after it first answers: the view below reads the readiness peers report
wait_until "c4 is ready" 20 curl -sf -H "Authorization: Bearer console-test-token" "http://$A4/readyz"
expect_eq "/console without the token is refused" 401 "$(curl -s -o /dev/null -w '%{http_code}' "http://$A4/console")"
expect_eq "/api/cluster without the token is refused" 401 "$(curl -s -o /dev/null -w '%{http_code}' "http://$A4/api/cluster")"
tk=$(curl -s -H "Authorization: Bearer console-test-token" "http://$A4/api/cluster?section=nodes")
expect_eq "with the token it serves the view: c1, c2 and c4 ready" "c1=True c2=True c4=True" \
	"$(python3 -c 'import json,sys; print(" ".join("%s=%s" % (n["node"], n.get("ready")) for n in sorted(json.load(sys.stdin)["nodes"], key=lambda n: n["node"]) if n["node"] in ("c1","c2","c4")))' <<<"$tk")"

echo "  -- peers whose reads need the token: readiness from their ZooKeeper registration"
# c5 reads behind the token too, a controller whose drain withdraws each of its
# candidacies 1.5 s late: its draining lasts long enough to be seen
PALISADE_FAULT_SLOW_DRAIN_MS=1500 PALISADE_ADMIN_TOKEN=console-test-token CLUSTER_CONF=$NODE_DIR/token.yaml start_node c5 --roles controller
A5=${NODE_ADMIN[c5]}
wait_until "c5 is ready" 20 curl -sf -H "Authorization: Bearer console-test-token" "http://$A5/readyz"
# peer_row FROM NODE [TOKEN]: NODE's row in FROM's nodes table (ready, draining,
# where they came from, error, the sink counter, a note)
peer_row() {
	curl -s ${3:+-H "Authorization: Bearer $3"} "http://$1/api/cluster?section=nodes" | python3 -c '
import json, sys
r = [n for n in json.load(sys.stdin)["nodes"] if n["node"] == sys.argv[1]]
print("none" if not r else "ready=%s draining=%s from=%s error=%s sink=%s note=%s" % (r[0].get("ready"), r[0].get("draining"),
      r[0].get("status_from"), r[0].get("status_error"), r[0].get("stale_rejections_sink", "absent"), "status_note" in r[0]))' "$2"
}
row_is() { [ "$(peer_row "$1" "$2" "$3")" = "$4" ]; }
READY_ROW="ready=True draining=False from=zookeeper error=None sink=None note=True"
wait_until "c4 (reads: token) shows its peer c5 (reads: token) ready, not draining, counters unavailable, no error" \
	10 row_is "$A4" c5 console-test-token "$READY_ROW"
echo "    c5 as c4's console sees it: $(peer_row "$A4" c5 console-test-token)"
expect_eq "c1 (reads open) shows its peer c4 (reads: token) the same way" "$READY_ROW" "$(peer_row "$A1" c4)"
page5=$(curl -s -H "Authorization: Bearer console-test-token" "http://$A4/console")
check "c4's page says c5's counters are unavailable, not an error" \
	bash -c 'grep -q "counters unavailable" <<<"$1" && grep -q ">unavailable<" <<<"$1"' _ "$page5"
expect_eq "c5 is asked to drain" 202 "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer console-test-token" "http://$A5/drain")"
DRAIN_ROW="ready=False draining=True from=zookeeper error=None sink=None note=True"
wait_until "c4 shows c5 draining, not ready (as c5 publishes it)" 5 row_is "$A4" c5 console-test-token "$DRAIN_ROW"
echo "    c5 as c4's console sees it: $(peer_row "$A4" c5 console-test-token)"

echo "  -- a node whose database is unreachable"
start_node c3 --roles controller --pg "host=127.0.0.1 port=1 dbname=none connect_timeout=1"
wait_until "c3 answers /healthz" 20 curl -sf "http://${NODE_ADMIN[c3]}/healthz"
browse "http://${NODE_ADMIN[c3]}/console" db-down
dom db-down "the page names the unreachable database" database-down "PostgreSQL unavailable" "Connection refused"
dom db-down "and still lists the live nodes from ZooKeeper" nodes c1 c2 c3
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[c3]}/api/cluster")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_eq "/api/cluster still answers 200" 200 "$code"
echo "    figure: /api/cluster with the database unreachable answered in $ms ms"
echo "  artifacts: $ART/{cluster,job,db-down}.png"
finish
