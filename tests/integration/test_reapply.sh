#!/usr/bin/env bash
# delete + a quick re-apply of a running job: every instant after the
# re-apply runs, planned by the new version from the apply on (the apply
# deletes the rows after it that the retirement cancelled before any
# attempt), none of the retired period runs or is recorded, no instant has
# two effects, verify is clean, and verify reports an instant after the
# re-apply that nothing ran, and an activation stored later than the
# switch point.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 - delete + re-apply neither doubles nor silently loses instants"
fresh_db it_reapply
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=2 LOOKAHEAD=5s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: ra.sec, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/ra"}}
YAML
T0=$(rfc3339_ago -2)
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led
ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'ra.sec' and state = 'succeeded'")" -ge 3 ]; }
wait_until "the job runs" 20 ran
expect_exit "delete" 0 "$PAL" delete --reason "retire" ra.sec
sleep 2
expect_exit "re-apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
V=$(sql "select latest_version from jobs where job_id = 'ra.sec'")
R=$(sql "select extract(epoch from (spec->'schedule'->>'end')::timestamptz)::bigint from job_versions where job_id = 'ra.sec' and version = $V - 1")
A=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = 'ra.sec' and version = $V")
# the 8 s after the re-apply have run (succeeded), or 30 s have passed
unrun_after() { sql "select count(*) from generate_series(to_timestamp($A + 1), to_timestamp($A + 8), interval '1 s') g(t) where not exists (select 1 from trigger_jobs t where t.job_id = 'ra.sec' and t.scheduled_at = g.t and t.state = 'succeeded')"; }
all_ran_after() { [ "$(unrun_after)" = 0 ]; }
wait_until "the 8 s after the re-apply ran" 30 all_ran_after
sql "select to_char(scheduled_at at time zone 'UTC','HH24:MI:SS'), version, state, source from trigger_jobs where job_id = 'ra.sec' and scheduled_at > to_timestamp($R - 2) order by scheduled_at, id limit 30" | tr '\n' ' ' | fold -w 150 | sed 's/^/    | /'
echo
E=$(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = 'ra.sec' and version = $V")
RUNS=$(sql "select coalesce(sum((details->>'deleted')::int), 0) from audit_log where action = 'job.reapply' and scope = 'job:ra.sec'")
echo "    figure: retired at $(date -u -d @$R +%T), re-applied at $(date -u -d @$A +%T), v$V takes over at $(date -u -d @$E +%T); $RUNS rows after the re-apply that the retirement had cancelled deleted by the apply"
expect_eq "no instant with two effects" 0 "$(sql "select count(*) from (select split_part(idempotency_key,'/',2) from sink_effects group by 1 having count(*) > 1) x")"
L=$(unrun_after)
echo "    figure: $L instants in the 8 s after the re-apply that did not run"
expect_eq "every instant after the re-apply runs" 0 "$L"
E2=$(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = 'ra.sec' and version = $V - 1")
expect_eq "the retiring version took over when it was stored, not a lookahead later" 1 "$(( E2 < R ))"
expect_eq "v$V takes over at the re-apply" "$A" "$E"
expect_eq "every instant after the re-apply is v$V's scheduled row" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'ra.sec' and scheduled_at > to_timestamp($A) and (version <> $V or request_id is not null)")"
expect_eq "the scenario has instants after the re-apply that the retirement cancelled" 1 "$(( RUNS >= 1 ))"
expect_eq "none of the retired period runs" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'ra.sec' and scheduled_at >= to_timestamp($R) and scheduled_at <= to_timestamp($A) and state <> 'cancelled'")"
expect_eq "nor is recorded as a misfire" 0 \
	"$(sql "select count(*) from misfires where job_id = 'ra.sec' and range_to >= to_timestamp($R)")"
expect_eq "the apply's deletions are audited with the rows' ids" "$RUNS" \
	"$(sql "select coalesce(sum(jsonb_array_length(details->'trigger_ids')), 0) from audit_log where action = 'job.reapply' and scope = 'job:ra.sec'")"
TO=$(rfc3339_ago 3)
expect_exit "verify" 0 "$PAL" verify --from "$T0" --to "$TO"
# An instant after the re-apply with no row of the new version is a loss
# verify sees.
sql "with t as (select id from triggers where job_id = 'ra.sec' and scheduled_at = to_timestamp($A + 1)),
       a as (delete from attempts where trigger_id in (select id from t))
     delete from triggers where id in (select id from t)" >/dev/null
expect_exit "verify without the row of an instant after the re-apply" 2 "$PAL" verify --from "$T0" --to "$TO"
expect_match "names it missing" "missing=1( |$)" "$OUT"
# What a planner that switched a lookahead late left: v$V activated 3 s
# later and nothing planned in between.  verify recomputes the switch point
# (the retiring version has no instant after it), so those 3 are missing.
sql "with t as (select id from triggers where job_id = 'ra.sec' and version = $V and scheduled_at <= to_timestamp($E + 3)),
       a as (delete from attempts where trigger_id in (select id from t))
     delete from triggers where id in (select id from t)" >/dev/null
sql "update job_versions set effective_from = to_timestamp($E + 3) where job_id = 'ra.sec' and version = $V" >/dev/null
expect_exit "verify of a switch point stored a lookahead late" 2 "$PAL" verify --from "$T0" --to "$TO"
expect_match "names the instants in between missing" "missing=3 " "$OUT"
finish
