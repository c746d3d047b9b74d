#!/usr/bin/env bash
# A cut-over's boundary is judged on the instant palisade fires, the nominal
# instant moved by spread and jitter (docs/migrating.md, "Spread and jitter
# at a boundary"), while the old system fires the nominal one: a nominal
# instant just before the step runs in both systems.  The step names each
# job it makes live that has such an instant (spread_across, a warning on
# stderr), with the nominal instant and the one palisade fires.  Expected
# instants come from an independent model here (python's hashlib), not from
# palisade's schedule code.
source tests/integration/lib.sh
guarantee "cutover: a job made live whose spread or jitter moves a nominal instant before the step to after it is named, with both instants"

fresh_db it_cutover_spread
"$PAL" migrate >/dev/null
cat >"$PALISADE_TEST_TMP/cutover-spread.yaml" <<'YAML'
jobs:
  - {id: mv.spread, group: mv, schedule: {every: 1h, start: "2026-01-01T00:00:00Z", spread: 1h}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mv.jitter, group: mv, schedule: {every: 1h, start: "2026-01-01T00:00:00Z", jitter: 30m}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mv.plain, group: mv, schedule: {every: 1h, start: "2026-01-01T00:00:00Z"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "shadow --group mv (before its jobs exist)" 0 "$PAL" shadow --group mv --reason "moving in"
expect_exit "apply three hourly jobs: spread 1h, jitter 30m, neither" 0 "$PAL" apply "$PALISADE_TEST_TMP/cutover-spread.yaml"

# the model: h(tag, id, n) = first 8 bytes of SHA-256("tag:id:n"), big-endian
model() {
	python3 - "$@" <<'PY'
import hashlib, sys
def h(tag, job, n):
    return int.from_bytes(hashlib.sha256(("%s:%s:%d" % (tag, job, n)).encode()).digest()[:8], "big")
what, n = sys.argv[1], int(sys.argv[2])
if what == "spread":
    print(h("spread", "mv.spread", 0) % 3600)
else:
    print(h("jitter", "mv.jitter", n) % 1800)
PY
}
# N: the next whole hour at least two minutes ahead (a nominal instant of all three)
now=$(date -u +%s)
N=$(( (now + 120 + 3599) / 3600 * 3600 ))
O=$(model spread 0)
J=$(model jitter "$N")
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
echo "    N=$(iso "$N") spread offset ${O}s, jitter of N ${J}s"
# mv.spread's offset is 1568 s; N's jitter is 0 once in 1800 hours, when
# mv.jitter fires N itself, before the step
WANT="mv.jitter mv.spread"
[ "$J" -ge 1 ] || WANT="mv.spread"

# one second after N: N fires at N + O (spread) and N + J (jitter), both after it
out=$("$PAL" cutover --group mv --at "$(iso $((N + 1)))" --reason "step" --dry-run --output json) ||
	fail "dry-run cutover: $out"
echo "    $(jq -c '{made_live, spread_across}' <<<"$out")"
expect_eq "the step makes all three live" "mv.jitter mv.plain mv.spread" "$(jq -r '.made_live | join(" ")' <<<"$out")"
expect_eq "spread_across names the moved jobs, not the plain one" "$WANT" \
	"$(jq -r '[.spread_across[].job] | join(" ")' <<<"$out")"
expect_eq "mv.spread: nominal N, fired at N + its spread offset" "$(iso "$N") $(iso $((N + O)))" \
	"$(jq -r '.spread_across[] | select(.job == "mv.spread") | "\(.nominal) \(.fires)"' <<<"$out")"
[ "$J" -ge 1 ] && expect_eq "mv.jitter: nominal N, fired at N + its jitter" "$(iso "$N") $(iso $((N + J)))" \
	"$(jq -r '.spread_across[] | select(.job == "mv.jitter") | "\(.nominal) \(.fires)"' <<<"$out")"

# after both moved instants of N: nothing straddles
L=$(( N + (O > J ? O : J) + 1 ))
out=$("$PAL" cutover --group mv --at "$(iso "$L")" --reason "step" --dry-run --output json) ||
	fail "dry-run cutover: $out"
expect_eq "a step after N's fired instants: spread_across empty" 0 "$(jq '.spread_across | length' <<<"$out")"

# the table output warns on stderr, and the step is taken as before
"$PAL" cutover --group mv --at "$(iso $((N + 1)))" --reason "step" >"$PALISADE_TEST_TMP/cutover-spread.out" 2>"$PALISADE_TEST_TMP/cutover-spread.err"
expect_eq "the step itself: exit 0" 0 "$?"
expect_eq "one warning per straddling job on stderr" "$(wc -w <<<"$WANT")" "$(grep -c "warning: mv\.\(spread\|jitter\)'s nominal instant $(iso "$N")" "$PALISADE_TEST_TMP/cutover-spread.err")"
expect_eq "the step is recorded" 1 "$(sql "select count(*) from cutover_steps where scope = 'group:mv'")"
finish
