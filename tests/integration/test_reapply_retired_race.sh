#!/usr/bin/env bash
# The apply race for a retired job applied again: the jobs are deleted (with
# --wait 0: `delete` sweeps once, as the API's DELETE does) while a tick of
# their controller that planned from the old version is in flight (its
# insert of triggers held 3 s by a statement trigger of the test), so that
# tick writes rows of the old version after the delete's sweep, up to 8 s
# ahead.  Once the controller has taken the retiring versions in, the jobs
# are applied again with another schedule (every 2 s): the new version takes
# over at the apply (docs/jobs.md, "Where a new version takes over"), and
# the old version's rows after it are not its to run.  After its commit the
# apply waits for the controllers to take the new version in and cancels
# what an older version planned after the switch point they stored, but at
# the instants the new version fires itself, as for a job that was not
# retired: no such row runs and verify is clean.  The executor is stopped
# from the delete until the apply returns, as in test_reapply_race.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a retired job applied again runs nothing its old version planned after the apply, even when a tick of the old version outlived the delete, but the instants the new version fires"
fresh_db it_reapply_retired_race
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
N=4
retired_in_flight $N
sed -i 's|cron: "\* \* \* \* \* ?"|cron: "*/2 * * * * ?"|' "$NODE_DIR/e.yaml"
expect_exit "apply them again, every 2 s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
echo "$OUT" | grep "^palisade apply: note:" | sed "s/^/    | /"
resume_node x1
APPLIED=$(sql "select floor(extract(epoch from max(created_at)))::bigint from job_versions where job_id like 'rt.ret.%'")
expect_match "it says what it swept after its commit" "note: [0-9]+ triggers? planned from a replaced version during the apply cancelled" "$OUT"
expect_eq "the controllers took the new versions in within the wait" 0 "$(grep -c "not taken in" <<<"$OUT")"
sleep 10
retired_judge $N "$APPLIED"
stop_node x1
stop_node f1
finish
