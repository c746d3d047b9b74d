#!/usr/bin/env bash
# The console acts, in a real browser: headless Chromium (driven over the
# DevTools protocol, tests/integration/cdp.py) logs in with an operator's
# API token, pauses a job and sees it paused, resumes it, resolves a ticket
# with one of its allowed actions; a viewer's pages carry no action forms; a
# form without the session's CSRF token, and one posted from another
# origin, change nothing.  The audit rows of the browser's actions name the
# token and its role, as the API's do.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 from the console: every action a page offers is one API request made with the logged-in token (its role, tenants and audit row), behind a session cookie and a per-session CSRF token; a viewer is offered nothing"
T0=$SECONDS

CHROME=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROME" ]; then
	fail "chromium is not installed (apt-get install -y chromium)"
	finish
	exit
fi

fresh_db it_console_act
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
SHARDS=2 LOOKAHEAD=2s OVERLAP=2s write_conf "$CLUSTER_CONF"

# A service that accepts connections and never answers: a call to it ends
# with an unknown outcome, and a spent budget opens a ticket.
start_hold
trap 'stop_all_nodes; kill $HOLD_PID 2>/dev/null; wait $HOLD_PID 2>/dev/null' EXIT

cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: act.quiet
    tenant: shop
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:9/never-called"}
  - id: act.hang
    tenant: shop
    schedule: {cron: "* * * * * ?"}
    overlap: forbid
    retry: {max_attempts: 1}
    target: {url: "http://127.0.0.1:$HOLD_PORT/hold", timeout: 1s}
YAML
"$PAL" apply --reason setup "$NODE_DIR/jobs.yaml" >/dev/null || { echo "  apply failed"; exit 1; }
OPS=$("$PAL" token create --name ops --role operator | tail -1)
EYES=$("$PAL" token create --name eyes --role viewer | tail -1)

start_node b1 --roles controller,executor
A=${NODE_ADMIN[b1]}
wait_until "b1 answers" 20 curl -sf "http://$A/healthz"
wait_until "an open ticket for act.hang" 25 has "select count(*) from tickets where job_id = 'act.hang' and state = 'open'"
TICKET=$(sql "select min(id) from tickets where job_id = 'act.hang' and state = 'open'")
echo "    state: ticket $TICKET open ($(sql "select array_to_string(allowed_actions, ',') from tickets where id = $TICKET"))"

# browser_checks FILE: the "ok ..." and "FAIL ..." lines a browser scenario
# printed, as this test's checks; its other lines shown.
browser_checks() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok   "*) pass "${line#ok   }" ;;
		"FAIL "*) fail "${line#FAIL }" ;;
		*) echo "    | $line" ;;
		esac
	done <"$1"
}
echo "  -- in the browser: an operator, then a viewer"
PYTHONPATH=tests/integration timeout 90 python3 - "$CHROME" "$PALISADE_TEST_TMP/cdp" "http://$A" \
	"$OPS" "$EYES" "$TICKET" >"$PALISADE_TEST_TMP/browser.out" 2>&1 <<'PY'
import sys, urllib.parse
from cdp import Browser
chrome, prof, base, ops, eyes, ticket = sys.argv[1:7]
def check(desc, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + desc + ("" if cond else ": " + str(detail)[:300]), flush=True)

with Browser(chrome, prof + "-operator") as b:
    b.goto(base + "/console")
    check("before the login the page offers no action", b.count("form.act") == 0, b.count("form.act"))
    b.goto(base + "/console/login")
    b.submit("document.getElementById('login')", {"token": ops})
    check("the login lands on the cluster page, naming the token and its role",
          b.js("location.pathname") == "/console" and "ops (operator)" in (b.text("#who") or ""),
          (b.js("location.href"), b.text("#who"), b.text("main")))
    check("the token is in no URL and no cookie readable by the page",
          ops not in b.js("location.href") and "palisade_session" not in b.js("document.cookie"),
          b.js("document.cookie"))
    b.goto(base + "/console/job?id=act.quiet")
    check("the job page offers pause and run now", b.count("form.act[data-op=pause-job]") == 1
          and b.count("form.act[data-op=trigger-job]") == 1, b.text("#actions"))
    # a reason is asked for: the browser refuses an empty one (required)
    check("each action form asks for a reason (required)",
          b.js("[...document.querySelectorAll('form.act')].every(f => f.elements.reason && f.elements.reason.required)"))
    b.submit("document.querySelector('form.act[data-op=pause-job]')", {"reason": "browser: maintenance"})
    check("pause: the API's answer is shown", "pause-job act.quiet: done (200)" in (b.text("#flash") or ""),
          b.text("#flash") or b.text("main"))
    check("and the job page shows it paused by its own gate, with a resume form",
          "job:act.quiet" in (b.text("#job-summary") or "") and b.count("form.act[data-op=resume-job]") == 1,
          b.text("#job-summary"))
    b.goto(base + "/console")
    check("the cluster page lists the paused scope with a resume form",
          "job:act.quiet" in (b.text("#gates") or "") and b.count("#gates form.act[data-op=resume-job]") == 1,
          b.text("#gates"))
    b.goto(base + "/console/job?id=act.quiet")
    b.submit("document.querySelector('form.act[data-op=resume-job]')", {"reason": "browser: done"})
    check("resume: done, and the job is no longer paused",
          "resume-job act.quiet: done (200)" in (b.text("#flash") or "")
          and "job:act.quiet" not in (b.text("#job-summary") or ""),
          (b.text("#flash"), b.text("#job-summary")))
    b.goto(base + "/console/job?id=act.hang")
    sel = "document.querySelector('form.act[data-op=resolve-ticket][data-target=\"%s\"]')" % ticket
    opts = b.js("[...%s.elements.action.options].map(o => o.value)" % sel)
    check("the ticket's form offers its allowed actions", "abandon" in (opts or []), opts)
    b.submit(sel, {"action": "abandon", "reason": "browser: not needed"})
    check("resolve: done", ("resolve-ticket %s: done (200)" % ticket) in (b.text("#flash") or ""),
          b.text("#flash") or b.text("main"))
    # a form of the page without its CSRF token: refused, nothing done
    b.goto(base + "/console/job?id=act.quiet")
    b.js("document.querySelector('form.act[data-op=pause-job]').elements.csrf.remove()")
    b.submit("document.querySelector('form.act[data-op=pause-job]')", {"reason": "forged"})
    check("a form without the CSRF token is refused", "CSRF" in (b.text("#refused") or ""),
          b.text("body"))
    # a form posted from another origin (a data: page): refused by the listener
    forged = ('<form id=f method=post action="%s/console/act"><input name=op value=pause-job>'
              '<input name=target value=act.quiet><input name=reason value=x>'
              '<input name=csrf value=guess></form>' % base)
    b.goto("data:text/html," + urllib.parse.quote(forged))
    b.submit("document.getElementById('f')")
    check("a form from another origin is refused", "refused" in (b.text("body") or ""), b.text("body"))

with Browser(chrome, prof + "-viewer") as b:
    b.goto(base + "/console/login")
    b.submit("document.getElementById('login')", {"token": eyes})
    check("a viewer logs in", "eyes (viewer)" in (b.text("#who") or ""), b.text("body"))
    n1 = b.count("form.act")
    b.goto(base + "/console/job?id=act.hang")
    n2 = b.count("form.act")
    check("a viewer's pages carry no action form (cluster page, job page)", n1 == 0 and n2 == 0, (n1, n2))
    check("but the viewer sees the job and its ticket", ticket in (b.text("#tickets") or ""), b.text("#tickets"))
PY
rc=$?
browser_checks "$PALISADE_TEST_TMP/browser.out"
expect_eq "the browser scenario ran to its end" 0 "$rc"

echo "  -- what the database holds"
expect_eq "pause and resume by the browser: audit rows with the token's name and role" \
	"pause|ops|operator|browser: maintenance resume|ops|operator|browser: done" \
	"$(sql "select string_agg(action || '|' || actor || '|' || role || '|' || reason, ' ' order by seq) from audit_log where scope = 'job:act.quiet' and action in ('pause', 'resume')")"
expect_eq "the ticket resolved by ops with abandon" "resolved|abandon" \
	"$(sql "select state || '|' || coalesce(resolution, '') from tickets where id = $TICKET")"
expect_eq "the forged forms paused nothing" 0 "$(sql "select count(*) from gates where scope = 'job:act.quiet' and paused")"

echo "  -- the same refusals without a browser"
JAR=$PALISADE_TEST_TMP/jar
code=$(curl -s -o /dev/null -w '%{http_code}' -c "$JAR" --data-urlencode "token=$OPS" "http://$A/console/login")
expect_eq "a login answers 303" 303 "$code"
check "the session cookie is HttpOnly and SameSite=Strict, its value is no token" \
	bash -c "grep -q '#HttpOnly_127.0.0.1' '$JAR' && ! grep -q '$OPS' '$JAR'"
hdr=$(curl -s -D - -o /dev/null --data-urlencode "token=$OPS" "http://$A/console/login" | tr -d '\r')
expect_match "the Set-Cookie header" '^Set-Cookie: palisade_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict$' \
	"$(grep -i '^set-cookie' <<<"$hdr")"
expect_eq "a form without the CSRF token: 403" 403 \
	"$(curl -s -o /dev/null -w '%{http_code}' -b "$JAR" -d 'op=pause-job&target=act.quiet&reason=x' "http://$A/console/act")"
expect_eq "with a wrong one: 403" 403 \
	"$(curl -s -o /dev/null -w '%{http_code}' -b "$JAR" -d 'op=pause-job&target=act.quiet&reason=x&csrf=00' "http://$A/console/act")"
expect_eq "an unknown token does not log in: 401" 401 \
	"$(curl -s -o /dev/null -w '%{http_code}' -d 'token=pal_0000000000000000_00' "http://$A/console/login")"
# forms: the number of action forms on the job page of act.quiet for TOKEN
forms() {
	local jar=$PALISADE_TEST_TMP/jar-$1
	curl -s -o /dev/null -c "$jar" --data-urlencode "token=$2" "http://$A/console/login"
	curl -s -b "$jar" "http://$A/console/job?id=act.quiet" | grep -o 'class="act"' | wc -l
}
BLUE=$("$PAL" token create --name ops-blue --role operator --tenant blue | tail -1)
SHOP=$("$PAL" token create --name ops-shop --role operator --tenant shop | tail -1)
expect_eq "an operator of another tenant is offered nothing on act.quiet (tenant shop)" 0 "$(forms blue "$BLUE")"
check "an operator of tenant shop is offered its actions" [ "$(forms shop "$SHOP")" -gt 0 ]
expect_eq "still nothing paused" 0 "$(sql "select count(*) from gates where scope = 'job:act.quiet' and paused")"
echo "  -- the pictures: the last hour of this node's samples, as inline SVG"
# act.hang has fired about once a second since b1 started: its samples
# (every 5 s) hold fires and lateness
hist() { curl -s "http://$A/api/cluster?section=history" | python3 -c "import json,sys; h=json.load(sys.stdin)['history']; $1"; }
wait_until "three samples taken" 20 hist 'sys.exit(0 if len(h["t"]) >= 3 else 1)'
echo "    figure: $(hist 'print(len(h["t"]), "samples; fires/s", h["fires_per_s"][-3:], "p50", h["lateness_p50_s"][-3:], "p99", h["lateness_p99_s"][-3:])')"
check "fires per second above 0 and lateness quantiles in the samples" \
	hist 'sys.exit(0 if max(v or 0 for v in h["fires_per_s"]) > 0 and any(v is not None for v in h["lateness_p99_s"]) else 1)'
page=$(curl -s "http://$A/console")
check "the cluster page draws the three charts inline, fires and lateness as lines" \
	python3 -c 'import re,sys; p=sys.argv[1]
figs = {f: re.search(r"<figure class=\"chart\" id=\"%s\">(.*?)</figure>" % f, p, re.S) for f in ("chart-fires", "chart-lateness", "chart-backlog")}
ok = all(figs.values()) and "<svg" in figs["chart-fires"].group(1)
ok = ok and len(re.findall(r"<polyline[^>]*points=\"[^\"]+ [^\"]+\"", figs["chart-fires"].group(1))) >= 1
ok = ok and len(re.findall(r"<polyline", figs["chart-lateness"].group(1))) >= 1
sys.exit(0 if ok else 1)' "$page"
check "and no script, no external resource" bash -c '! grep -qiE "<script|src=\"http|href=\"http" <<<"$1"' _ "$page"
echo "  -- the jobs table: paged by id, searchable"
{
	echo "jobs:"
	for i in $(seq -w 1 450); do
		t=shop; [ $((10#$i % 3)) = 0 ] && t=blue
		echo "  - {id: page.$i, tenant: $t, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/many.yaml"
"$PAL" apply --reason "many jobs" "$NODE_DIR/many.yaml" >/dev/null || fail "apply 450 jobs"
# pages Q: every page of /api/cluster?section=jobs&q=Q followed by next_after;
# prints "pages rows distinct sorted matching total"
pages() {
	python3 - "http://$A" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
base, q = sys.argv[1], sys.argv[2]
ids, pages, after, m = [], 0, None, None
while True:
    args = {"section": "jobs"}
    if q: args["q"] = q
    if after: args["after"] = after
    with urllib.request.urlopen(base + "/api/cluster?" + urllib.parse.urlencode(args)) as r:
        m = json.load(r)["jobs"]
    pages += 1
    ids += [j["job_id"] for j in m["rows"]]
    after = m["next_after"]
    if not after or pages > 20:
        break
print(pages, len(ids), len(set(ids)), ids == sorted(ids), m["matching"], m["total"])
PY
}
expect_eq "every job reached once, in id order, 200 a page" "3 452 452 True 452 452" "$(pages "")"
expect_eq "a search by tenant (blue: every third page.NNN job)" "1 150 150 True 150 452" "$(pages BLUE)"
expect_eq "a search by id substring (page.440 to page.449)" "1 10 10 True 10 452" "$(pages "page.44")"
html=$(curl -s "http://$A/console?q=quiet")
check "the page's search form keeps the text and lists the match" \
	bash -c 'grep -q "name=\"q\" placeholder=\"job, tenant or group\" value=\"quiet\"" <<<"$1" && grep -q "act.quiet" <<<"$1" && ! grep -q "page.001" <<<"$1"' _ "$html"
html=$(curl -s "http://$A/console")
check "the first page links to the next" grep -q 'id="jobs-next" href="/console?after=page.198#jobs"' <<<"$html"
t0=$(date +%s%N)
curl -s -o /dev/null "http://$A/console?after=page.400"
echo "    figure: a deep jobs page (after page.400) rendered in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
echo "  -- a login limited to tenant blue, in the browser: blue's jobs only"
"$PAL" pause --group default --reason "a group gate" >/dev/null || fail "pause --group default"
sql "select job_id from jobs where tenant <> 'blue'" >"$PALISADE_TEST_TMP/other-ids"
PYTHONPATH=tests/integration timeout 60 python3 - "$CHROME" "$PALISADE_TEST_TMP/cdp-blue" "http://$A" \
	"$BLUE" "$PALISADE_TEST_TMP/other-ids" >"$PALISADE_TEST_TMP/browser-blue.out" 2>&1 <<'PY'
import json, re, sys
from cdp import Browser
chrome, prof, base, blue, other = sys.argv[1:6]
others = set(open(other).read().split())
def check(desc, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + desc + ("" if cond else ": " + str(detail)[:300]), flush=True)
def leaked(html):
    return sorted(others & set(re.findall(r"[a-z]+\.[a-z0-9]+", html)))
with Browser(chrome, prof) as b:
    b.goto(base + "/console/login")
    b.submit("document.getElementById('login')", {"token": blue})
    check("ops-blue logs in", "ops-blue (operator; tenants blue)" in (b.text("#who") or ""), b.text("body"))
    seen, body = {}, {}
    for path in ("/console", "/console?q=act", "/console?after=page.300", "/console/job?id=page.003",
                 "/console/job?id=act.hang", "/api/cluster", "/api/cluster?section=jobs&q=page",
                 "/api/job?id=page.003", "/api/job?id=act.hang"):
        b.goto(base + path)
        seen[path], body[path] = b.js("document.documentElement.outerHTML"), b.text("body")
        # the id asked for is echoed by the page that says there is no such job
        bad = [i for i in leaked(seen[path]) if not path.endswith("=" + i)]
        check("%s shows no job id of another tenant" % path, not bad, bad)
    check("the cluster page lists blue's jobs (page.003) and the gate over them (group:default)",
          "page.003" in seen["/console"] and "group:default" in seen["/console"], seen["/console"][-300:])
    check("it shows no whole-cluster figure (shards, triggers by state, the node's charts of every tenant's fires, lateness and backlog)",
          'id="scoped"' in seen["/console"] and 'id="shards"' not in seen["/console"]
          and 'id="charts-withheld"' in seen["/console"] and 'class="chart"' not in seen["/console"])
    check("another tenant's job is no job (as the API's 404), on its page and in its JSON",
          "no job with this id" in seen["/console/job?id=act.hang"]
          and json.loads(body["/api/job?id=act.hang"]).get("error") == "no job with this id",
          (seen["/console/job?id=act.hang"][-300:], body["/api/job?id=act.hang"]))
    m = json.loads(body["/api/cluster"])
    check("/api/cluster with the session: blue's 150 jobs, blue's backlog, no ticket of shop, no shards",
          m["jobs"]["total"] == 150 and [t["name"] for t in m["backlog"]["tenants"]] in ([], ["blue"])
          and m["tickets"]["open"] == 0 and "shards" not in m and m["history"] is None,
          (m["jobs"]["total"], m["backlog"], m["tickets"]["open"], sorted(m)))
PY
rc=$?
browser_checks "$PALISADE_TEST_TMP/browser-blue.out"
expect_eq "the blue browser scenario ran to its end" 0 "$rc"
"$PAL" resume --group default --reason "end of the group gate" >/dev/null || fail "resume --group default"
echo "    figure: /api/cluster as ops-blue $(curl -s -o /dev/null -w '%{time_total}' -b "$PALISADE_TEST_TMP/jar-blue" "http://$A/api/cluster") s, unscoped $(curl -s -o /dev/null -w '%{time_total}' "http://$A/api/cluster") s"
echo "  -- a page waiting on the database holds one admin thread, not the endpoint"
"$PSQL" "$PALISADE_PG" -XAtq -c "BEGIN; LOCK TABLE gates IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT" >/dev/null &
LOCK_PID=$!
wait_until "a lock on gates held" 5 has "select count(*) from pg_locks l join pg_class c on c.oid = l.relation where l.database = (select oid from pg_database where datname = current_database()) and c.relname = 'gates' and l.mode = 'AccessExclusiveLock' and l.granted"
curl -s -o /dev/null -w '%{time_total}' "http://$A/console" >"$PALISADE_TEST_TMP/page-time" &
PAGE_PID=$!
sleep 0.3
hz=$(curl -s -o /dev/null -w '%{time_total}' "http://$A/healthz")
mt=$(curl -s -o /dev/null -w '%{time_total}' "http://$A/metrics")
wait $PAGE_PID
wait $LOCK_PID
pg=$(cat "$PALISADE_TEST_TMP/page-time")
echo "    figure: the console page took $pg s (waiting on the lock); meanwhile /healthz $hz s, /metrics $mt s"
check "the page did wait on the database (over 1 s)" awk "BEGIN { exit !($pg > 1.0) }"
check "/healthz and /metrics answered within 0.5 s meanwhile" awk "BEGIN { exit !($hz < 0.5 && $mt < 0.5) }"
echo "    figure: test_console_act took $((SECONDS - T0)) s"
finish
