#!/usr/bin/env bash
# delete + re-apply, three ways at once:
# - rt.sec: two delete + apply rounds within one second: every instant after
#   the last apply runs once, verify is clean (no false duplicate);
# - rc.job: applied again with a daily schedule and a new target: nothing
#   after the apply runs on the old schedule or at the old target;
# - ar.up (ar.dn runs after it): its dependent runs after every instant the
#   upstream ran after its re-apply, with no false upstream_failed misfire.
# The apply deletes the rows after it that the retirement cancelled before
# any attempt, and the new version plans those instants by its own spec.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 - delete + re-apply rounds, a changed spec and a dependent neither double nor lose instants"
fresh_db it_reapply_rounds
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=2 LOOKAHEAD=10s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
# job_file FILE ID REST: a one-job file
job_file() { printf 'jobs:\n  - {id: %s, %s}\n' "$2" "$3" >"$NODE_DIR/$1.yaml"; }
EVERY='schedule: {cron: "* * * * * ?"}'
job_file rt rt.sec "$EVERY, target: {url: \"http://$SINK_ADDR/effects/rt\"}"
job_file old rc.job "$EVERY, target: {url: \"http://$SINK_ADDR/effects/old\"}"
job_file new rc.job "schedule: {cron: \"0 0 3 * * ?\"}, target: {url: \"http://$SINK_ADDR/effects/new\"}"
job_file up ar.up "$EVERY, target: {url: \"http://$SINK_ADDR/effects/up\"}"
job_file dn ar.dn "after: [{job: ar.up, on: succeeded}], target: {url: \"http://$SINK_ADDR/effects/dn\"}"
for f in rt old up dn; do
	expect_exit "apply $f" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/$f.yaml"
done
start_node n1
wait_until "shards led" 20 all_shards_led
ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'ar.dn' and state = 'succeeded'")" -ge 3 ]; }
wait_until "the jobs run" 30 ran
T0=$(rfc3339_ago 1)
# rt.sec: both rounds just after a second boundary (mostly in one second)
python3 -c 'import time; time.sleep(1.05 - time.time() % 1)'
"$PAL" delete --reason r1 rt.sec >/dev/null
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rt.yaml" >/dev/null
"$PAL" delete --reason r2 rt.sec >/dev/null
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rt.yaml" >/dev/null
SAME=$(sql "select count(distinct spec->'schedule'->>'end') from job_versions where job_id = 'rt.sec' and spec->'schedule' ? 'end'")
echo "    figure: both retirements of rt.sec in one second: $([ "$SAME" = 1 ] && echo yes || echo no)"
expect_exit "delete rc.job and ar.up" 0 "$PAL" delete --reason "retire" rc.job ar.up
sleep 1
expect_exit "re-apply rc.job with a daily schedule and a new target" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/new.yaml"
expect_exit "re-apply ar.up" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/up.yaml"
created() { sql "select ceil(extract(epoch from v.created_at))::bigint from job_versions v join jobs j using (job_id) where j.job_id = '$1' and v.version = j.latest_version"; }
ART=$(created rt.sec) ARC=$(created rc.job) AUP=$(created ar.up)
sleep 14
L=$(sql "select count(*) from generate_series(to_timestamp($ART), to_timestamp($ART + 8), interval '1 s') g(t) where not exists (select 1 from trigger_jobs t where t.job_id = 'rt.sec' and t.scheduled_at = g.t and t.state = 'succeeded')")
echo "    figure: $L instants of rt.sec in the 9 s from its last re-apply that did not run"
expect_eq "rt.sec: every instant after the last re-apply runs" 0 "$L"
expect_eq "no instant with two effects" 0 "$(sql "select count(*) from (select split_part(idempotency_key,'/',1), split_part(idempotency_key,'/',2) from sink_effects group by 1, 2 having count(*) > 1) x")"
expect_eq "no run with a request id (the apply runs nothing itself)" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id in ('rt.sec', 'rc.job', 'ar.up') and request_id is not null")"
expect_eq "the rows the retirements cancelled after an apply are deleted, audited with their ids" 1 \
	"$(sql "select (count(*) >= 3 and bool_and((details->>'deleted')::int = jsonb_array_length(details->'trigger_ids')))::int from audit_log where action = 'job.reapply'")"
OLD=$(sql "select count(*) from sink_effects where path like '%/effects/old' and scheduled_at > to_timestamp($ARC)")
echo "    figure: $OLD effects at /effects/old for instants after the re-apply of rc.job"
expect_eq "rc.job: no effect at the old target for an instant after the re-apply" 0 "$OLD"
expect_eq "rc.job: no trigger after the re-apply outside the new schedule (03:00:00 daily)" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'rc.job' and scheduled_at > to_timestamp($ARC) and state <> 'cancelled' and to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') <> '03:00:00'")"
UPRAN=$(sql "select count(*) from trigger_jobs where job_id = 'ar.up' and state = 'succeeded' and scheduled_at >= to_timestamp($AUP) and scheduled_at < now() - interval '3 s'")
NODN=$(sql "select count(*) from trigger_jobs u where u.job_id = 'ar.up' and u.state = 'succeeded' and u.scheduled_at >= to_timestamp($AUP) and u.scheduled_at < now() - interval '3 s' and not exists (select 1 from trigger_jobs d where d.job_id = 'ar.dn' and d.scheduled_at = u.scheduled_at and d.state = 'succeeded')")
echo "    figure: ar.up ran $UPRAN instants after its re-apply; ar.dn misfires: $(sql "select coalesce(string_agg(reason || ':' || count, ' '), 'none') from misfires where job_id = 'ar.dn'")"
expect_eq "ar.up runs after its re-apply" 1 "$(( UPRAN >= 5 ))"
expect_eq "ar.dn runs after each instant ar.up ran after its re-apply" 0 "$NODN"
expect_eq "ar.dn has no upstream_failed misfire after the re-apply" 0 \
	"$(sql "select count(*) from misfires where job_id = 'ar.dn' and reason = 'upstream_failed' and range_to >= to_timestamp($AUP)")"
TO=$(rfc3339_ago 3)
expect_exit "verify" 0 "$PAL" verify --from "$T0" --to "$TO"
expect_match "verify: nothing missing, no duplicate" "missing=0 duplicates=0 unexpected=0 " "$OUT"
finish
