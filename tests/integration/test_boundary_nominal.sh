#!/usr/bin/env bash
# A scope's boundary is judged on the nominal instant (docs/migrating.md,
# "Spread and jitter at a boundary"): the old system fires a job's nominal
# instant n, palisade fires n moved by its spread offset and jitter.  For a
# `shadow` at S, a roll-back at `at` and a cut-over step at T, each with a
# nominal instant of a spread job and of a jitter job just before the
# boundary and fired after it, every nominal instant around the boundary
# runs in exactly one system:
#   shadow    palisade's (not shadow), or the old system's (n >= S);
#   roll-back palisade's, listed by the answer (the old system runs the
#             listed ones), or the old system's (n > at);
#   cut-over  palisade's, or the old system's (since <= n < T, since the
#             group's shadow).
# A controller plans (no executor: nothing is called), 40 s ahead, so the
# cut-over moves planned triggers and the planner plans later ones.
# Expected instants come from an independent model (python's hashlib).
# The three boundaries follow one nominal instant B, chosen at the start:
# each group's jitter job is the first id whose jitter at B is large enough
# (the model), so the test waits for B rather than for an instant that a
# given job happens to move far enough.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow, roll-back and cut-over judge a spread or jittered instant on its nominal instant: each one runs in exactly one system"
T_START=$(date +%s)

fresh_db it_boundary_nominal
"$PAL" migrate >/dev/null
SHARDS=1 LOOKAHEAD=40s MISFIRE=2m
write_conf "$CLUSTER_CONF"
# model: h(tag, id, n) = first 8 bytes of SHA-256("tag:id:n"), big-endian
model() {
	python3 - "$@" <<'PY'
import hashlib, sys
def h(tag, job, n):
    return int.from_bytes(hashlib.sha256(("%s:%s:%d" % (tag, job, n)).encode()).digest()[:8], "big")
what = sys.argv[1]
if what == "spread":
    print(h("spread", sys.argv[2], 0) % 19)
elif what == "jitter":
    print(h("jitter", sys.argv[2], int(sys.argv[3])) % 19)
else:  # pick B GROUP:MIN...: per group the first id GROUP.jitterK whose jitter
    # at B and at B + 20 (the fallback) is MIN s or more
    b = int(sys.argv[2])
    for arg in sys.argv[3:]:
        g, least = arg.split(":")
        k = 0
        while min(h("jitter", "%s.jitter%d" % (g, k), n) % 19 for n in (b, b + 20)) < int(least):
            k += 1
        print("%s.jitter%d" % (g, k))
PY
}
# B: the first 20 s instant 24 s or more from now, or the next one if the
# set-up below takes longer; jitter at B: co 6 s or more, sh 8, rb 10 (the
# shadow's and roll-back's commands run one after the other after B)
B=$(( ($(date +%s) + 24 + 19) / 20 * 20 ))
declare -A JIT
read -r "JIT[co]" "JIT[sh]" "JIT[rb]" <<<"$(model pick "$B" co:6 sh:8 rb:10 | tr '\n' ' ')"
# every 20 s from a start on the grid; spread and jitter below 20 s, so an
# instant's nominal instant is its scheduled_at rounded down to 20 s.  The
# spread offsets (the model): sh.spread 18 s, rb.spread 12 s, co.spread1 14 s.
{
	echo "jobs:"
	for j in sh.spread rb.spread co.spread1; do
		echo "  - {id: $j, group: ${j%%.*}, schedule: {every: 20s, start: \"2026-01-01T00:00:00Z\", spread: 19s}, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
	for g in sh rb co; do
		echo "  - {id: ${JIT[$g]}, group: $g, schedule: {every: 20s, start: \"2026-01-01T00:00:00Z\", jitter: 19s}, target: {url: \"http://127.0.0.1:9/x\"}}"
		echo "  - {id: $g.plain, group: $g, schedule: {every: 20s, start: \"2026-01-01T00:00:00Z\"}, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/jobs.yaml"
SC=$("$PAL" shadow --config "$CLUSTER_CONF" --group co --reason "moving in" --output json)
expect_eq "shadow --group co (before its jobs exist): exit 0" 0 $?
# co is in shadow from SC on: a nominal instant before it (the test may
# start just after one) stays with palisade, as docs/migrating.md says.
SC=$(date -d "$(jq -r .since <<<"$SC")" +%s.%N)
expect_exit "apply: per group a spread, a jitter and a plain job, every 20 s" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"

iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# a trigger's nominal instant (epoch s) and fired offset, in SQL
NOMINAL="floor(extract(epoch FROM scheduled_at) / 20)::bigint * 20"

start_node c1 --roles controller
wait_until "shards led" 20 all_shards_led &&
	wait_until "triggers planned 30 s ahead" 30 \
		has "select count(*) from trigger_jobs where job_id = 'rb.plain' and scheduled_at > now() + interval '30 s'" ||
	{ finish; exit 1; }
for j in sh.spread rb.spread co.spread1; do
	expect_eq "$j: every instant fired at its nominal instant + $(model spread $j) s (the model)" 0 \
		"$(sql "select count(*) from trigger_jobs where job_id = '$j' and extract(epoch FROM scheduled_at)::bigint - $NOMINAL <> $(model spread $j)")"
done
expect_eq "${JIT[rb]}: every instant's jitter as the model's" "" \
	"$(sql "select extract(epoch FROM scheduled_at)::bigint || ' ' || $NOMINAL from trigger_jobs where job_id = '${JIT[rb]}'" |
		while read -r at n; do [ $((at - n)) -eq "$(model jitter "${JIT[rb]}" "$n")" ] || echo "$at"; done)"

# cut-over at T: two seconds after B, 12 s or more ahead, planned already
# (shadow)
now=$(date +%s)
[ $((now + 12)) -le "$B" ] || B=$((B + 20))
if [ $((now + 12)) -gt "$B" ]; then
	fail "the set-up took over 30 s: B is less than 12 s ahead"
	finish
	exit 1
fi
N=$B T=$((B + 2))
echo "    cut-over: nominal $(iso "$N"), co.spread1 fires it at +$(model spread co.spread1) s, ${JIT[co]} at +$(model jitter "${JIT[co]}" "$N") s; T = $(iso "$T")"
expect_exit "cutover --group co --at T" 0 "$PAL" cutover --config "$CLUSTER_CONF" --group co --at "$(iso "$T")" --reason step

# shadow at S and roll-back at `at`: a second or so after B
sleep "$(python3 -c "import time; print(max(0, $B + 1.2 - time.time()))")"
NS=$B NR=$B
SH=$("$PAL" shadow --config "$CLUSTER_CONF" --group sh --reason "back" --output json)
expect_eq "shadow --group sh: exit 0" 0 $?
S=$(date -d "$(jq -r .since <<<"$SH")" +%s)
echo "    shadow: nominal $(iso "$NS"), since $(iso "$S") (${JIT[sh]} +$(model jitter "${JIT[sh]}" "$NS") s)"
RB=$("$PAL" rollback --config "$CLUSTER_CONF" --group rb --reason "back" --wait 0s --output json)
expect_eq "rollback --group rb: exit 0" 0 $?
AT=$(date -d "$(jq -r .at <<<"$RB")" +%s)
echo "    roll-back: nominal $(iso "$NR"), at $(iso "$AT") (${JIT[rb]} +$(model jitter "${JIT[rb]}" "$NR") s); $(jq -c '{handed_back, later}' <<<"$RB")"
check "each boundary lies after its nominal instant, before its fired ones" \
	test "$N" -lt "$T" -a "$NS" -lt "$S" -a "$S" -le $((NS + 8)) -a "$NR" -lt "$AT" -a "$AT" -lt $((NR + 8))

# every instant up to 40 s after the last boundary planned
LAST=$((T > S ? (T > AT ? T : AT) : (S > AT ? S : AT)))
wait_until "instants to $(iso $((LAST + 40))) planned" 90 \
	has "select count(*) from trigger_jobs where job_id = 'co.plain' and scheduled_at >= '$(iso $((LAST + 40)))'" ||
	{ finish; exit 1; }
stop_node c1

# GROUP B RULE: the nominal instants of the group in [B - 40, B + 40] whose
# number of systems running them (palisade: not shadow; the old system: RULE
# on n; the roll-back's listed ones) is not one
rows() {
	sql "select job_id, to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
	        $NOMINAL, state from trigger_jobs
	      where resource_group = '$1' and $NOMINAL between $(($2 - 40)) and $(($2 + 40)) order by 1, 2"
}
not_one() { # GROUP B OLD(n) [LISTED-JSON]
	rows "$1" "$2" | python3 -c '
import json, sys
old, listed = sys.argv[1], json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
ls = {(r["job_id"], r["scheduled_at"]) for r in listed}
bad = []
for line in sys.stdin:
    job, at, n, state = line.strip().split("|")
    n = int(n)
    k = (state != "shadow") + ((job, at) in ls) + eval(old)
    if k != 1:
        bad.append("%s@%s:%d" % (job, at, k))
print(" ".join(bad))' "$3" "${4:-[]}"
}
straddle() { # GROUP B: the moved instants whose nominal lies before B, fired at or after it
	sql "select count(*) from trigger_jobs where resource_group = '$1'
	       and $NOMINAL < $2 and extract(epoch FROM scheduled_at) >= $2"
}
expect_eq "shadow: 2 instants straddle S (sh.spread, sh.jitter)" 2 "$(straddle sh "$S")"
expect_eq "shadow: every nominal instant around S runs in exactly one system" "" "$(not_one sh "$S" "n >= $S")"
expect_eq "roll-back: 2 instants straddle at (rb.spread, rb.jitter)" 2 "$(straddle rb $((AT + 1)))"
expect_eq "roll-back: every nominal instant around at runs in exactly one system" "" \
	"$(not_one rb "$AT" "n > $AT" "$(jq -c .unfinished <<<"$RB")")"
expect_eq "roll-back: each listed instant of rb.spread names its nominal instant, none of rb.plain" "0 0" \
	"$(jq -r '[.unfinished[] | select(.job_id == "rb.spread" and (.nominal_at | not))] | length' <<<"$RB") $(jq -r '[.unfinished[] | select(.job_id == "rb.plain" and .nominal_at)] | length' <<<"$RB")"
expect_eq "cut-over: 2 instants straddle T (co.spread1, co.jitter)" 2 "$(straddle co "$T")"
expect_eq "cut-over: every nominal instant around T runs in exactly one system" "" "$(not_one co "$T" "n >= $SC and n < $T")"
expect_eq "nominal_at: the nominal instant of each moved one, NULL for the others" 0 \
	"$(sql "select count(*) from triggers where job_id like '__.%' and nominal_at is distinct from
	        (case when extract(epoch FROM scheduled_at) <> $NOMINAL then to_timestamp($NOMINAL) end)")"
echo "  took $(($(date +%s) - T_START)) s"
finish
