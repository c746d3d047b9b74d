#!/usr/bin/env bash
# A boundary judged on the nominal instant across a roll from 0.3.0
# (docs/migrating.md, "Spread and jitter at a boundary").  0.3.0 plans a job
# with `spread` or `jitter` as this release does (scheduled_at moved by the
# same offsets) but writes no nominal_at, and judges the rows it plans on
# the moved instant.  So:
#   while a 0.3.0 node is live, `shadow`, `cutover` and `rollback` of a
#   scope holding such a job are refused (exit 4, the node named), nothing
#   changed;
#   once it is gone, the rows it planned ahead are still there; the
#   commands give them their nominal instant before they judge the scope
#   (only nominal_at written), so
#     cut-over at T  a spread instant n < T fired at n + o >= T stays shadow
#                    (the old system runs it), not pending (both would);
#     shadow at S    a spread instant n < S fired at n + o >= S stays
#                    palisade's, not shadow (no system would run it);
#   and the 0.3.0 rows of the cut-over scope, spread and jitter, carry the
#   nominal instant the grid gives (every 20 s, spread and jitter below
#   20 s: scheduled_at rounded down to 20 s).
# Needs the 0.3.0 build (ops/releases/palisade-0.3.0.tar.xz, built once into
# PALISADE_OLD_TREE, default /tmp/palisade-0.3.0-build, as
# test_mixed_upgrade.sh builds its release).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "a shadow or cut-over during or after a roll from 0.3.0 judges a spread or jittered instant on its nominal instant: each one runs in exactly one system"
OLD_TAG=v0.3.0
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-0.3.0-build}
t=$(date +%s)
build_release "$OLD_TAG" ops/releases/palisade-0.3.0.tar.xz "$OLD_TREE" || { fail "0.3.0 builds"; finish; exit 1; }
echo "    figure: 0.3.0 binaries ready in $(($(date +%s) - t)) s (cached after the first run)"
OLD_PAL=$OLD_TREE/bin/palisade

fresh_db it_boundary_nominal_old
expect_exit "0.3.0 migrates the empty database" 0 "$OLD_PAL" migrate
expect_exit "this tree migrates it beside the 0.3.0 node-to-be (041 -> 046)" 0 "$PAL" migrate --before-roll --backfill-batches 0
SHARDS=1 LOOKAHEAD=60s MISFIRE=2m
write_conf "$CLUSTER_CONF"
# every 20 s, spread 19 s: co.spread1's offset is 14 s, sh.spread's 18 s
# (test_boundary_nominal.sh's model)
cat >"$NODE_DIR/jobs.yaml" <<'JOBS'
jobs:
  - {id: co.spread1, group: co, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: co.jitter, group: co, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", jitter: 19s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: co.plain, group: co, schedule: {every: 20s, start: "2026-01-01T00:00:00Z"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: sh.spread, group: sh, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: co.dep, group: co, after: [{job: co.spread1}], target: {url: "http://127.0.0.1:9/x"}}
  - {id: dp.dep, group: dp, after: [{job: co.spread1}], target: {url: "http://127.0.0.1:9/x"}}
  - {id: pl.plain, group: pl, schedule: {every: 20s, start: "2026-01-01T00:00:00Z"}, target: {url: "http://127.0.0.1:9/x"}}
JOBS
expect_exit "shadow --group co (no job in it yet)" 0 \
	"$PAL" shadow --config "$CLUSTER_CONF" --group co --reason "moving in"
expect_exit "apply (spread and jitter are applied beside 0.3.0 nodes)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
NOMINAL="floor(extract(epoch FROM scheduled_at) / 20)::bigint * 20"
PAL=$OLD_PAL start_node o1 --roles controller
wait_until "the 0.3.0 controller plans 50 s ahead" 40 \
	has "select count(*) from triggers where job_id = 'co.plain' and scheduled_at > now() + interval '50 s'" ||
	{ finish; exit 1; }
MOVED="job_id IN ('co.spread1', 'co.jitter') and extract(epoch FROM scheduled_at)::bigint <> $NOMINAL"
echo "    | rows of co.spread1 and co.jitter planned by 0.3.0: $(sql "select count(*) || ' moved, ' || count(nominal_at) || ' with nominal_at' from triggers where $MOVED")"

# -- while the 0.3.0 node is live: refused, nothing changed.  n1, this
# release's controller, waits beside it (the roll's next node) and answers
# the API.
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
start_node n1 --roles controller
api() {
	curl -s -o "$NODE_DIR/api.json" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" \
		-H 'Content-Type: application/json' ${3:+--data "$3"} "http://${NODE_ADMIN[n1]}$2"
}
wait_until "n1's API answers" 30 eval '[ "$(api GET /api/v1/shadow)" = 200 ]' || { finish; exit 1; }
for e in "cutover {\"group\": \"co\", \"reason\": \"step\", \"at\": \"$(iso $(($(date +%s) + 5)))\"}" \
	"shadow {\"group\": \"sh\", \"reason\": \"back\"}" "rollback {\"group\": \"co\", \"reason\": \"back\", \"wait_ms\": 0}"; do
	code=$(api POST "/api/v1/${e%% *}" "${e#* }")
	expect_eq "POST /api/v1/${e%% *} while a 0.3.0 node is live: 409 older-nodes, naming it" \
		"409 urn:palisade:problem:older-nodes o1" \
		"$code $(jq -r .type "$NODE_DIR/api.json") $(jq -r .detail "$NODE_DIR/api.json" | grep -o 'o1 (0.3.0' | cut -c1-2)"
done
expect_exit "cutover --group co while a 0.3.0 node is live: refused" 4 \
	"$PAL" cutover --config "$CLUSTER_CONF" --group co --at "$(iso $(($(date +%s) + 5)))" --reason step
expect_match "the refusal names the job, the node and what to do" \
	"of group:co judges the nominal instants of co\.(jitter|spread1|dep, after co\.spread1,) \(spread or jitter\).*older than schema 45.*o1 \(0\.3\.0, schema 41\).*every node runs" "$OUT"
expect_exit "shadow --group sh while a 0.3.0 node is live: refused" 4 \
	"$PAL" shadow --config "$CLUSTER_CONF" --group sh --reason back
expect_exit "rollback --group co while a 0.3.0 node is live: refused" 4 \
	"$PAL" rollback --config "$CLUSTER_CONF" --group co --reason back --wait 0s
expect_exit "rollback --group dp (a job following co.spread1) while a 0.3.0 node is live: refused" 4 \
	"$PAL" rollback --config "$CLUSTER_CONF" --group dp --reason back --wait 0s
expect_match "that refusal names the dependent job and its upstream" "dp\.dep, after co\.spread1," "$OUT"
expect_eq "nothing changed: no step, sh not in shadow, no audit row of theirs" "0 0 0" \
	"$(sql "select (select count(*) from cutover_steps) || ' ' || (select count(*) from shadow_scopes where scope = 'group:sh') || ' ' || (select count(*) from audit_log where action in ('cutover', 'rollback'))")"
expect_exit "shadow --group pl (no spread or jitter in it) goes ahead beside the 0.3.0 node" 0 \
	"$PAL" shadow --config "$CLUSTER_CONF" --group pl --reason plain

# -- the roll: the 0.3.0 node leaves, this release's controller leads; the
# rows the 0.3.0 node planned ahead stay
stop_node o1
wait_until "this release's controller leads" 40 \
	has "select count(*) from triggers where job_id = 'co.plain' and scheduled_at > now() + interval '55 s'" ||
	{ finish; exit 1; }
# cut-over at T = n + 2 for a nominal instant n the 0.3.0 node planned
# (fired n + 14), n at least 4 s ahead: T must still be ahead when the
# cutover command runs (a row merely fired ahead may have its nominal
# instant up to 9 s past, and `--at` in the past is refused)
N=$(sql "select min($NOMINAL) from triggers where job_id = 'co.spread1' and nominal_at is null and $NOMINAL >= extract(epoch from now())::bigint + 4")
check "a row of co.spread1 that 0.3.0 planned is still ahead" test -n "$N"
T=$((N + 2))
echo "    | cut-over at $(iso $T); co.spread1's nominal $(iso "$N") fired at $(sql "select scheduled_at from triggers where job_id = 'co.spread1' and $NOMINAL = $N"), planned by 0.3.0"
BEFORE=$(sql "select coalesce(string_agg(id::text, ','), '0') from triggers where $MOVED and nominal_at is null")
# co.dep's instant after co.spread1's n, as palisade_plan_after writes it
# after a row of 0.3.0's: at the upstream's moved instant, its nominal_at
# copied (NULL), shadow (co is in shadow)
sql "insert into triggers (job_id, version, scheduled_at, partition, source, priority, due_at,
	 shard, tenant, resource_group, job_ref, state)
	 select 'co.dep', 1, t.scheduled_at, 0, 'schedule', 0, t.scheduled_at, j.shard, j.tenant,
	  j.resource_group, j.ref, 'shadow' from triggers t, jobs j
	 where t.job_id = 'co.spread1' and $NOMINAL = $N and j.job_id = 'co.dep'" >/dev/null
echo "    | moved rows of co.spread1 and co.jitter without nominal_at (0.3.0's): $(tr ',' '\n' <<<"$BEFORE" | grep -vc '^0$')"
expect_exit "cutover --group co --at T (no 0.3.0 node left)" 0 \
	"$PAL" cutover --config "$CLUSTER_CONF" --group co --at "$(iso "$T")" --reason step
ST=$(sql "select state from triggers where job_id = 'co.spread1' and $NOMINAL = $N")
echo "    | co.spread1 nominal $(iso "$N") (< T, the old system runs it): state $ST"
expect_eq "co.spread1's nominal instant before T stays shadow (the old system runs it, palisade does not)" shadow "$ST"
expect_eq "the cut-over gave every moved row of co.spread1 and co.jitter 0.3.0 planned its nominal instant (the grid's)" 0 \
	"$(sql "select count(*) from triggers where id in ($BEFORE) and (nominal_at is null or extract(epoch FROM nominal_at)::bigint <> $NOMINAL)")"
expect_eq "co.dep's instant after co.spread1's n: its upstream's nominal instant, and shadow like it" \
	"$(iso "$N") shadow" \
	"$(sql "select to_char(nominal_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || ' ' || state from triggers where job_id = 'co.dep' and $NOMINAL = $N")"
expect_eq "a 0.3.0 row that nothing moved keeps nominal_at NULL (co.plain)" 0 \
	"$(sql "select count(nominal_at) from triggers where job_id = 'co.plain'")"

# shadow at S with S in (n + 2, n + 14]: sh.spread's offset is 18 s; the old
# system takes over from S and has passed n, so palisade keeps n
# (docs/migrating.md: "One in [S - o, S) stays palisade's")
while [ $(($(date +%s) % 20)) -lt 2 -o $(($(date +%s) % 20)) -gt 14 ]; do sleep 0.5; done
NS=$(($(date +%s) / 20 * 20))
echo "    | sh.spread's row of nominal $(iso "$NS"): $(sql "select 'fired at ' || scheduled_at || ', nominal_at ' || coalesce(nominal_at::text, 'NULL (planned by 0.3.0)') from triggers where job_id = 'sh.spread' and $NOMINAL = $NS")"
SH=$("$PAL" shadow --config "$CLUSTER_CONF" --group sh --reason back --output json)
expect_eq "shadow --group sh (no 0.3.0 node left): exit 0" 0 $?
S=$(date -d "$(jq -r .since <<<"$SH")" +%s)
NS=$((S / 20 * 20))
ST=$(sql "select state || ' at ' || scheduled_at || ', nominal ' || coalesce(nominal_at::text, 'NULL') from triggers where job_id = 'sh.spread' and $NOMINAL = $NS")
echo "    | shadow since $(iso "$S"); sh.spread nominal $(iso "$NS") (< S, the old system has passed it): $ST"
check "sh.spread's nominal instant before S stays palisade's (pending, not shadow): else no system runs it" \
	test "${ST%% *}" = pending
stop_node n1
finish
