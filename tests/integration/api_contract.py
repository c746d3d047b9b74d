#!/usr/bin/env python3
"""The API's contract test (tests/integration/test_api_contract.sh).

Calls every operation of docs/api/openapi.json on a live node and validates
each answer against the document: its status must be one the operation
documents, its content type JSON (problem+json for errors) and its body
valid against the documented schema (jsonschema, Draft 2020-12, the dialect
of OpenAPI 3.1).  Also fails when the node serves a document other than the
repository's, when src/api/api.c routes a path the document does not
describe, or the document one that api.c does not route.

Usage: api_contract.py BASE_URL ADMIN_TOKEN DOC API_C
Prints one line per call and a summary; exits 1 on any failure.
"""
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import jsonschema

BASE, TOKEN, DOC, SRC = sys.argv[1:5]
doc = json.load(open(DOC))
failures = []
called = set()


def deref(node):
    """The schema with every local $ref replaced by its target."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            return deref(target)
        return {k: deref(v) for k, v in node.items()}
    if isinstance(node, list):
        return [deref(v) for v in node]
    return node


def template_of(path):
    """The documented path template a concrete path matches, or None."""
    for tmpl in doc["paths"]:
        rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", tmpl) + "$"
        if re.match(rx, path):
            return tmpl
    return None


def call(method, path, body=None, token=TOKEN, ctype="application/json", headers=None, want=None):
    """METHOD PATH, validated against the document; returns (status, json)."""
    url = BASE + path
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", ctype)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    # a write over the token's rate (60 at once, 20 a second; this script
    # sends about 80) waits as its 429 says and is sent again
    for _ in range(5):
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, rtype, raw = r.status, r.headers.get("Content-Type", ""), r.read()
        except urllib.error.HTTPError as e:
            status, rtype, raw = e.code, e.headers.get("Content-Type", ""), e.read()
            if status == 429 and want != 429:
                time.sleep(float(e.headers.get("Retry-After") or 1))
                continue
        break
    label = f"{method} {path} -> {status}"
    tmpl = template_of(path.split("?")[0])
    op = doc["paths"].get(tmpl, {}).get(method.lower()) if tmpl else None
    problems = []
    if op is None:
        problems.append("not a documented operation")
    else:
        called.add((method.lower(), tmpl))
        resp = op["responses"].get(str(status))
        if resp is None:
            problems.append(f"status {status} is not documented (documented: {sorted(op['responses'])})")
        else:
            resp = deref(resp)
            want_type = next(iter(resp["content"]))
            if not rtype.startswith(want_type):
                problems.append(f"content type {rtype!r}, documented {want_type!r}")
            try:
                value = json.loads(raw)
                jsonschema.Draft202012Validator(resp["content"][want_type]["schema"]).validate(value)
            except (ValueError, jsonschema.ValidationError) as e:
                problems.append(f"body does not match the schema: {str(e).splitlines()[0]}")
    if want is not None and status != want:
        problems.append(f"expected status {want}")
    print(("    ok   " if not problems else "    FAIL ") + label + ("" if not problems else ": " + "; ".join(problems)))
    failures.extend(label + ": " + p for p in problems)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


# The served document is the repository's.
st, served = call("GET", "/api/v1/openapi.json", token=None, want=200)
if served != doc:
    failures.append("the node serves another document than " + DOC)
    print("    FAIL the served document differs from the repository's")

# Every route of api.c is documented, and every documented route routed.
routed = set()
for m, p in re.findall(r'\{"(GET|POST|DELETE)", "(/api/v1[^"]*)"', open(SRC).read()):
    routed.add((m.lower(), p))
documented = {(m, re.sub(r"\{[^}]+\}", "*", p)) for p, ops in doc["paths"].items() for m in ops}
for r in sorted(routed - documented):
    failures.append(f"undocumented route {r[0].upper()} {r[1]}")
    print(f"    FAIL undocumented route {r[0].upper()} {r[1]}")
for r in sorted(documented - routed):
    failures.append(f"documented route not served {r[0].upper()} {r[1]}")
    print(f"    FAIL documented route not served {r[0].upper()} {r[1]}")

# What each route accepts (PAL_API_ACCEPTS beside its handler, named by the
# route table): the document lists the same query arguments and body fields,
# and its JSON request schemas allow no other (additionalProperties: false).
# A name not listed is refused before anything is done: 400 for a query
# argument, 422 for a body field (docs/api.md, "Unknown fields and arguments").
src_dir = SRC.rsplit("/", 1)[0]
import glob
accepts = {"a_openapi": (set(), set())}
for f in glob.glob(src_dir + "/*.c"):
    for name, body, query in re.findall(r'PAL_API_ACCEPTS\((\w+),\s*"([^"]*)",\s*"([^"]*)"\)', open(f).read()):
        accepts["pal_api__a_" + name] = (set(body.split()), set(query.split()))
route_accepts = {}
for m, p, a in re.findall(r'\{"(GET|POST|DELETE)",\s*"(/api/v1[^"]*)",\s*\w+,\s*\w+,\s*&(\w+)', open(SRC).read()):
    if a not in accepts:
        failures.append(f"route {m} {p}: no PAL_API_ACCEPTS for {a}")
        print(f"    FAIL route {m} {p}: no PAL_API_ACCEPTS for {a}")
        continue
    route_accepts[(m.lower(), p)] = accepts[a]
for tmpl, ops in doc["paths"].items():
    for m, op in ops.items():
        key = (m, re.sub(r"\{[^}]+\}", "*", tmpl))
        if key not in route_accepts:
            continue
        body_c, query_c = route_accepts[key]
        params = [deref(x) for x in op.get("parameters", [])]
        query_d = {x["name"] for x in params if x.get("in") == "query"}
        rb = deref(op.get("requestBody", {})).get("content", {}).get("application/json")
        body_d = set()
        if rb:
            sch = rb["schema"]
            body_d = set(sch.get("properties", {}))
            if sch.get("additionalProperties") is not False:
                failures.append(f"{m.upper()} {tmpl}: request schema without additionalProperties: false")
                print(f"    FAIL {m.upper()} {tmpl}: request schema without additionalProperties: false")
        for what, c_set, d_set in (("query arguments", query_c, query_d), ("body fields", body_c, body_d)):
            if c_set != d_set:
                failures.append(f"{m.upper()} {tmpl}: {what} accepted {sorted(c_set)}, documented {sorted(d_set)}")
                print(f"    FAIL {m.upper()} {tmpl}: {what} accepted {sorted(c_set)}, documented {sorted(d_set)}")
        path = re.sub(r"\{[^}]+\}", "x", tmpl)
        tok = None if op.get("security") == [] else TOKEN
        st, pb = call(m.upper(), path + "?zz_unknown=1", token=tok, want=400)
        if pb and pb.get("unknown") != ["zz_unknown"]:
            failures.append(f"{m.upper()} {tmpl}?zz_unknown=1: the problem's unknown is {pb.get('unknown')}")
        if rb:
            st, pb = call(m.upper(), path, {"zz_unknown": 1}, want=422)
            if pb and (pb.get("unknown") != ["zz_unknown"] or set(pb.get("accepted", [])) != body_c):
                failures.append(f"{m.upper()} {tmpl} body zz_unknown: the problem's unknown/accepted are {pb.get('unknown')}/{pb.get('accepted')}")

R = {"reason": "contract test"}
call("GET", "/api/v1/status", want=200)
call("GET", "/api/v1/status?x=1&x=1", want=400)
call("GET", "/api/v1/verify?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", want=200)
call("GET", "/api/v1/verify?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z&job=c.one", want=200)
call("GET", "/api/v1/verify?from=nope&to=2026-01-01T01:00:00Z", want=400)
# a to after the database clock: the range ends at the clock, and the answer says so
st, v = call("GET", "/api/v1/verify?from=2026-01-01T00:00:00Z&to=2099-01-01T00:00:00Z&job=c.one", want=200)
if st == 200 and (v.get("to_clamped") is not True or v.get("to", "9") >= "2099"):
    failures.append(f"verify to 2099: not taken as the database clock: {v}")
COST = "/api/v1/report/cost?from=2026-01-01T00:00:00Z&to=2099-01-01T00:00:00Z"
st, rep = call("GET", COST, want=200)
if st != 200 or rep["total"]["job_id"] is not None or rep["jobs_truncated"]:
    failures.append(f"report cost of every job: {rep}")
st, rep = call("GET", COST + "&job=c.one&limit=1", want=200)
if st != 200 or [j["job_id"] for j in rep["jobs"]] not in ([], ["c.one"]):
    failures.append(f"report cost of c.one: {rep}")
call("GET", COST + "&job=nope", want=404)
call("GET", COST + "&job=c.one&group=default", want=400)
call("GET", "/api/v1/report/cost?from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", want=400)
call("GET", COST + "&limit=0", want=400)
st, page = call("GET", "/api/v1/jobs?limit=1", want=200)
call("GET", "/api/v1/jobs?limit=1&cursor=" + ((page or {}).get("next_cursor") or ""), want=200)
call("GET", "/api/v1/jobs?limit=0", want=400)
call("GET", "/api/v1/jobs", token=None, want=401)
call("GET", "/api/v1/jobs/c.one", want=200)
call("GET", "/api/v1/jobs/nope", want=404)
# labels: shown on the job and the list, and ?label=KEY=VALUE filters on them
st, one = call("GET", "/api/v1/jobs/c.one", want=200)
if (one or {}).get("labels") != {"team": "core"}:
    failures.append(f"jobs/c.one: labels {(one or {}).get('labels')}, expected team=core")
for q, want_ids in (("team=core", ["c.one"]), ("team=other", []), ("team=", []), ("nope=core", [])):
    st, pg = call("GET", "/api/v1/jobs?label=" + q, want=200)
    if [j["job_id"] for j in (pg or {}).get("items", [])] != want_ids:
        failures.append(f"jobs?label={q}: {pg}, expected {want_ids}")
call("GET", "/api/v1/jobs?label=team", want=400)
call("GET", "/api/v1/jobs?label=-bad=x", want=400)
# ?next=N: each job's next instants (c.one fires every minute, at second 0)
st, nx = call("GET", "/api/v1/jobs/c.one?next=3", want=200)
if st == 200 and (len(nx.get("next") or []) != 3 or not all(t.endswith(":00Z") for t in nx["next"])):
    failures.append(f"jobs/c.one?next=3: not three instants at second 0: {nx.get('next')}")
st, nx = call("GET", "/api/v1/jobs?next=2&limit=5", want=200)
if st == 200 and [len(j.get("next") or []) for j in nx["items"]] != [2] * len(nx["items"]):
    failures.append(f"jobs?next=2: not two instants per job: {nx}")
call("GET", "/api/v1/jobs?next=0", want=400)
call("GET", "/api/v1/jobs/c.one?next=1001", want=400)
st, tm = call("GET", "/api/v1/jobs?next=1000&limit=101", want=422)
if st == 422 and (tm.get("type") != "urn:palisade:problem:too-many-instants" or tm.get("limit") != 100000):
    failures.append(f"jobs?next=1000&limit=101 over the bound: {tm}")
call("POST", "/api/v1/jobs/c.one/pause", R, want=200)
call("POST", "/api/v1/jobs/c.one/pause", {}, want=422)
call("POST", "/api/v1/jobs/c.one/pause", "x=1", ctype="application/x-www-form-urlencoded", want=415)
call("POST", "/api/v1/jobs/c.one/resume", {}, want=200)
st, run = call("POST", "/api/v1/jobs/c.one/trigger", {"reason": "contract", "at": "2098-01-01T00:00:30Z", "request_id": "contract-1"}, want=201)
call("POST", "/api/v1/jobs/c.one/trigger", {"reason": "contract", "at": "2098-01-01T00:00:30Z", "request_id": "contract-1"}, want=200)
tid = run["trigger_ids"][0] if run else 0
st, one = call("GET", f"/api/v1/triggers?job=c.one&limit=1", want=200)
# ?trace_id= alone: the one trigger whose calls carry it, whatever its job
if st == 200 and one["items"]:
    tr0 = one["items"][0]
    st, bytrace = call("GET", "/api/v1/triggers?trace_id=" + tr0["trace_id"], want=200)
    if st == 200 and [t["id"] for t in bytrace["items"]] != [tr0["id"]]:
        failures.append(f"triggers?trace_id={tr0['trace_id']}: expected trigger {tr0['id']}, got {bytrace['items']}")
else:
    failures.append(f"triggers?job=c.one: no trigger to take a trace id from: {one}")
call("GET", "/api/v1/triggers?trace_id=nothex", want=400)
call("GET", "/api/v1/triggers", want=400)
call("GET", f"/api/v1/triggers/{tid}/attempts", want=200)
call("POST", f"/api/v1/triggers/{tid}/cancel", R, want=200)
call("POST", f"/api/v1/triggers/{tid}/cancel", R, want=409)
call("POST", "/api/v1/jobs/c.one/cancel", R, want=200)
call("POST", "/api/v1/jobs/c.one/backfill", {"reason": "contract", "from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:04:00Z", "request_id": "bf-1"}, want=200)
# the backfill's instants (00:00..00:04) in a time range: since and until
for q, want_at in (("until=2026-01-01T00:02:00Z", ["2026-01-01T00:01:00", "2026-01-01T00:00:00"]),
                   ("since=2026-01-01T00:01:00Z&until=2026-01-01T00:03:00Z", ["2026-01-01T00:02:00", "2026-01-01T00:01:00"])):
    st, tr = call("GET", "/api/v1/triggers?job=c.one&" + q, want=200)
    if st == 200 and [t["scheduled_at"][:19] for t in tr["items"]] != want_at:
        failures.append(f"triggers?{q}: expected {want_at}, got {[t['scheduled_at'] for t in tr['items']]}")
call("GET", "/api/v1/triggers?job=c.one&until=soon", want=400)
# every job's triggers over [since, until) (at most a day): keyset pages
# newest first, the backfill's 00:02, 00:01, 00:00 of c.one
ALL = "/api/v1/triggers?since=2026-01-01T00:00:00Z&until=2026-01-01T00:03:00Z"
got, cursor = [], ""
for _ in range(4):
    st, tr = call("GET", ALL + "&limit=2" + (f"&cursor={cursor}" if cursor else ""), want=200)
    got += [(t["job_id"], t["scheduled_at"][:19]) for t in (tr or {}).get("items", [])]
    cursor = (tr or {}).get("next_cursor")
    if not cursor:
        break
want_all = [("c.one", "2026-01-01T00:02:00"), ("c.one", "2026-01-01T00:01:00"), ("c.one", "2026-01-01T00:00:00")]
if got != want_all:
    failures.append(f"triggers of every job in pages of 2: expected {want_all}, got {got}")
st, tr = call("GET", ALL + "&tenant=default&state=" + ((tr or {}).get("items") or [{"state": "x"}])[0]["state"], want=200)
if st == 200 and len(tr["items"]) != 3:
    failures.append(f"triggers of every job of tenant default in the backfill's state: {tr}")
st, tr = call("GET", ALL + "&tenant=nobody", want=200)
if st == 200 and tr["items"]:
    failures.append(f"triggers of every job of tenant nobody: {tr}")
call("GET", "/api/v1/triggers?since=2026-01-01T00:00:00Z", want=400)
call("GET", "/api/v1/triggers?since=2026-01-01T00:00:00Z&until=2026-01-02T00:00:01Z", want=400)
call("GET", "/api/v1/triggers?since=2026-01-01T00:00:00Z&until=2026-01-01T00:00:00Z", want=400)
call("GET", ALL + "&cursor=1_2", want=400)
call("POST", "/api/v1/jobs/c.one/backfill", {"reason": "contract", "from": "2020-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z", "max": 10}, want=422)
# an instant with a fraction of a second would be cut off into another: refused
call("POST", "/api/v1/jobs/c.one/trigger", {"reason": "contract", "at": "2098-01-01T00:00:00.9Z"}, want=422)
call("POST", "/api/v1/jobs/c.one/backfill", {"reason": "contract", "from": "2026-01-01T00:00:00.5Z", "to": "2026-01-01T00:04:00Z"}, want=422)
call("POST", "/api/v1/jobs/c.one/release", R, want=404)
call("GET", "/api/v1/misfires?job=c.one", want=200)
for kind in ("groups/default", "tenants/default"):
    call("POST", f"/api/v1/{kind}/pause", R, want=200)
    call("POST", f"/api/v1/{kind}/resume", {}, want=200)
call("POST", "/api/v1/pause", R, want=200)
call("POST", "/api/v1/resume", R, want=200)
st, tickets = call("GET", "/api/v1/tickets", want=200)
tk = tickets["items"][0]["id"] if tickets and tickets["items"] else 0
# filtered by job and by tenant: c.one's ticket is the default tenant's
for q, want_ids in (("job=c.one", [tk]), ("job=nope", []), ("tenant=default", [tk]), ("tenant=nobody", []),
                    ("job=c.one&tenant=nobody", [])):
    st, tl = call("GET", "/api/v1/tickets?" + q, want=200)
    if st == 200 and [t["id"] for t in tl["items"]] != want_ids:
        failures.append(f"tickets?{q}: expected ticket ids {want_ids}, got {[t['id'] for t in tl['items']]}")
call("GET", f"/api/v1/tickets/{tk}", want=200)
call("POST", f"/api/v1/tickets/{tk}/resolve", {"reason": "contract", "action": "retry"}, want=422)
call("POST", f"/api/v1/tickets/{tk}/resolve", {"reason": "contract", "action": "abandon"}, want=200)
call("POST", f"/api/v1/tickets/{tk}/resolve", {"reason": "contract", "action": "abandon"}, want=409)
call("GET", "/api/v1/gates", want=200)
call("GET", "/api/v1/audit?limit=2", want=200)
# a time range: since and until
for q, some in (("until=2000-01-01T00:00:00Z", False), ("since=2000-01-01T00:00:00Z&until=2099-01-01T00:00:00Z", True),
                ("since=2099-01-01T00:00:00Z", False)):
    st, al = call("GET", "/api/v1/audit?" + q, want=200)
    if st == 200 and bool(al["items"]) != some:
        failures.append(f"audit?{q}: expected {'some' if some else 'no'} rows, got {len(al['items'])}")
call("GET", "/api/v1/audit?until=soon", want=400)
st, created = call("POST", "/api/v1/tokens", {"name": "contract-viewer", "role": "viewer"}, want=201)
call("GET", "/api/v1/tokens", want=200)
if created:
    call("POST", "/api/v1/jobs/c.one/pause", R, token=created["token"], want=403)
call("POST", "/api/v1/tokens/contract-viewer/revoke", {}, want=200)
call("POST", "/api/v1/tokens/contract-viewer/revoke", {}, want=404)
JOB = 'jobs:\n  - {id: c.two, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n'
st, dry = call("POST", "/api/v1/apply?dry_run=true", JOB, ctype="application/yaml", want=200)
call("POST", "/api/v1/plan/diff?file=c.yaml", JOB, ctype="application/yaml", want=200)
# ?count= and ?from=, as plan diff's --count and --from
st, pd = call("POST", "/api/v1/plan/diff?count=2&from=2030-01-01T00:00:00Z", JOB, ctype="application/yaml", want=200)
if not pd or [i["at"] for j in pd.get("jobs", []) for i in j["new"]] != ["2030-01-01T01:00:00Z", "2030-01-01T02:00:00Z"]:
    failures.append(f"plan diff with count=2 from 2030-01-01: {pd}")
call("POST", "/api/v1/plan/diff?count=0", JOB, ctype="application/yaml", want=400)
call("POST", "/api/v1/plan/diff?from=soon", JOB, ctype="application/yaml", want=400)
# over the bound of one plan diff (11 jobs x 10000 instants > 100000): 422 too-many-instants
MANY = "jobs:\n" + "".join(f'  - {{id: c.many{i}, schedule: {{cron: "* * * * * ?"}}, target: {{url: "http://127.0.0.1:9/x"}}}}\n' for i in range(11))
st, tm = call("POST", "/api/v1/plan/diff?count=10000", MANY, ctype="application/yaml", want=422)
if st == 422 and (tm.get("type") != "urn:palisade:problem:too-many-instants" or tm.get("limit") != 100000):
    failures.append(f"plan diff over its bound: {tm}")
call("POST", "/api/v1/apply?reason=contract", JOB, ctype="application/yaml", want=200)
call("POST", "/api/v1/apply", "jobs:\n  - {id: c.bad, schedule: {cron: \"61 * * * * ?\"}}\n", ctype="application/yaml", want=422)
call("POST", "/api/v1/apply", JOB, want=415)
# One body, several YAML documents: each loaded, problems at the body's lines.
TWO = JOB + '---\njobs:\n  - {id: c.three, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n'
st, res = call("POST", "/api/v1/apply", TWO, ctype="application/yaml", want=200)
if not res or sorted(j["job_id"] for j in res.get("jobs", [])) != ["c.three", "c.two"]:
    failures.append("a two-document body did not apply both documents' jobs")
# Retire c.two (it was applied above): once retired, then already retired.
st, gone = call("DELETE", "/api/v1/jobs/c.two", R, want=200)
if not gone or gone.get("outcome") != "retired":
    failures.append(f"DELETE of a live job: outcome {gone and gone.get('outcome')!r}, want 'retired'")
st, again = call("DELETE", "/api/v1/jobs/c.two?reason=contract", want=200)
if not again or again.get("outcome") != "already retired":
    failures.append(f"a second DELETE: outcome {again and again.get('outcome')!r}, want 'already retired'")
call("DELETE", "/api/v1/jobs/c.three", {}, want=422)
call("DELETE", "/api/v1/jobs/nope", R, want=404)
BAD2 = JOB + '---\njobs:\n  - {id: c.four, schedule: {cron: "61 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n'
st, res = call("POST", "/api/v1/apply", BAD2, ctype="application/yaml", want=422)
lines = [e["line"] for e in (res or {}).get("errors", [])]
if lines != [5]:
    failures.append(f"the second document's problem should be at line 5 of the body, got {lines}")
    print(f"    FAIL second document's problem at lines {lines}, want [5]")

# Prune: every live job the body does not define goes (c.one, c.three).
st, dry = call("POST", "/api/v1/apply?dry_run=true&prune=true", JOB, ctype="application/yaml", want=200)
if not dry or "c.one" not in dry.get("would_retire", []) or "c.two" in dry.get("would_retire", []):
    failures.append(f"a dry run with prune: would_retire {dry and dry.get('would_retire')}")
st, pr = call("POST", "/api/v1/apply?prune=true&reason=contract", JOB, ctype="application/yaml", want=200)
gone = sorted(r["job_id"] for r in (pr or {}).get("retired", []) if r["outcome"] == "retired")
if gone != ["c.one", "c.three"]:
    failures.append(f"apply with prune retired {gone}, want ['c.one', 'c.three']")
    print(f"    FAIL apply with prune retired {gone}")
call("POST", "/api/v1/apply?prune=maybe", JOB, ctype="application/yaml", want=400)
# an argument given twice, on any route: refused, not read as one of them
call("POST", "/api/v1/apply?dry_run=true&dry_run=false", JOB, ctype="application/yaml", want=400)

# Shared calendars: applied with a job naming one, read back a page at a
# time; a change applied alone gives the job a version (it follows), and
# a token limited to another tenant neither sees it nor may change it.
CAL = 'calendars:\n  - {name: c-cal, exclude: {weekdays: [%s]}}\n'
CJOB = 'jobs:\n  - {id: c.cal, schedule: {cron: "0 0 * * * ?", calendar: c-cal}, target: {url: "http://127.0.0.1:9/x"}}\n'
call("POST", "/api/v1/apply?reason=contract", CAL % "sun" + CJOB, ctype="application/yaml", want=200)
call("POST", "/api/v1/apply?reason=contract", 'calendars:\n  - {name: c-cal2, exclude: {dates: ["2030-01-01"]}}\n', ctype="application/yaml", want=200)
st, cp = call("GET", "/api/v1/calendars?limit=1", want=200)
if not cp or [c["name"] for c in cp["items"]] != ["c-cal"] or not cp.get("next_cursor"):
    failures.append(f"the first page of calendars: {cp}")
st, cp2 = call("GET", "/api/v1/calendars?limit=1&cursor=" + ((cp or {}).get("next_cursor") or ""), want=200)
if not cp2 or [c["name"] for c in cp2["items"]] != ["c-cal2"] or cp2.get("next_cursor") is not None:
    failures.append(f"the second page of calendars: {cp2}")
call("GET", "/api/v1/calendars?limit=0", want=400)
st, one = call("GET", "/api/v1/calendars/c-cal", want=200)
if not one or one.get("latest_version") != 1 or one.get("jobs") != [{"job": "c.cal", "version": 1, "calendar_version": 1}]:
    failures.append(f"GET of calendar c-cal: {one}")
call("GET", "/api/v1/calendars/nope", want=404)
st, pd = call("POST", "/api/v1/plan/diff", CAL % "sat", ctype="application/yaml", want=200)
if not pd or [(j["job_id"], j["status"], j.get("follows")) for j in pd.get("jobs", [])] != [("c.cal", "changed", "calendar c-cal v2")]:
    failures.append(f"plan diff of a calendar alone: its job should follow it: {pd}")
st, fol = call("POST", "/api/v1/apply?reason=contract", CAL % "sat", ctype="application/yaml", want=200)
if not fol or fol.get("jobs") != [{"job_id": "c.cal", "outcome": "updated", "version": 2}]:
    failures.append(f"a calendar applied alone: its job should follow it (updated v2): {fol}")
# a job's versions a page at a time: c.cal has two now
st, v1 = call("GET", "/api/v1/jobs/c.cal?limit=1", want=200)
st, v2 = call("GET", "/api/v1/jobs/c.cal?limit=1&cursor=" + ((v1 or {}).get("versions_next_cursor") or ""), want=200)
if not v1 or not v2 or [v["version"] for v in v1["versions"] + v2["versions"]] != [1, 2] or v2["versions_next_cursor"] is not None:
    failures.append(f"c.cal's versions in pages of 1: {v1} {v2}")
    print(f"    FAIL c.cal's versions in pages of 1: {v1} {v2}")
call("GET", "/api/v1/jobs/c.cal?cursor=v1", want=400)
# a calendar's jobs a page at a time: c-cal2 named by three jobs
call("POST", "/api/v1/apply?reason=contract", 'calendars:\n  - {name: c-cal2, exclude: {dates: ["2030-01-01"]}}\njobs:\n' + "".join(
    f'  - {{id: c.h{i}, schedule: {{cron: "0 0 * * * ?", calendar: c-cal2}}, target: {{url: "http://127.0.0.1:9/x"}}}}\n'
    for i in range(3)), ctype="application/yaml", want=200)
jobs, cursor, pages = [], "", []
for _ in range(5):
    st, cp = call("GET", "/api/v1/calendars/c-cal2?limit=2" + (f"&cursor={cursor}" if cursor else ""), want=200)
    pages.append(len((cp or {}).get("jobs", [])))
    jobs += [j["job"] for j in (cp or {}).get("jobs", [])]
    cursor = (cp or {}).get("jobs_next_cursor")
    if not cursor:
        break
if jobs != ["c.h0", "c.h1", "c.h2"] or pages != [2, 1]:
    failures.append(f"c-cal2's jobs in pages of 2: {jobs} {pages}")
    print(f"    FAIL c-cal2's jobs in pages of 2: {jobs} {pages}")
call("GET", "/api/v1/calendars/c-cal2?limit=0", want=400)
st, one = call("GET", "/api/v1/calendars/c-cal", want=200)
if not one or one.get("jobs") != [{"job": "c.cal", "version": 2, "calendar_version": 2}]:
    failures.append(f"after the change, c.cal on c-cal v2: {one}")
st, tv = call("POST", "/api/v1/tokens", {"name": "contract-other", "role": "admin", "tenants": ["t-other"]}, want=201)
if tv:
    st, seen = call("GET", "/api/v1/calendars", token=tv["token"], want=200)
    if not seen or seen["items"]:
        failures.append(f"a token of another tenant sees calendars its jobs do not name: {seen}")
    call("GET", "/api/v1/calendars/c-cal", token=tv["token"], want=404)
    call("GET", COST + "&tenant=t-other", token=tv["token"], want=200)
    st, tr = call("GET", ALL, token=tv["token"], want=200)
    if st == 200 and tr["items"]:
        failures.append(f"a token of another tenant sees the triggers of every job: {tr}")
    call("GET", COST + "&tenant=default", token=tv["token"], want=404)
    call("GET", COST + "&job=c.one", token=tv["token"], want=404)
    call("GET", COST + "&group=default", token=tv["token"], want=403)
    call("GET", COST, token=tv["token"], want=403)
    call("POST", "/api/v1/apply?reason=contract", CAL % "mon", token=tv["token"], ctype="application/yaml", want=403)
    # its plan diff of the change: c.cal (tenant default) counted, not shown
    st, hid = call("POST", "/api/v1/plan/diff", CAL % "mon", token=tv["token"], ctype="application/yaml", want=200)
    if not hid or hid.get("jobs") != [] or hid.get("hidden_followers") != 1:
        failures.append(f"another tenant's plan diff of c-cal shows c.cal or does not count it: {hid}")
    # a job id of tenant default in its body: 404, as its GET of that job
    call("POST", "/api/v1/plan/diff", 'jobs:\n  - {id: c.cal, tenant: t-other, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n',
         token=tv["token"], ctype="application/yaml", want=404)
    st, one = call("GET", "/api/v1/calendars/c-cal", want=200)
    if not one or one.get("latest_version") != 2:
        failures.append(f"a refused calendar change stored something: {one}")

# rollback: one scope, a reason; another tenant's job refused.
if tv:
    call("POST", "/api/v1/rollback", {"job": "c.one", "reason": "contract"}, token=tv["token"], want=403)
st, rb = call("POST", "/api/v1/rollback", {"job": "c.one", "reason": "contract", "wait_ms": 0}, want=200)
if st != 200 or rb["scope"] != "job:c.one":
    failures.append(f"rollback of c.one: {rb}")
call("POST", "/api/v1/rollback", {"job": "c.one"}, want=422)
call("POST", "/api/v1/rollback", {"job": "c.one", "group": "default", "reason": "contract"}, want=422)
call("POST", "/api/v1/rollback", {"job": "nope", "reason": "contract"}, want=404)
call("POST", "/api/v1/rollback", {"job": "c.one", "reason": "contract", "wait_ms": -1}, want=422)

# shadow: a scope in shadow, listed; again: already.
st, sh = call("POST", "/api/v1/shadow", {"group": "c-shadow", "reason": "contract"}, want=200)
st, sh2 = call("POST", "/api/v1/shadow", {"group": "c-shadow", "reason": "contract"}, want=200)
if not sh or sh.get("already") is not False or not sh2 or sh2.get("already") is not True:
    failures.append(f"shadow of group c-shadow, then again: {sh} {sh2}")
st, sl = call("GET", "/api/v1/shadow", want=200)
if st != 200 or "group:c-shadow" not in [r["scope"] for r in sl["items"]]:
    failures.append(f"shadow list without group:c-shadow: {sl}")
call("POST", "/api/v1/shadow", {"reason": "contract"}, want=422)
# shadow diff: c.two's record against its plan (it fires every hour), once
# the controller activated the version apply?prune gave it after its DELETE
# (until then its plan is the retiring version's: no instants).
for _ in range(100):
    st, c2 = call("GET", "/api/v1/jobs/c.two", want=200)
    if not c2 or c2.get("active_version") == c2.get("latest_version"):
        break
    time.sleep(0.1)
SD = "/api/v1/shadow/diff?from=2099-01-01T00:00:00Z&to=2099-01-01T03:00:00Z&job=c.two"
st, sd = call("POST", SD, "c.two,2099-01-01T00:00:00Z\nc.two,2099-01-01T01:00:00Z\n", ctype="text/csv", want=200)
if not sd or (sd["equal"], sd["counts"]["both"], [d["at"] for d in sd["differences"]]) != (False, 2, ["2099-01-01T02:00:00Z"]):
    failures.append(f"shadow diff of c.one: {sd}")
    print(f"    FAIL shadow diff of c.one: {sd}")
st, bad = call("POST", SD, "c.two,2099-01-01T00:00:00Z\nc.two 2099\n", ctype="text/plain", want=422)
if not bad or bad.get("line") != 2:
    failures.append(f"shadow diff of a bad line 2: {bad}")
    print(f"    FAIL shadow diff of a bad line 2: {bad}")
call("POST", SD, {"x": 1}, want=415)
call("POST", SD + "&limit=0", "", ctype="text/csv", want=400)
call("POST", SD.replace("c.two", "nope"), "", ctype="text/csv", want=404)
# over the bound of one shadow diff: c.fast (every second, in shadow: no call) over 12 days, 1,036,800 instants
call("POST", "/api/v1/apply?reason=contract", 'jobs:\n  - {id: c.fast, mode: shadow, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n', ctype="application/yaml", want=200)
st, tm = call("POST", "/api/v1/shadow/diff?from=2099-01-01T00:00:00Z&to=2099-01-13T00:00:00Z&job=c.fast", "", ctype="text/csv", want=422)
if st == 422 and (tm.get("type") != "urn:palisade:problem:too-many-instants" or tm.get("limit") != 1000000):
    failures.append(f"shadow diff over its bound: {tm}")
if tv:
    call("GET", "/api/v1/shadow", token=tv["token"], want=403)
    call("POST", "/api/v1/shadow", {"group": "c-shadow", "reason": "contract"}, token=tv["token"], want=403)

# cutover: c.one is in shadow (the roll-back above); a step, not a narrower one.
import datetime
LATER = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
if tv:
    call("POST", "/api/v1/cutover", {"job": "c.one", "reason": "contract", "at": LATER}, token=tv["token"], want=403)
st, co = call("POST", "/api/v1/cutover?dry_run=true", {"job": "c.one", "reason": "contract", "at": LATER}, want=200)
# c.one was pruned above: retired, so no instant of it becomes live and the
# old system keeps it (made_live names active jobs only)
if st != 200 or (co["made_live"], co["dry_run"], co["previous_percent"]) != ([], True, 0):
    failures.append(f"a dry run of a cutover of c.one to 100 %: {co}")
    print(f"    FAIL a dry run of a cutover of c.one to 100 %: {co}")
call("POST", "/api/v1/cutover?dry_run=maybe", {"job": "c.one", "reason": "contract", "at": LATER}, want=400)
# the dry run left nothing: the step below is still the first
st, co = call("POST", "/api/v1/cutover", {"job": "c.one", "reason": "contract", "at": LATER, "percent": 50, "max_pending_age_ms": 60000}, want=200)
if st != 200 or (co["scope"], co["percent"], co["previous_percent"]) != ("job:c.one", 50, 0):
    failures.append(f"cutover of c.one to 50 %: {co}")
call("POST", "/api/v1/cutover", {"job": "c.one", "reason": "contract", "at": LATER, "percent": 25}, want=400)
call("POST", "/api/v1/cutover", {"job": "c.one", "reason": "contract", "at": "2020-01-01T00:00:00Z"}, want=400)
call("POST", "/api/v1/cutover", {"job": "c.one", "reason": "contract"}, want=422)
call("POST", "/api/v1/cutover", {"job": "nope", "reason": "contract", "at": LATER}, want=404)

# No read is unbounded: every documented list (an answer with "items") takes
# ?limit=; a page of limit=1 holds one row at most, and its cursors walk the
# whole list, the rows of one page of 1000 in the same order.
for p, ops in doc["paths"].items():
    get = ops.get("get")
    schema = deref(get["responses"]["200"]["content"]["application/json"]["schema"]) if get else {}
    if "items" in schema.get("properties", {}) and not any(
            x.get("name") == "limit" for x in get.get("parameters", [])):
        failures.append(f"GET {p} answers a list without ?limit=")
        print(f"    FAIL GET {p} answers a list without ?limit=")


# Notify rules: listed a page at a time, each secret its ${NAME} reference;
# a token limited to tenant t-other sees that tenant's rule and a group's
# only while every job of the group is of t-other.
RULES = ('notify_rules:\n'
         '  - {group: c-rg, on: [failed], url: "http://127.0.0.1:9/g", secret: "${C_HOOK}"}\n'
         '  - {group: c-nojobs, on: [failed], url: "http://127.0.0.1:9/n", secret: "${C_HOOK}"}\n'
         '  - {tenant: default, on: [failed, manual], url: "http://127.0.0.1:9/d", secret: "${C_HOOK}"}\n'
         '  - {tenant: t-other, on: [quarantined], url: "http://127.0.0.1:9/o", secret: "${C_OTHER}"}\n'
         'jobs:\n'
         '  - {id: c.rg, tenant: t-other, group: c-rg, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n')
call("POST", "/api/v1/apply?reason=contract", RULES, ctype="application/yaml", want=200)
st, nr = call("GET", "/api/v1/notify_rules", want=200)
got = [(r["scope"], r["name"], r["url"][-2:], r["events"], r["secret"]) for r in (nr or {}).get("items", [])]
if got != [("group", "c-nojobs", "/n", ["failed"], "${C_HOOK}"), ("group", "c-rg", "/g", ["failed"], "${C_HOOK}"),
           ("tenant", "default", "/d", ["failed", "manual"], "${C_HOOK}"),
           ("tenant", "t-other", "/o", ["quarantined"], "${C_OTHER}")]:
    failures.append(f"GET /api/v1/notify_rules: {got}")
    print(f"    FAIL GET /api/v1/notify_rules: {got}")
if tv:
    st, seen = call("GET", "/api/v1/notify_rules", token=tv["token"], want=200)
    names = [(r["scope"], r["name"]) for r in (seen or {}).get("items", [])]
    if names != [("group", "c-rg"), ("tenant", "t-other")]:
        failures.append(f"a token of tenant t-other sees the notify rules {names}")
        print(f"    FAIL a token of tenant t-other sees the notify rules {names}")
    call("POST", "/api/v1/apply?reason=contract", 'jobs:\n  - {id: c.rg2, group: c-rg, schedule: {cron: "0 0 0 1 1 ? 2099"}, '
         'target: {url: "http://127.0.0.1:9/x"}}\n', ctype="application/yaml", want=200)
    st, seen = call("GET", "/api/v1/notify_rules", token=tv["token"], want=200)
    names = [(r["scope"], r["name"]) for r in (seen or {}).get("items", [])]
    if names != [("tenant", "t-other")]:
        failures.append(f"with a job of tenant default in group c-rg, t-other's token sees {names}")
        print(f"    FAIL with a job of tenant default in group c-rg, t-other's token sees {names}")


def walk(path, at_least):
    sep = "&" if "?" in path else "?"
    st, whole = call("GET", f"{path}{sep}limit=1000", want=200)
    rows, cursor, pages = [], None, 0
    while pages < 100:
        q = f"&cursor={urllib.parse.quote(cursor)}" if cursor else ""
        st, pg = call("GET", f"{path}{sep}limit=1{q}", want=200)
        if st != 200 or not pg:
            break
        pages += 1
        if len(pg["items"]) > 1:
            failures.append(f"{path}: a page of limit=1 holds {len(pg['items'])} rows")
        rows += pg["items"]
        cursor = pg.get("next_cursor")
        if not cursor:
            break
    # rows by their keys: a controller may update a job between two reads
    def keys(items):
        return [tuple(r.get(k) for k in ("id", "scope", "name", "job_id", "fence")) for r in items]
    if not whole or "items" not in whole or keys(rows) != keys(whole["items"]) or len(rows) < at_least:
        failures.append(f"{path}: the pages of 1 ({len(rows)} rows) are not the list of "
                        f"{len((whole or {}).get('items', []))} rows (at least {at_least} expected)")
        print(f"    FAIL {path}: its pages are not its list")
    call("GET", f"{path}{sep}limit=0", want=400)


for path, at_least in (("/api/v1/shadow", 2), ("/api/v1/tokens", 2), ("/api/v1/gates", 0),
                       ("/api/v1/tickets?all=true", 1), (f"/api/v1/triggers/{tid}/attempts", 0),
                       ("/api/v1/jobs", 1), ("/api/v1/audit?action=pause", 2),
                       ("/api/v1/calendars", 2), ("/api/v1/misfires?job=c.one", 0),
                       ("/api/v1/notify_rules", 4)):
    walk(path, at_least)
for bad in ("/api/v1/tickets?cursor=x1", "/api/v1/tokens?cursor=9_9_zz",
            f"/api/v1/triggers/{tid}/attempts?cursor=1", "/api/v1/audit?cursor=-1",
            "/api/v1/triggers?job=c.one&cursor=1_2", "/api/v1/misfires?job=c.one&cursor=x",
            # the right shape, numbers out of range: still the caller's error, not 503
            "/api/v1/audit?cursor=99999999999999999999999",
            "/api/v1/tokens?cursor=0_99999999999999999999_ab",
            "/api/v1/triggers?job=c.one&cursor=99999999999999999999_0_5",
            "/api/v1/triggers?job=c.one&cursor=99999999999999999_0_5",
            "/api/v1/misfires?job=c.one&cursor=99999999999999999_1",
            f"/api/v1/triggers/{tid}/attempts?cursor=1_99999999999999999"):
    call("GET", bad, want=400)  # a cursor the API did not give

# Last: the node drains (and exits) when asked.
call("POST", "/api/v1/drain", {"reason": "contract test"}, want=202)

ops = {(m, p) for p, o in doc["paths"].items() for m in o}
for m, p in sorted(ops - called):
    failures.append(f"{m.upper()} {p} was never called")
    print(f"    FAIL {m.upper()} {p} was never called")
print(f"  contract: {len(ops)} documented operations on {len(doc['paths'])} paths, "
      f"{len(ops & called)} called, {len(failures)} failures")
sys.exit(1 if failures else 0)
