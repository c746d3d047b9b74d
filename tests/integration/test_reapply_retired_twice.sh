#!/usr/bin/env bash
# A retired job applied again (apply A), then changed again by apply B
# before its controller took A's version in.  The jobs are deleted (--wait 0)
# while a tick that planned from the old version is in flight (its insert
# held 3 s, as in test_reapply_retired_race), so that tick writes rows of the
# old version after the delete's sweep.  The controller is stopped while A
# (schedule every 2 s) and B (a timeout changed) commit, so it goes from the
# retiring version straight to B's version; A's version is never activated.
# B does not sweep for the retirement (the job is no longer retired in B, and
# a cron has no cut), so A's sweep after its commit judges the old rows by
# the job's latest version (B's) past the switch point of the version the
# controller took in: none of the old version's rows at an odd second runs,
# and verify is clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a retired job applied again, then changed again at once, runs nothing its old version planned after the re-apply"
fresh_db it_reapply_retired_twice
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
N=4
retired_in_flight $N
# the controller is stopped for a moment: apply A commits, apply B commits, then it ticks
pause_node f1
sed -i 's|cron: "\* \* \* \* \* ?"|cron: "*/2 * * * * ?"|' "$NODE_DIR/e.yaml"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml" >"$NODE_DIR/a.out" 2>&1 &
APID=$!
v3() { [ "$(sql "select count(*) from job_versions where job_id like 'rt.ret.%' and version = 3")" = $N ]; }
wait_until "apply A committed" 15 v3
sed -i 's|timeout: 2s|timeout: 3s|' "$NODE_DIR/e.yaml"
expect_exit "apply B (a timeout changed)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
echo "$OUT" | sed "s/^/    B| /" | head -5
resume_node f1
wait $APID; expect_eq "apply A exits 0" 0 "$?"
sed "s/^/    A| /" "$NODE_DIR/a.out" | grep -v "^    A| updated" | head -5
resume_node x1
APPLIED=$(sql "select floor(extract(epoch from min(created_at)))::bigint from job_versions where job_id like 'rt.ret.%' and version = 3")
sleep 12
retired_judge $N "$APPLIED"
stop_node x1
stop_node f1
finish
