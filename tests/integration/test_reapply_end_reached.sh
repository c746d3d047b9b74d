#!/usr/bin/env bash
# A job re-applied with an `end` already reached (the operator stops it by
# its spec): the new version has no instant after the apply and takes over
# there, and the apply cancels the old version's unclaimed scheduled rows at
# or after the end (planned up to the lookahead ahead), so nothing after the
# end runs but a row claimed before the apply. verify counts a row of the
# old version that ran after the end as unexpected (docs/jobs.md, "Where a
# new version takes over").
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a version applied with its end reached stops the job at the apply"
fresh_db it_reapply_end
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
J=re.end.job-1
gen_sink_jobs "$NODE_DIR/e.yaml" 1 "* * * * * ?" t1 re.end
start_node f1
wait_until "shards led" 40 all_shards_led
T0=$(iso $(( $(date +%s) - 1 )))
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
sleep 6
END=$(( $(date +%s) - 1 ))
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $END)}|" "$NODE_DIR/e.yaml"
expect_exit "re-apply with an end just passed" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
APPLIED=$(date +%s.%N)
sleep 9
T1=$(iso $(( $(date +%s) - 1 )))
sql "select extract(epoch from scheduled_at)::bigint - $END, version, state from trigger_jobs where job_id = '$J' order by 1" | tr "\n" " " | sed "s/^/    offset|version|state: /"; echo
A=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$J' and version = 2")
E=$(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = '$J' and version = 2")
expect_eq "the version takes over at the apply" "$A" "$E"
planned=$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at > to_timestamp($A)")
check "the old version had planned rows after the apply ($planned)" [ "$planned" -ge 1 ]
# Executors claim up to claim_ahead early: a row claimed before the apply
# is left to finish; every other row at or after the end is cancelled.
ran=$(sql "select count(*) from triggers t where job_id = '$J' and scheduled_at >= to_timestamp($END)
  and state <> 'cancelled' and not exists (select 1 from attempt_ledger a where a.trigger_id = t.id
  and a.scheduled_at = t.scheduled_at and a.claimed_at < to_timestamp($APPLIED))")
expect_eq "nothing at or after the end runs but a row claimed before the apply" 0 "$ran"
cancelled=$(sql "select count(*) from triggers where job_id = '$J' and scheduled_at > to_timestamp($A) and state = 'cancelled' and attempt_count = 0")
check "the apply cancelled the old version's rows after it ($cancelled)" [ "$cancelled" -ge 1 ]
aud=$(sql "select coalesce(sum((details->>'cancelled')::int), 0) from audit_log where action = 'cancel' and scope = 'job:$J' and details->>'cause' like 'a version that takes over at its apply%'")
check "the apply audits what it cancelled ($aud)" [ "$aud" -ge "$cancelled" ]
"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG" >"$NODE_DIR/v.out" 2>&1; rc=$?
sed 's/^/    /' "$NODE_DIR/v.out" | head -3
expect_eq "verify is clean" 0 "$rc"
# A row of the old version that ran after the end (as one did before the
# apply cancelled them) ran outside every version's range: verify says so.
sql "set session_replication_role = replica; update triggers set state = 'succeeded', attempt_count = 1 where job_id = '$J' and id = (select min(id) from triggers where job_id = '$J' and scheduled_at > to_timestamp($A) and state = 'cancelled')" >/dev/null
"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v2.out" 2>&1
expect_eq "verify counts an old row that ran after the end as unexpected" 1 "$(jq -r .unexpected "$NODE_DIR/v2.out" 2>/dev/null)"
stop_node f1
finish
