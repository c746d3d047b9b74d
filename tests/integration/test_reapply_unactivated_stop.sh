#!/usr/bin/env bash
# A job stopped by a version that no controller activated before the job was
# applied again: `delete --wait 0` and the apply within one scan of 3 s, and
# the same with the shard's controller down across both.  The stop takes
# over as if it had been activated in time: the instants before it run under
# the old version, none between the stop and the re-apply runs or is
# recorded as a misfire, and the re-applied version runs every instant after
# its apply (docs/jobs.md, "Where a new version takes over").  While the
# controller is down, also a job deleted, applied, deleted and applied again
# (the version between the two stops runs its instants between its apply and
# the second stop), and one made a one-shot and then a cron job again (the
# one-shot's instant, before the second apply, runs once).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a stop that was never activated before the next apply still stops the job: no instant of its retired period runs, none after the re-apply is lost"
fresh_db it_reapply_stop
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=3s LOOKAHEAD=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/q.yaml" 1 "* * * * * ?" t1 rs.quick
gen_sink_jobs "$NODE_DIR/d.yaml" 1 "* * * * * ?" t1 rs.down
gen_sink_jobs "$NODE_DIR/m.yaml" 1 "* * * * * ?" t1 rs.mid
gen_sink_jobs "$NODE_DIR/o.yaml" 1 "* * * * * ?" t1 rs.once
cp "$NODE_DIR/o.yaml" "$NODE_DIR/o-cron.yaml"
Q=rs.quick.job-1
D=rs.down.job-1
M=rs.mid.job-1
O=rs.once.job-1
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(( $(date +%s) + 1 ))
expect_exit "apply the jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/q.yaml" "$NODE_DIR/d.yaml" "$NODE_DIR/m.yaml" "$NODE_DIR/o.yaml"
sleep 7
# Within one scan: the retiring version and the re-applied one are both
# stored before the controller reads either.
expect_exit "delete $Q without waiting" 0 "$PAL" delete --wait 0 --reason "stop" "$Q"
expect_exit "apply $Q again at once" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/q.yaml"
sleep 4
# The controller down across the delete and the apply, longer than the
# lookahead: the retirement and the re-apply are both after what it planned.
stop_node f1
sleep 6
expect_exit "delete $D while its controller is down" 0 "$PAL" delete --wait 0 --reason "stop" "$D"
expect_exit "delete $M while its controller is down" 0 "$PAL" delete --wait 0 --reason "stop" "$M"
AT=$(( $(date +%s) + 3 ))
sed -i "s|schedule: {cron: \"[^\"]*\"}|schedule: {at: $(iso $AT)}|" "$NODE_DIR/o.yaml"
expect_exit "make $O a one-shot while its controller is down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o.yaml"
sleep 2
expect_exit "apply $M again while its controller is down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/m.yaml"
sleep 2
expect_exit "apply $D again while its controller is down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/d.yaml"
expect_exit "delete $M again while its controller is down" 0 "$PAL" delete --wait 0 --reason "stop" "$M"
expect_exit "make $O a cron job again while its controller is down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/o-cron.yaml"
sleep 2
expect_exit "apply $M a third time while its controller is down" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/m.yaml"
sleep 1
start_node f1
wait_until "shards led again" 40 all_shards_led
sleep 9
T1=$(( $(date +%s) - 2 ))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= to_timestamp($T1) and state not in ('succeeded', 'cancelled')")" = 0 ]; }
wait_until "the window's triggers ended" 30 settled
for j in $Q $D; do
	sql "select version, effective_from, created_at, activated_at, spec->'schedule' from job_versions where job_id = '$j' order by 1" | sed "s/^/    | /"
	expect_eq "$j: its retiring version was not activated before the re-apply was stored" 1 \
		"$(sql "select count(*) from job_versions r, job_versions a where r.job_id = '$j' and a.job_id = r.job_id and r.version = 2 and a.version = 3 and (r.activated_at is null or r.activated_at >= a.created_at)")"
	R=$(sql "select extract(epoch from (spec #>> '{schedule,end}')::timestamptz)::bigint from job_versions where job_id = '$j' and version = 2")
	A=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$j' and version = 3")
	sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$j' and scheduled_at >= to_timestamp($R - 3) and scheduled_at <= to_timestamp($A + 8) group by 1, 2 order by 3, 2" | sed "s/^/    | /"
	# a row of the old version claimed before the retirement is left to finish
	# (claimed while the retirement's transaction ran: within a second of
	# its start, the retiring version's created_at)
	early="t.version = 1 and t.first_claimed_at < (select created_at + interval '1 second' from job_versions where job_id = '$j' and version = 2)"
	expect_eq "$j: no row of the retired period (its end to the re-apply) ran or is live" 0 \
		"$(sql "select count(*) from triggers t where t.job_id = '$j' and t.scheduled_at >= to_timestamp($R) and t.scheduled_at <= to_timestamp($A) and t.state <> 'cancelled' and not ($early)")"
	expect_eq "$j: no misfire recorded in the retired period" 0 \
		"$(sql "select count(*) from misfires where job_id = '$j' and range_to >= to_timestamp($R) and range_from <= to_timestamp($A)")"
	expect_eq "$j: every second of the 6 after the re-apply has a live row of the re-applied version (or one claimed before the retirement)" 0 \
		"$(sql "select count(*) from generate_series($A + 1, $A + 6) s where not exists (select 1 from triggers t where t.job_id = '$j' and t.scheduled_at = to_timestamp(s) and t.state <> 'cancelled' and (t.version = 3 or $early))")"
	"$PAL" verify --job "$j" --from "$(iso $T0)" --to "$(iso $T1)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
	echo "    | verify $j: $(jq -c "{missing, unexpected, misfired, samples}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
	expect_eq "$j: verify finds no missing instant" 0 "$(jq -r .missing "$NODE_DIR/v.out" 2>/dev/null)"
	expect_eq "$j: verify finds no unexpected instant" 0 "$(jq -r .unexpected "$NODE_DIR/v.out" 2>/dev/null)"
	expect_eq "$j: verify is clean" 0 "$rc"
done
vf() { "$PAL" verify --job "$1" --from "$(iso $T0)" --to "$(iso $T1)" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
	echo "    | verify $1: $(jq -c "{missing, unexpected, misfired, samples}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
	expect_eq "$1: verify is clean" "0 0 0" "$(jq -r '"\(.missing) \(.unexpected)"' "$NODE_DIR/v.out" 2>/dev/null) $rc"; }
ver() { sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$1' and version = $2"; }
live() { sql "select count(*) from triggers t where t.job_id = '$1' and t.scheduled_at > to_timestamp($2) and t.scheduled_at <= to_timestamp($3) and t.state <> 'cancelled'${4:+ and t.version = $4}"; }
sql "select version, effective_from, created_at, activated_at, spec->'schedule' from job_versions where job_id = '$M' order by 1" | sed "s/^/    | /"
sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$M' and scheduled_at > to_timestamp($T0 + 10) group by 1, 2 order by 4" | sed "s/^/    | /"
expect_eq "$M: none of its versions after the first was activated before the last was stored" 0 \
	"$(sql "select count(*) from job_versions r, job_versions a where r.job_id = '$M' and a.job_id = r.job_id and r.version between 2 and 4 and a.version = 5 and r.activated_at < a.created_at")"
R1=$(ver $M 2); A1=$(ver $M 3); R2=$(ver $M 4); A2=$(ver $M 5)
expect_eq "$M: nothing ran or is live between the first stop and the apply after it" 0 "$(live $M $R1 $A1)"
expect_eq "$M: nothing ran or is live between the second stop and the apply after it" 0 "$(live $M $R2 $A2)"
expect_eq "$M: the version between the two stops ran each of its $(( R2 - A1 )) seconds (apply to second stop)" "$(( R2 - A1 ))" \
	"$(sql "select count(distinct t.scheduled_at) from triggers t where t.job_id = '$M' and t.version = 3 and t.state = 'succeeded' and t.scheduled_at > to_timestamp($A1) and t.scheduled_at <= to_timestamp($R2)")"
expect_eq "$M: every second of the 6 after the last apply has a live row of its version" 0 \
	"$(sql "select count(*) from generate_series($A2 + 1, $A2 + 6) s where not exists (select 1 from triggers t where t.job_id = '$M' and t.scheduled_at = to_timestamp(s) and t.state <> 'cancelled' and t.version = 5)")"
vf $M
sql "select version, effective_from, created_at, activated_at, spec->'schedule' from job_versions where job_id = '$O' order by 1" | sed "s/^/    | /"
sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from triggers where job_id = '$O' and scheduled_at > to_timestamp($T0 + 10) group by 1, 2 order by 4" | sed "s/^/    | /"
expect_eq "$O: its one-shot version was not activated before the cron version was stored" 1 \
	"$(sql "select count(*) from job_versions r, job_versions a where r.job_id = '$O' and a.job_id = r.job_id and r.version = 2 and a.version = 3 and (r.activated_at is null or r.activated_at >= a.created_at)")"
S2=$(ver $O 2); C3=$(ver $O 3)
expect_eq "$O: the one-shot's instant, before the cron version's apply, ran once" "1 $AT" \
	"$(sql "select count(*) || ' ' || coalesce(min(extract(epoch from scheduled_at)::bigint), 0) from triggers where job_id = '$O' and state = 'succeeded' and scheduled_at > to_timestamp($S2) and scheduled_at <= to_timestamp($C3)")"
expect_eq "$O: every second of the 6 after the cron version's apply has a live row of it" 0 \
	"$(sql "select count(*) from generate_series($C3 + 1, $C3 + 6) s where not exists (select 1 from triggers t where t.job_id = '$O' and t.scheduled_at = to_timestamp(s) and t.state <> 'cancelled' and t.version = 3)")"
vf $O
stop_node x1
stop_node f1
finish
