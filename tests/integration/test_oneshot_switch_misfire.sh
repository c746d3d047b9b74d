#!/usr/bin/env bash
# A switch to or from a one-shot applied while the shard's controller is
# away past its lookahead, the controller back after the misfire threshold:
# the old version keeps (W, apply] and the tick plans those instants as
# missed. A missed run that crosses the switch is split there: each
# version's instants are decided by its own misfire policy and its misfire
# rows name it (docs/jobs.md, "Misfire policy across a version switch").
#  zs.skip: cron (skip) made a one-shot (fire_all): no cron second in
#           (W, apply] runs; one `missed` row, version 1, policy skip.
#  zs.all:  cron (fire_all) made a one-shot (fire_once): every cron second in
#           (W, apply] runs once; no misfire row names version 2.
#  zs.at:   a one-shot at T1 (fire_once), T1 in (W, apply], made a cron job
#           (skip): the one-shot's instant runs once; the cron version's
#           missed seconds are recorded under version 2, none before its apply.
#  zs.every: a one-shot (far ahead) made `every: 7s` (no start): while it
#           awaits activation `jobs --next` counts from the apply, as the
#           controller then does, not from the old watermark.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a missed run across a switch to or from a one-shot is decided by each version's own policy"
fresh_db it_oneshot_switch_misfire
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=1s LOOKAHEAD=3s MISFIRE=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
T0=$(( $(date +%s) + 1 ))
T1=$(( T0 + 20 ))
gen_sink_jobs "$NODE_DIR/s.yaml" 1 "* * * * * ?" t1 zs.skip
sed -i "s|policy: fire_all|policy: skip|" "$NODE_DIR/s.yaml"
gen_sink_jobs "$NODE_DIR/a.yaml" 1 "* * * * * ?" t1 zs.all
gen_sink_jobs "$NODE_DIR/t.yaml" 1 "* * * * * ?" t1 zs.at
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $T1)}|; s|policy: fire_all|policy: fire_once|" "$NODE_DIR/t.yaml"
gen_sink_jobs "$NODE_DIR/e.yaml" 1 "* * * * * ?" t1 zs.every
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $(( T0 + 600 )))}|" "$NODE_DIR/e.yaml"
S=zs.skip.job-1
A=zs.all.job-1
B=zs.at.job-1
E=zs.every.job-1
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s.yaml" "$NODE_DIR/a.yaml" "$NODE_DIR/t.yaml" "$NODE_DIR/e.yaml"
sleep 5
stop_node f1
W0=$(sql "select extract(epoch from watermark)::bigint from shards limit 1")
echo "    | watermark when the controller stopped: $W0 (now $(date +%s)), one-shot $B at $T1"
while [ "$(date +%s)" -le $(( T1 + 2 )) ]; do sleep 1; done
AT=$(( $(date +%s) + 2 ))
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|; s|policy: skip|policy: fire_all|" "$NODE_DIR/s.yaml"
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|; s|policy: fire_all|policy: fire_once|" "$NODE_DIR/a.yaml"
gen_sink_jobs "$NODE_DIR/t2.yaml" 1 "* * * * * ?" t1 zs.at
sed -i "s|policy: fire_all|policy: skip|" "$NODE_DIR/t2.yaml"
sed -i "s|schedule: {at: [^}]*}|schedule: {every: 7s}|" "$NODE_DIR/e.yaml"
expect_exit "while down: $S and $A made one-shots, $B a cron job, $E an every: 7s job" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s.yaml" "$NODE_DIR/a.yaml" "$NODE_DIR/t2.yaml" "$NODE_DIR/e.yaml"
"$PAL" jobs "$E" --next 3 --output json >"$NODE_DIR/next.json" 2>&1
echo "    | jobs $E --next 3 while down: $(jq -c '.[0].next' "$NODE_DIR/next.json" 2>/dev/null || head -c 300 "$NODE_DIR/next.json")"
sleep 12
start_node f1
wait_until "shards led again" 40 all_shards_led
sleep 8
T2=$(( $(date +%s) - 6 ))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= to_timestamp($T2) and state not in ('succeeded', 'cancelled')")" = 0 ]; }
wait_until "settled" 40 settled
ver() { sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$1' and version = $2"; }
# palisade misfires --job J --output json: "VERSION POLICY REASON COUNT FROM TO"
# per row (FROM and TO in epoch seconds), oldest first
listed() {
	"$PAL" misfires --job "$1" --output json 2>/dev/null |
		jq -r '.[] | "\(.version) \(.policy) \(.reason) \(.count)\t\(.range_from)\t\(.range_to)"' |
		while IFS=$'\t' read -r head from to; do
			echo "$head $(date -u -d "$from" +%s) $(date -u -d "$to" +%s)"
		done | sort -k5n
}
for j in $S $A $B $E; do
	sql "select version, effective_from, created_at, spec->'schedule', spec->'misfire' from job_versions where job_id = '$j' order by 1" | sed "s/^/    | /"
	sql "select version, state, source, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$j' group by 1, 2, 3 order by 5" | sed "s/^/    | /"
	listed "$j" | sed "s/^/    | misfires: /"
	"$PAL" verify --job "$j" --from "$(iso $T0)" --to "$(iso $T2)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
	expect_eq "$j: verify clean" "0 0 0" "$(jq -r '"\(.missing) \(.unexpected)"' "$NODE_DIR/v.out" 2>/dev/null) $rc"
done
SS=$(ver $S 2)
SA=$(ver $A 2)
SB=$(ver $B 2)
echo "    | watermark $W0, one-shots stored $SS ($S) $SA ($A), cron stored $SB ($B), at $AT"
expect_eq "$S: no cron second in (W, apply] ran (the cron version's skip)" 0 \
	"$(sql "select count(*) from triggers where job_id = '$S' and version = 1 and scheduled_at > to_timestamp($W0)")"
expect_eq "$S: palisade misfires lists (W, apply] missed under version 1, skip" \
	"1 skip missed $(( SS - W0 )) $(( W0 + 1 )) $SS" "$(listed $S)"
expect_eq "$S: the one-shot's instant ran once" 1 \
	"$(sql "select count(*) from triggers where job_id = '$S' and version = 2 and scheduled_at = to_timestamp($AT) and state = 'succeeded'")"
expect_eq "$A: every cron second in (W, apply] ran once (the cron version's fire_all)" 0 \
	"$(sql "select count(*) from generate_series($W0 + 1, $SA) s where (select count(*) from triggers t where t.job_id = '$A' and t.version = 1 and t.scheduled_at = to_timestamp(s) and t.state = 'succeeded') <> 1")"
expect_eq "$A: palisade misfires lists nothing (no instant of either version missed)" "" "$(listed $A)"
expect_eq "$A: the one-shot's instant ran once" 1 \
	"$(sql "select count(*) from triggers where job_id = '$A' and version = 2 and scheduled_at = to_timestamp($AT) and state = 'succeeded'")"
expect_eq "$B: the one-shot's instant (before the cron apply) ran once (its fire_once)" 1 \
	"$(sql "select count(*) from triggers where job_id = '$B' and version = 1 and scheduled_at = to_timestamp($T1) and state = 'succeeded'")"
expect_eq "$B: palisade misfires names version 2 (skip) for the cron seconds only, none at or before its apply" \
	"0" "$(listed $B | awk -v from="$SB" '$1 != 2 || $2 != "skip" || $5 <= from' | wc -l)"
expect_eq "$B: no cron second ran before the run caught up (skip)" 0 \
	"$(sql "select count(*) from triggers where job_id = '$B' and version = 2 and source = 'catchup'")"
planned=$(sql "select string_agg(floor(extract(epoch from scheduled_at))::bigint::text, ' ' order by scheduled_at) from (select scheduled_at from triggers where job_id = '$E' and version = 2 order by scheduled_at limit 3) x")
shown=$(jq -r '.[0].next[]' "$NODE_DIR/next.json" 2>/dev/null | while read -r t; do date -u -d "$t" +%s; done | tr '\n' ' ' | sed 's/ $//')
echo "    | $E: effective_from $(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = '$E' and version = 2"), stored $(ver $E 2)"
expect_eq "$E: jobs --next while it awaited activation named the instants the controller planned" "$planned" "$shown"
stop_node x1
stop_node f1
finish
