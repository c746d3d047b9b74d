#!/usr/bin/env bash
# An apply whose version takes over (end reached) waits for the controller
# (a scan of 3 s); meanwhile a second apply re-enables the job (no end) and
# the controller plans that newer version.  The first apply's sweep after its
# commit leaves the job to the later apply: no row of the newer version is
# cancelled and none of its instants after its apply is lost (verify, from
# the first version's activation on).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the sweep an apply runs after its commit never cancels the rows of a version a later apply stored"
fresh_db it_reapply_newer
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; SCAN=3s LOOKAHEAD=5s SHARDS=1 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
gen_sink_jobs "$NODE_DIR/e.yaml" 1 "* * * * * ?" t1 rn.new
cp "$NODE_DIR/e.yaml" "$NODE_DIR/e3.yaml"
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
expect_exit "apply v1" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
sleep 7
END=$(( $(date +%s) - 1 ))
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $END)}|" "$NODE_DIR/e.yaml"
# The executor is stopped across both applies: the version applied with its
# `end` reached takes over at its transaction's start, so a row claimed
# between that start and the statement that cancels the old version's rows
# (seconds on a loaded box) would run an instant after the stop, which
# verify rightly counts as unexpected (as in test_verify_gap).
pause_node x1
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml" >"$NODE_DIR/a1.out" 2>&1 &
A1=$!
sleep 0.5
sed -i "s|misfire: {policy: fire_all}|misfire: {policy: fire_all}\n    description: back on|" "$NODE_DIR/e3.yaml"
expect_exit "apply v3 (no end) while the first apply settles" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e3.yaml"
T3=$(date +%s)
resume_node x1
wait $A1; rc=$?; echo "    | first apply: $(tr '\n' ' ' <"$NODE_DIR/a1.out")"
expect_eq "the first apply succeeds" 0 "$rc"
sql "select version, spec->'schedule' from job_versions where job_id = 'rn.new.job-1' order by 1" | sed "s/^/    | /"
sleep 8
sql "select version, state, count(*), min(scheduled_at), max(scheduled_at) from trigger_jobs where job_id = 'rn.new.job-1' and scheduled_at > to_timestamp($T3) group by 1,2 order by 1,2" | sed "s/^/    | /"
expect_eq "no row of the latest version is cancelled" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'rn.new.job-1' and version = (select latest_version from jobs where job_id = 'rn.new.job-1') and state = 'cancelled'")"
# From the latest version's apply (the version applied with its `end`
# reached took over at its own apply, activated or not before it): every
# instant after it runs, none is lost between the apply and the watermark.
A3=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = 'rn.new.job-1' and version = 3")
expect_eq "every second of the 6 after the latest version's apply has a live row" 0 "$(sql "select count(*) from generate_series($A3 + 1, $A3 + 6) s where not exists (select 1 from triggers t where t.job_id = 'rn.new.job-1' and t.scheduled_at = to_timestamp(s) and t.state <> 'cancelled')")"
EFF1=$(sql "select extract(epoch from effective_from)::bigint from job_versions where job_id = 'rn.new.job-1' and version = 1")
"$PAL" verify --from "$(iso $(( EFF1 + 1 )))" --to "$(iso $(( $(date +%s) - 1 )))" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
echo "    | verify: $(jq -c "{missing, unexpected, misfired}" "$NODE_DIR/v.out" 2>/dev/null || head -c 300 "$NODE_DIR/v.out")"
expect_eq "verify finds no missing instant" 0 "$(jq -r .missing "$NODE_DIR/v.out" 2>/dev/null)"
expect_eq "verify is clean" 0 "$rc"
stop_node x1
stop_node f1
finish
