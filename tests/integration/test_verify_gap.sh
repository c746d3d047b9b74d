#!/usr/bin/env bash
# verify over a window that holds a job's gaps: the instants between the
# stop of a job by one of its versions and the apply that started it again
# belong to no version, so verify neither expects them nor counts them as
# missing, in each shape of a gap (an `end` that passed, then removed or
# moved later; an `end` reached at an apply, then an apply without it, once
# and twice; an `every` without `start`; delete, then apply again), through
# the CLI and the API alike, and none of them runs or is recorded; an
# instant lost inside an active window, before a stop or after a start, is
# still missing (docs/jobs.md, "Where a new version takes over").
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - verify counts as missing the lost instants of a job's active windows, not those of a gap between a version that ended it and the apply that started it again"
fresh_db it_verify_gap
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2 LOOKAHEAD=5s write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
SHARDS=2
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# job ID [schedule extra]: a file of one job firing every second
job() {
	cat >"$NODE_DIR/$1.yaml" <<YAML
jobs:
  - id: $1
    schedule: {cron: "* * * * * ?"${2:+, $2}}
    target: {url: "http://$SINK_ADDR/effects/vg", timeout: 2s}
YAML
}
apply() { expect_exit "$1" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/$2.yaml"; }
start_node g1
# The executor runs on a node of its own, stopped while an apply or a delete
# stops a job: the stopping version takes over at the apply's transaction
# start, so a row the executor claimed between that start and the commit
# (seconds on a loaded box) would run an instant after the stop, which
# verify rightly counts as unexpected: a window of the apply's length, not
# of the gap this test is about.
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(( $(date +%s) + 1 ))
END=$(( T0 + 10 ))
job vg.ended "end: $(iso $END)"         # its end passes, then it is removed
job vg.later "end: $(iso $END)"         # its end passes, then a later one
job vg.stopped                          # stopped by its spec, then started again
job vg.twice                            # the same, two gaps
job vg.deleted                          # deleted, then applied again
job vg.steady                           # never stopped
cat >"$NODE_DIR/vg.every.yaml" <<YAML
jobs:
  - id: vg.every
    schedule: {every: 2s, end: $(iso $END)}
    target: {url: "http://$SINK_ADDR/effects/vg", timeout: 2s}
YAML
JOBS="vg.ended vg.later vg.stopped vg.twice vg.every vg.deleted"
for j in $JOBS vg.steady; do apply "apply $j" $j; done
sleep 4
stop() { job "$1" "end: $(iso $(( $(date +%s) - 1 )))"; pause_node x1
	apply "stop $1 by its spec (end reached)" "$1"; resume_node x1; }
stop vg.stopped
stop vg.twice
pause_node x1
expect_exit "delete vg.deleted" 0 "$PAL" delete --reason "gap" vg.deleted
resume_node x1
sleep 4
job vg.twice
apply "apply vg.twice again" vg.twice
# stopped again once it has run (a loaded box may apply it after END + 2)
ran_again() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'vg.twice' and version = 3 and state = 'succeeded'")" -gt 0 ]; }
wait_until "vg.twice ran between its two gaps" 30 ran_again
while [ "$(date +%s)" -lt $(( END + 2 )) ]; do sleep 0.5; done
stop vg.twice
STOP2=$(date +%s)
# the gap: every stopped job stays stopped for at least 8 s after END, and
# vg.twice 6 s after its second stop
while [ "$(date +%s)" -lt $(( END + 8 )) ] || [ "$(date +%s)" -lt $(( STOP2 + 6 )) ]; do sleep 0.5; done
job vg.ended
job vg.later "end: $(iso $(( END + 600 )))"
job vg.stopped
job vg.twice
cat >"$NODE_DIR/vg.every.yaml" <<YAML
jobs:
  - id: vg.every
    schedule: {every: 2s}
    target: {url: "http://$SINK_ADDR/effects/vg", timeout: 2s}
YAML
for j in $JOBS; do apply "apply $j again" $j; done
sleep 9
T1=$(( $(date +%s) - 3 ))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= to_timestamp($T1) and state not in ('succeeded', 'cancelled')")" = 0 ]; }
wait_until "the window's triggers ended" 30 settled
# The gap of each job: from its last run before the apply that started it
# again to that apply (A, the created_at of its latest version).
for j in $JOBS; do
	A=$(sql "select floor(extract(epoch from v.created_at))::bigint from job_versions v join jobs j using (job_id) where job_id = '$j' and v.version = j.latest_version")
	L=$(sql "select floor(extract(epoch from max(scheduled_at)))::bigint from trigger_jobs where job_id = '$j' and scheduled_at < to_timestamp($A) and state = 'succeeded'")
	echo "    figure: $j last ran at $(iso "$L"), started again at $(iso "$A"): a gap of $(( A - L )) s"
	check "$j has a gap of at least 3 instants" [ $(( A - L )) -ge 4 ]
	expect_eq "none of $j's gap ran or was recorded" 0 \
		"$(sql "select (select count(*) from trigger_jobs where job_id = '$j' and scheduled_at > to_timestamp($L) and scheduled_at <= to_timestamp($A) and state <> 'cancelled')
		 + (select count(*) from misfires where job_id = '$j' and range_to > to_timestamp($L) and range_from <= to_timestamp($A))")"
	"$PAL" verify --job "$j" --from "$(iso "$T0")" --to "$(iso "$T1")" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
	echo "    | $j: $(jq -c "{expected, triggered, misfired, missing, unexpected, samples}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
	expect_eq "verify --job $j counts none of its gap as missing" 0 "$(jq -r .missing "$NODE_DIR/v.out" 2>/dev/null)"
	expect_eq "verify --job $j is clean" 0 "$rc"
done
V=("$PAL" verify --from "$(iso "$T0")" --to "$(iso "$T1")")
expect_exit "verify of every job over the gaps is clean" 0 "${V[@]}"
echo "    $OUT" | head -1
TOK=$("$PAL" token create --name vg-reader --role operator | tail -1)
api() { curl -s -H "Authorization: Bearer $TOK" "http://${NODE_ADMIN[g1]}/api/v1/verify?from=$(iso "$T0")&to=$(iso "$T1")"; }
expect_eq "the API's verify agrees: ok, nothing missing" "true 0" "$(api | jq -r '"\(.ok) \(.missing)"' 2>/dev/null)"
# Instants really lost inside active windows: one of the steady job, one of
# vg.ended before its end and one after the apply that started it again.
A=$(sql "select floor(extract(epoch from v.created_at))::bigint from job_versions v join jobs j using (job_id) where job_id = 'vg.ended' and v.version = j.latest_version")
sql "with t as (select id from triggers where (job_id = 'vg.steady' and scheduled_at = to_timestamp($END + 2))
        or (job_id = 'vg.ended' and scheduled_at in (to_timestamp($END - 2), to_timestamp($A + 2)))),
       a as (delete from attempts where trigger_id in (select id from t))
     delete from triggers where id in (select id from t)" >/dev/null
expect_exit "verify without three rows of active windows fails" 2 "${V[@]}"
expect_match "it counts the three missing" "missing=3 " "$OUT"
expect_match "and names vg.ended's after the apply" "missing +vg.ended $(iso $(( A + 2 )))" "$OUT"
expect_eq "the API counts them too" "false 3" "$(api | jq -r '"\(.ok) \(.missing)"' 2>/dev/null)"
finish
