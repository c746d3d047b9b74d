#!/usr/bin/env bash
# The apply race: a job stopped by its spec (`end` just passed) while the
# shard's controller is planning it.  A statement trigger of the test holds
# the controller's insert of triggers for 3 s, so the apply commits while a
# tick that planned from the old version is in flight (and while the other
# shard's tick of the same pass has not heard of it yet): that tick writes
# its rows after the sweep of the apply's transaction.  After its commit the
# apply waits for the controllers to take the new version in and sweeps
# again, as `delete` does (docs/jobs.md, "Where a new version takes over"),
# so nothing of the old version after the end runs but a row claimed before
# the apply, and verify is clean.  The executor runs on a node of its own,
# stopped from just before the apply until it returns: the apply's version
# is stored at its transaction's start, and a row an executor claims while
# the apply waits for the tick would have been claimed after the apply
# (verify counts it), a window of the test's 3 s hold, not of the race.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a version applied with its end reached stops the job at the apply, even while a tick of the old version is in flight"
fresh_db it_reapply_race
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
N=6
gen_sink_jobs "$NODE_DIR/e.yaml" $N "* * * * * ?" t1 rr.end
gen_sink_jobs "$NODE_DIR/a.yaml" $N "* * * * * ?" t1 rr.api
"$PAL" token create --name deployer --role admin | tail -1 >"$NODE_DIR/admin.token"
hold_inserts_setup
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(iso $(( $(date +%s) - 1 )))
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml" "$NODE_DIR/a.yaml"
sleep 6
hold_inserts 3
wait_until "a tick's insert of triggers is held" 10 insert_held
pause_node x1
END=$(( $(date +%s) - 1 ))
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $END)}|" "$NODE_DIR/e.yaml"
expect_exit "re-apply with an end just passed" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
# what the held tick wrote after the apply's sweep is cancelled by the
# apply's second sweep, or first by the controller's tick that activates the
# new version below the watermark (write_takeovers, src/store/plan.c)
swept() { grep -Eq "note: [0-9]+ triggers? planned from a replaced version during the apply cancelled" <<<"$OUT" ||
	has "select count(*) from audit_log where action = 'cancel' and actor like 'controller:%' and scope like 'job:rr.end.%'"; }
check "what the held tick wrote after the sweep is cancelled after the commit (the apply says so, or the controller audited it)" swept
echo "$OUT" | grep "^palisade apply: note:" | sed "s/^/    | /"
expect_eq "the controllers took the new versions in within the wait" 0 "$(grep -c "not taken in" <<<"$OUT")"
# The same through the API (POST /api/v1/apply, the same store call, without
# the wait: the API answers at once how many jobs are still settling).
# The ticks' hold is 1 s from here: the API's apply waits for a tick that
# holds its shard's row, and two 3-s holds in a row outlast the API's
# statement timeout (5 s) on a loaded box (a 503, nothing applied).
hold_inserts 1
END2=$(( $(date +%s) - 1 ))
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $END2)}|" "$NODE_DIR/a.yaml"
A0=$(date +%s%N)
expect_exit "re-apply through the API" 0 "$PAL" apply --server "http://${NODE_ADMIN[f1]}" \
	--token-file "$NODE_DIR/admin.token" --output json "$NODE_DIR/a.yaml"
echo "    | takeover: $(jq -c .takeover <<<"$OUT" 2>/dev/null)"
echo "    | API apply took $(( ($(date +%s%N) - A0) / 1000000 )) ms"
API_LATE=$(jq -r '.takeover.late_cancelled // 0' <<<"$OUT" 2>/dev/null || echo 0)
expect_match "the API's answer: the jobs still settling" '^[0-9]+$' "$(jq -r .takeover.settling <<<"$OUT" 2>/dev/null)"
APPLIED=$(date +%s.%N)
resume_node x1
sleep 1
hold_inserts 0
sleep 10
T1=$(iso $(( $(date +%s) - 1 )))
sql "select job_id, extract(epoch from scheduled_at)::bigint - $END, version, state from trigger_jobs where scheduled_at > to_timestamp($END) and job_id like 'rr.end.%' order by 1, 2" | tr "\n" " " | sed "s/^/    job|offset|version|state: /"; echo
ran=$(sql "select count(*) from triggers t where job_id like 'rr.end.%' and scheduled_at >= to_timestamp($END)
  and state <> 'cancelled' and not exists (select 1 from attempt_ledger a where a.trigger_id = t.id
  and a.scheduled_at = t.scheduled_at and a.claimed_at < to_timestamp($APPLIED))")
expect_eq "nothing at or after the end runs but a row claimed before the apply" 0 "$ran"
# the CLI's jobs only: the API's apply did not wait, its old versions' late
# rows may run (docs/api.md)
unexp=0 rcs=0
for i in $(seq 1 $N); do
	"$PAL" verify --from "$T0" --to "$T1" --job "rr.end.job-$i" --sink-pg "$PALISADE_PG" \
		--output json >"$NODE_DIR/v.out" 2>&1 || rcs=$((rcs + 1))
	unexp=$((unexp + $(jq -r .unexpected "$NODE_DIR/v.out" 2>/dev/null || echo 1)))
done
expect_eq "verify finds no unexpected effect" 0 "$unexp"
expect_eq "verify is clean" 0 "$rcs"
expect_eq "the apply's second sweep is audited as its first" t "$(sql "select count(*) > 0 from audit_log where action = 'cancel'
  and details ->> 'cause' like 'a version that takes over at its apply%'
  and scope like 'job:rr.end.%' and id > (select max(id) from audit_log where action = 'job.update'
  and scope like 'job:rr.end.%')")"
expect_eq "so is the API's, when it cancelled any" "$(( API_LATE > 0 ))" "$(sql "select count(*) from audit_log where action = 'cancel' and actor = 'deployer'
  and details ->> 'cause' like 'a version that takes over at its apply%'
  and scope like 'job:rr.api.%' and id > (select max(id) from audit_log where action = 'job.update'
  and scope like 'job:rr.api.%')" | awk '{print ($1 > 0)}')"
stop_node x1
stop_node f1
finish
