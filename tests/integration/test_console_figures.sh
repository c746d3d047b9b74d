#!/usr/bin/env bash
# The console's figures agree with what the scheduler does and holds:
#   A. next instants (job page, jobs table) leave out the instants the
#      controller never plans: a job's `exclude:` dates;
#   B. a partitioned job whose newest instant failed in one partition (the
#      600th) shows that failure as its last failure, and its job page lists
#      the failed partition first, not 30 successes of partitions 0-29; planned
#      future instants fill neither;
#   C. an operator limited to a tenant is offered the resolve form of its
#      job's open ticket and the resume form of its job's pause gate on the
#      cluster page, as on the job page;
#   D. /api/cluster gives a login limited to tenants the serving node's
#      identity and health only, no per-shard figures of every tenant.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console's figures agree with the scheduler and the database, within a login's tenants"

fresh_db it_console_figures
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
SHARDS=2 LOOKAHEAD=2s OVERLAP=2s write_conf "$CLUSTER_CONF"
trap 'stop_all_nodes' EXIT

D0=$(date -u +%F); D1=$(date -u -d tomorrow +%F); D2=$(date -u -d '2 days' +%F)
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  # hourly, but today and tomorrow (UTC) are excluded: no instant fires
  # before the day after tomorrow
  - id: fig.excl
    tenant: shop
    schedule: {cron: "0 0 * * * ?", timezone: UTC, exclude: ["$D0", "$D1"]}
    target: {url: "http://127.0.0.1:9/never"}
  # 600 partitions per instant, never planned (its triggers are made below)
  - id: fig.parts
    tenant: shop
    partitions: 600
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:9/never"}
  - id: fig.quiet
    tenant: shop
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:9/never"}
YAML
"$PAL" apply --config "$CLUSTER_CONF" --reason setup "$NODE_DIR/jobs.yaml" >/dev/null || { echo "  apply failed"; exit 1; }

start_node r1 --roles controller
A=${NODE_ADMIN[r1]}
wait_until "r1 answers" 20 curl -sf "http://$A/healthz"
wait_until "fig.excl's version active" 20 has "select count(*) from jobs where job_id = 'fig.excl' and active_version is not null"

echo "  -- A: next instants of a job with excluded dates"
nx=$(curl -s "http://$A/api/job?id=fig.excl" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["next"]))')
echo "    /api/job next: $nx"
expect_eq "the job page's first next instant is the first of $D2 (today and tomorrow are excluded)" \
	"${D2}T00:00:00Z" "${nx%% *}"
check "and none of its 5 is on an excluded date" bash -c '! grep -qE "$1|$2" <<<"$3"' _ "$D0" "$D1" "$nx"
jn=$(curl -s "http://$A/api/cluster?section=jobs" | python3 -c 'import json,sys; r=[j for j in json.load(sys.stdin)["jobs"]["rows"] if j["job_id"]=="fig.excl"][0]; print(" ".join(r["next"]))')
echo "    jobs table next: $jn"
expect_eq "the jobs table's next instants: the first two of $D2" "${D2}T00:00:00Z ${D2}T01:00:00Z" "$jn"
cli=$("$PAL" jobs --next 2 --output json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); r=[j for j in (d if isinstance(d, list) else d.get("jobs", [])) if j.get("job_id")=="fig.excl"][0]; print(" ".join(r["next"]))' 2>&1)
echo "    palisade jobs --next 2: $cli"
expect_eq "palisade jobs --next 2 says the same" "${D2}T00:00:00Z ${D2}T01:00:00Z" "$cli"

echo "  -- B: a partitioned job's failed partition"
SHARD=$(sql "select shard from jobs where job_id = 'fig.parts'")
# one past instant: 599 partitions succeeded, the 600th failed; and one
# planned future instant (600 pending triggers), as a long lookahead makes
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, state, finished_at, last_error_class)
     SELECT 'fig.parts', 1, t, p, 'schedule', 'shop', 'default', t, $SHARD,
            CASE WHEN p = 599 THEN 'failed' ELSE 'succeeded' END, t + interval '1 second',
            CASE WHEN p = 599 THEN 'http_5xx' END
     FROM (SELECT date_trunc('minute', now()) - interval '1 minute' AS t) x, generate_series(0, 599) p" >/dev/null
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, state)
     SELECT 'fig.parts', 1, t, p, 'schedule', 'shop', 'default', t, $SHARD, 'pending'
     FROM (SELECT date_trunc('minute', now()) + interval '1 hour' AS t) x, generate_series(0, 599) p" >/dev/null
echo "    state: $(sql "select state || ':' || count(*) from triggers where job_id = 'fig.parts' group by state order by 1" | tr '\n' ' ')"
lf=$(curl -s "http://$A/api/cluster?section=jobs" | python3 -c 'import json,sys; r=[j for j in json.load(sys.stdin)["jobs"]["rows"] if j["job_id"]=="fig.parts"][0]; print(json.dumps(r["last_failure"]), r["last_success"])')
echo "    jobs row: last_failure last_success = $lf"
check "the jobs table shows the instant's failed partition as the last failure" \
	bash -c 'grep -q "http_5xx" <<<"$1"' _ "$lf"
rc=$(curl -s "http://$A/console" | python3 -c 'import re,sys; p=sys.stdin.read(); print([m.group(1) or "" for m in re.finditer(r"<tr(?: class=\"([^\"]*)\")?>((?:(?!</tr>).)*)</tr>", p, re.S) if "fig.parts" in m.group(2) and "<td" in m.group(2)][:1])')
expect_eq "and its row in the jobs table is red" "['bad']" "$rc"
jt=$(curl -s "http://$A/api/job?id=fig.parts" | python3 -c 'import json,sys; t=json.load(sys.stdin)["triggers"]; print(len(t), t[0]["partition"], t[0]["state"], sorted(set(x["state"] for x in t)))')
echo "    job page triggers (count, first partition and state, states): $jt"
expect_eq "the job page lists 30 past triggers, the failed partition 599 first" \
	"30 599 failed ['failed', 'succeeded']" "$jt"

echo "  -- C: an operator limited to tenant shop, on the cluster page"
"$PAL" pause --job fig.quiet --reason "fig: held" >/dev/null
sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) VALUES ('fig.quiet', 'misfire: 1 instants missed (policy manual)', '{}', ARRAY['backfill', 'abandon'])" >/dev/null
SHOP=$("$PAL" token create --name ops-shop --role operator --tenant shop | tail -1)
OTHER=$("$PAL" token create --name ops-other --role operator --tenant other | tail -1)
section_count() { # PAGE SECTION OP: forms of OP in the section
	python3 -c 'import re,sys; m=re.search(r"<section id=\"%s\">(.*?)</section>" % sys.argv[2], sys.argv[1], re.S); print(len(re.findall("data-op=\"%s\"" % sys.argv[3], m.group(1))) if m else -1)' "$@"
}
JAR=$PALISADE_TEST_TMP/jar-shop
curl -s -o /dev/null -c "$JAR" --data-urlencode "token=$SHOP" "http://$A/console/login"
page=$(curl -s -b "$JAR" "http://$A/console")
check "the page shows the shop job's ticket" bash -c 'grep -q "fig.quiet" <<<"$1"' _ "$page"
expect_eq "the open ticket of a shop job offers its resolve form to the shop operator" 1 "$(section_count "$page" tickets resolve-ticket)"
expect_eq "the paused scope job:fig.quiet offers its resume form to the shop operator" 1 "$(section_count "$page" gates resume-job)"
JAR2=$PALISADE_TEST_TMP/jar-other
curl -s -o /dev/null -c "$JAR2" --data-urlencode "token=$OTHER" "http://$A/console/login"
page2=$(curl -s -b "$JAR2" "http://$A/console")
check "an operator of another tenant is shown neither" bash -c '! grep -q "fig.quiet" <<<"$1"' _ "$page2"

echo "  -- D: what /api/cluster hands the shop login of every tenant's figures"
js=$(curl -s -b "$JAR" "http://$A/api/cluster" | python3 -c 'import json,sys; m=json.load(sys.stdin); tn=m.get("this_node") or {}; print(sorted(set(tn) - {"node", "cluster", "version", "roles", "ready", "not_ready", "healthy", "unhealthy", "draining"}), "|", "shards" in m, "|", sorted(set(k for n in m["nodes"] for k in n if k.startswith("stale_"))))')
echo "    this_node's keys beyond identity and health | top-level shards | nodes' executor counters: $js"
expect_eq "a login limited to tenants gets the node's identity and health only" "[] | False | []" "$js"
full=$(curl -s "http://$A/api/cluster" | python3 -c 'import json,sys; print("shards" in json.load(sys.stdin)["this_node"])')
expect_eq "an unlimited reader still gets the node's whole status" True "$full"
finish
