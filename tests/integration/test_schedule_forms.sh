#!/usr/bin/env bash
# The schedule forms beside cron, through a node: `every` (from start, and
# from the version's activation), `at`, `spread` and `jitter`, and Jenkins'
# `H`.  Each is planned at the instants its rule names (every and at
# against the arithmetic here; spread, jitter and H recomputed by verify),
# fires once per instant (the sink's ledger through verify --sink-pg), and
# verify is clean.  Jobs whose schedule is spent (a past `at`, a Quartz cron
# whose years are past) are reported by validate and apply and stored,
# never refused: one of them must not block the apply of all the others.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 - every, at, spread, jitter and H instants are planned once each and fire once; a spent schedule is reported, never a failed apply"
T_START=$(date +%s)

fresh_db it_schedule_forms
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"

NOW=$(date +%s)
S=$((NOW + 4))             # every: 3s from S, until S + 12 (exclusive): 4 instants
AT=$((NOW + 9))            # the one shot
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/every.yaml" 1 "unused" t1 sf.every
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 3s, start: $(iso $S), end: $(iso $((S + 12)))}|" "$NODE_DIR/every.yaml"
gen_sink_jobs "$NODE_DIR/at.yaml" 1 "unused" t1 sf.at
sed -i "s|schedule: {cron: \"unused\"}|schedule: {at: $(iso $AT)}|" "$NODE_DIR/at.yaml"
gen_sink_jobs "$NODE_DIR/spread.yaml" 2 "unused" t1 sf.spread
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 5s, start: $(iso $S), spread: 4s, jitter: 3s}|" "$NODE_DIR/spread.yaml"
gen_sink_jobs "$NODE_DIR/h.yaml" 1 "H/6 * * * * ?" t1 sf.h
gen_sink_jobs "$NODE_DIR/anchor.yaml" 1 "unused" t1 sf.anchor
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 4s}|" "$NODE_DIR/anchor.yaml"
cat >"$NODE_DIR/spent.yaml" <<YAML
jobs:
  - {id: sf.past-at, schedule: {at: 2020-01-01T00:00:00Z}, target: {url: "http://$SINK_ADDR/effects/x"}}
  - {id: sf.past-years, schedule: {cron: "0 0 0 31 * ? 1999-2001"}, target: {url: "http://$SINK_ADDR/effects/x"}}
YAML
FILES=("$NODE_DIR"/every.yaml "$NODE_DIR"/at.yaml "$NODE_DIR"/spread.yaml "$NODE_DIR"/h.yaml "$NODE_DIR"/anchor.yaml "$NODE_DIR"/spent.yaml)

expect_exit "validate accepts the set, spent jobs included" 0 "$PAL" validate "${FILES[@]}"
expect_match "and names the past at" "spent.yaml:2:[0-9]+: note: job sf.past-at will not fire again" "$OUT"
expect_match "and the past years" "spent.yaml:3:[0-9]+: note: job sf.past-years will not fire again" "$OUT"
expect_exit "apply of the whole set succeeds" 0 "$PAL" apply --config "$CLUSTER_CONF" "${FILES[@]}"
expect_match "reporting the spent jobs" "note: job sf.past-years will not fire again" "$OUT"
expect_match "which are stored" "created +sf.past-at v1" "$OUT"
expect_eq "job_versions.cron of every holds the schedule text" \
	"@palisade;every=3" "$(sql "select cron from job_versions where job_id = 'sf.every.job-1'")"
H_CRON=$(sql "select cron from job_versions where job_id = 'sf.h.job-1'")
check "H is stored resolved, a cron every release reads ($H_CRON)" \
	grep -Eq '^[0-5]-59/6 \* \* \* \* \?$' <<<"$H_CRON"

T0=$(iso $((NOW - 1)))
start_node f1
wait_until "shards led" 20 all_shards_led
ACT=$(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = 'sf.anchor.job-1'")
sleep $((S + 16 - $(date +%s)))
T1=$(iso $((S + 13)))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "the window's triggers succeeded" 20 settled

at_of() { sql "select string_agg(extract(epoch from scheduled_at)::bigint::text, ' ' order by scheduled_at) from trigger_jobs where job_id = '$1' and scheduled_at <= '$T1'"; }
expect_eq "every 3s from start until end: its four instants" \
	"$S $((S + 3)) $((S + 6)) $((S + 9))" "$(at_of sf.every.job-1)"
expect_eq "at: its one instant" "$AT" "$(at_of sf.at.job-1)"
want=""
for k in 1 2 3 4; do x=$((ACT + 4 * k)); [ "$x" -le $((S + 13)) ] && want="$want $x"; done
expect_eq "every 4s without start: counted from the activation" "${want# }" "$(at_of sf.anchor.job-1)"
for j in 1 2; do
	got=$(at_of sf.spread.job-$j)
	ok=1 prev=0 k=0
	for x in $got; do
		n=$((S + 5 * k))
		# spread in [0, 4), jitter in [0, 3): the instant stays inside
		# [n, n + 6] and after the one before
		if [ "$x" -lt "$n" ] || [ "$x" -gt $((n + 5)) ] || [ "$x" -le "$prev" ]; then ok=0; fi
		prev=$x k=$((k + 1))
	done
	check "spread and jitter keep sf.spread.job-$j in its windows, in order, 2 or more planned ($got)" [ "$ok" = 1 -a "$k" -ge 2 ]
done
expect_eq "the spent jobs planned nothing" 0 "$(sql "select count(*) from trigger_jobs where job_id like 'sf.past%'")"
expect_eq "every planned instant fired exactly once" 0 \
	"$(sql "select count(*) from (select job_id, scheduled_at from trigger_jobs where scheduled_at <= '$T1' group by 1, 2 having count(*) > 1 or bool_or(state <> 'succeeded')) d")"
expect_exit "verify (recomputing spread, jitter and H) is clean, the sink's ledger included" 0 \
	"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG"
echo "    $OUT" | head -1
expect_exit "jobs --next of the interval" 0 "$PAL" jobs --next 2 sf.anchor.job-1 --output json
on_grid() { python3 -c 'import json,sys,datetime
j=json.loads(sys.argv[1]); j=j[0] if isinstance(j,list) else j
n=[int(datetime.datetime.strptime(x,"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()) for x in j["next"]]
sys.exit(0 if len(n)==2 and all((x-int(sys.argv[2]))%4==0 for x in n) else 1)' "$OUT" "$ACT"; }
check "on the activation's grid, as the controller plans it" on_grid
expect_exit "cron next --job resolves H as apply stored it" 0 \
	"$PAL" cron next "H/6 * * * * ?" --job sf.h.job-1 --count 1
check "the same expression ($H_CRON)" grep -qF "H for job sf.h.job-1: $H_CRON" <<<"$OUT"
sed "s/spread: 4s, jitter: 3s/spread: 1h/" "$NODE_DIR/spread.yaml" >"$NODE_DIR/spread2.yaml"
expect_exit "plan diff of a changed spread" 0 "$PAL" plan diff --config "$CLUSTER_CONF" \
	--count 2 --from "$(iso $((S + 20)))" "$NODE_DIR/spread2.yaml"
expect_match "a changed job" "sf.spread.job-1: changed" "$OUT"
expect_match "its stored instants out" "^ +- [0-9T:Z-]+$" "$OUT"
expect_match "the new ones in" "^ +\+ [0-9T:Z-]+$" "$OUT"
# plan diff of an `every` without start: the stored version's instants on
# its activation's grid (not counted from --from), a changed one's from the
# watermark where it would take over, as the controller plans them.
PDF=$(( $(date +%s) + 101 ))
[ $(( (PDF - ACT) % 4 )) = 0 ] && PDF=$((PDF + 1))
# The instants of plan diff's JSON (OUT) in LIST (new, stored), epoch
# seconds; `status` prints the job's status.
diff_list() { python3 -c 'import json,sys,datetime
d=json.loads(sys.argv[1])[0]
e=lambda x: int(datetime.datetime.strptime(x["at"],"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())
print(d["status"] if sys.argv[2] == "status" else " ".join(str(e(x)) for x in d[sys.argv[2]]))' "$OUT" "$1"; }
expect_exit "plan diff of the stored every, from an instant off its grid" 0 "$PAL" plan diff --config "$CLUSTER_CONF" \
	--count 3 --from "$(iso $PDF)" --output json "$NODE_DIR/anchor.yaml"
first=$(( ACT + ((PDF - ACT) / 4 + 1) * 4 ))
expect_eq "unchanged, its instants on the activation's grid (activated $ACT)" "unchanged $first $((first + 4)) $((first + 8))" \
	"$(diff_list status) $(diff_list new)"
sed -i "s|every: 4s|every: 5s|" "$NODE_DIR/anchor.yaml"
# Where the controller would take the new version over: its shard's
# watermark, or the job's latest activation if that is later (a tick may
# activate between the two reads), read before and after plan diff.
takeover_at() {
	sql "SELECT floor(extract(epoch FROM greatest(s.watermark, (SELECT max(w.effective_from)
	       FROM job_versions w WHERE w.job_id = j.job_id))))::bigint
	     FROM jobs j JOIN shards s ON s.shard_id = j.shard WHERE j.job_id = 'sf.anchor.job-1'"
}
WM0=$(takeover_at)
TD=$(date +%s)
# The lists from JSON: in the diff-style text an instant on both grids
# is one line, marked neither - nor +.
expect_exit "plan diff of a changed every" 0 "$PAL" plan diff --config "$CLUSTER_CONF" --count 3 \
	--output json "$NODE_DIR/anchor.yaml"
WM1=$(takeover_at)
read -r s1 s2 _ <<<"$(diff_list stored)"
read -r n1 n2 _ <<<"$(diff_list new)"
check "the stored instants on the activation's grid ($s1 $s2)" [ $(( (s1 - ACT) % 4 )) = 0 -a $((s2 - s1)) = 4 ]
# On the grid of a takeover point W in [WM0, WM1 + 1] (seconds read down,
# an instant may be a fraction after): n1 = W + 5k, the first
# such instant after plan diff's `from` (its clock, TD) and after W.  That
# is W + 5 unless the watermark lags the clock (a loaded box).
new_on_grid() { local w lo; [ "$n2" = $((n1 + 5)) ] || return 1
	for w in $(seq "$WM0" $((WM1 + 1))); do lo=$(( TD > w ? TD : w ))
		[ $(( (n1 - w) % 5 )) = 0 ] && [ "$n1" -gt "$lo" ] && [ "$n1" -le $((lo + 6)) ] && return 0; done; return 1; }
check "the new ones on the grid of the takeover at its shard's watermark ($WM0..$WM1, plan diff at $TD) + 5 s ($n1 $n2)" new_on_grid
stop_node f1
echo "    took $(($(date +%s) - T_START)) s"
finish
