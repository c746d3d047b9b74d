#!/usr/bin/env bash
# The reads that compute instants (verify, plan diff, shadow diff) are
# bounded per request: past the bound they answer 422 too-many-instants at
# once, before holding the instants, so a viewer token (a tenant-scoped one
# too) can neither hold a node's API away from an operator nor grow the
# node's memory; verify counts no instant after the database clock as
# missing.  The CLI on the database has the same bounds (--max-instants).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "no read holds a node's API for long or runs it out of memory: verify, plan diff and shadow diff refuse past their bound (422 too-many-instants) before computing it, an operator's pause meanwhile is answered, and verify counts no instant still to come as missing"
fresh_db it_api_bounds
"$PAL" migrate >/dev/null
# every-second jobs of tenant red: jobs NAME... into FILE
jobs() {
	local f=$1; shift
	{ echo "jobs:"; for j in "$@"; do echo "  - {id: red.$j, tenant: red, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:9/x\"}}"; done; } >"$f"
}
jobs "$NODE_DIR/j.yaml" tick b1 b2
expect_exit "apply three jobs of tenant red, every second" 0 "$PAL" apply "$NODE_DIR/j.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node b1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
wait_until "node b1 ready" 20 ready b1
planned() { [ "$(sql "select count(distinct job_id) from triggers where job_id like 'red.%'")" = 3 ]; }
wait_until "the jobs are planned" 20 planned
out=$("$PAL" token create --name viewer-red --role viewer --tenant red) || fail "token create"; VT=$(tail -1 <<<"$out")
out=$("$PAL" token create --name op --role operator) || fail "token create"; OT=$(tail -1 <<<"$out")
API="http://${NODE_ADMIN[b1]}/api/v1"
iso() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; }
# planned from here on (the controller planned the jobs before this)
T0=$(iso "@$(sql "select floor(extract(epoch from now()))::bigint + 2")")
get() { curl -s -o "$NODE_DIR/ans" -w '%{http_code}' -H "Authorization: Bearer $VT" "$API/$1"; }
post() { curl -s -o "$NODE_DIR/ans" -w '%{http_code}' -X POST -H "Authorization: Bearer $VT" -H "Content-Type: $2" --data-binary @"$3" "$API/$1"; }
ans() { jq -r "$1" "$NODE_DIR/ans" 2>/dev/null; }
sleep 3

# -- verify: an instant still to come is not missing
expect_eq "verify to a day ahead: answered" 200 "$(get "verify?job=red.tick&from=$T0&to=$(iso '+1 day')")"
expect_eq "the range ends at the database clock, and the answer says so; nothing missing" "true 0" "$(ans '"\(.to_clamped) \(.missing)"')"
check "its to is now, not a day ahead" [ "$(date -u -d "$(ans .to)" +%s)" -le "$(date +%s)" ]
expect_exit "the CLI on the database: the same (exit 0)" 0 "$PAL" verify --job red.tick --from "$T0" --to "$(iso '+1 day')"
expect_match "and says it took the clock" "after the database clock: checked up to" "$OUT"

# The jobs have run for 400 days (their versions took effect then): a
# verify of that range recomputes 34.5 million instants.
sql "update job_versions set effective_from = effective_from - interval '400 days', activated_at = activated_at - interval '400 days' where job_id like 'red.%'" >/dev/null
PID=${NODE_PID[b1]}
rss0=$(awk '/VmRSS/ {print $2}' /proc/$PID/status)
FROM=$(iso '-399 days'); TO=$(iso now)
t0=$(date +%s.%N)
curl -s -o "$NODE_DIR/verify.out" -w '%{http_code}' -H "Authorization: Bearer $VT" \
	"$API/verify?job=red.tick&from=$FROM&to=$TO" >"$NODE_DIR/verify.code" &
VP=$!
sleep 1
s=$(curl -s -m 15 -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $OT" -H 'Content-Type: application/json' \
	--data '{"reason":"incident"}' "$API/jobs/red.tick/pause")
expect_eq "an operator's pause sent during the viewer's verify of 400 days is answered" 200 "$s"
wait $VP
t1=$(date +%s.%N)
echo "      verify of 400 days answered $(cat "$NODE_DIR/verify.code") after $(python3 -c "print(round($t1-$t0,1))") s: $(jq -c '{type, limit, detail}' "$NODE_DIR/verify.out" 2>/dev/null)"
expect_eq "the verify of 400 days: 422 too-many-instants, limit 1000000" "422 urn:palisade:problem:too-many-instants 1000000" \
	"$(cat "$NODE_DIR/verify.code") $(jq -r '"\(.type) \(.limit)"' "$NODE_DIR/verify.out" 2>/dev/null)"
expect_match "saying how to narrow it" "more than 1000000 instants .*verify a shorter range" "$(jq -r .detail "$NODE_DIR/verify.out" 2>/dev/null)"
expect_exit "resume" 0 curl -sf -X POST -H "Authorization: Bearer $OT" -H 'Content-Type: application/json' --data '{}' "$API/jobs/red.tick/resume"
expect_eq "a verify of 10 days (864,001 instants, under the bound) is answered" 200 "$(get "verify?job=red.tick&from=$(iso "$TO - 10 days")&to=$TO")"
expect_eq "with every instant of the range expected" 864001 "$(ans .expected)"
expect_exit "the CLI on the database refuses 400 days too (exit 65)" 65 "$PAL" verify --job red.tick --from "$FROM" --to "$TO"
expect_match "naming the bound and the flag" "more than 1000000 instants.*--max-instants" "$OUT"
expect_exit "--max-instants sets the CLI's bound" 65 "$PAL" verify --job red.tick --from "$(iso '-1 hour')" --to "$TO" --max-instants 100

# -- plan diff: the body's jobs times count
B=$NODE_DIR/body
for n in 10 11; do jobs "$B$n.yaml" $(seq -f 'p%g' 1 $n); done
expect_eq "plan diff of 11 jobs x 10000 instants: 422 too-many-instants, limit 100000" "422 urn:palisade:problem:too-many-instants 100000" \
	"$(post "plan/diff?count=10000" application/yaml "${B}11.yaml") $(ans '"\(.type) \(.limit)"')"
expect_match "saying how to narrow it" "11 jobs .* times 10000 instants is more than 100000.*a smaller count, or fewer jobs" "$(ans .detail)"
expect_eq "plan diff of 10 jobs x 10000 instants (the bound) is answered" "200 10" \
	"$(post "plan/diff?count=10000" application/yaml "${B}10.yaml") $(ans '.jobs | length')"
expect_exit "the CLI on the database refuses 11 x 10000 too (exit 65)" 65 "$PAL" plan diff --count 10000 "${B}11.yaml"

# -- shadow diff: palisade's plan of every job compared
echo "red.tick,$(iso '-1 day')" >"$NODE_DIR/rec.csv"
expect_eq "shadow diff of tenant red over 6 days (3 jobs, 1.5 million instants): 422 too-many-instants" "422 urn:palisade:problem:too-many-instants 1000000" \
	"$(post "shadow/diff?tenant=red&from=$(iso '-6 days')&to=$TO" text/csv "$NODE_DIR/rec.csv") $(ans '"\(.type) \(.limit)"')"
expect_match "saying how to narrow it" "more than 1000000 instants of the jobs compared.*a shorter range, or fewer jobs" "$(ans .detail)"
expect_eq "shadow diff of red.tick alone over the 6 days is answered" 200 \
	"$(post "shadow/diff?job=red.tick&from=$(iso '-6 days')&to=$TO" text/csv "$NODE_DIR/rec.csv")"

hwm=$(awk '/VmHWM/ {print $2}' /proc/$PID/status)
echo "      node RSS before the 400-day verify ${rss0} kB, peak since ${hwm} kB"
# Under ASan (make asan) freed memory stays in its quarantine (up to 256 MB
# by default) and every allocation carries shadow memory and red zones, so
# the bound there is 600 MB: still far below what an unbounded read takes
# (about 800 MB for the 400-day verify in a plain build, 9.5 GB for the
# plan diff).
bound_mb=200
nm "$PAL" 2>/dev/null | grep -q __asan_init && bound_mb=600
check "no read grew the node by $bound_mb MB (peak ${hwm} kB, before ${rss0} kB)" test $((hwm - rss0)) -lt $((bound_mb * 1024))
check "the node is still up" ready b1
finish
