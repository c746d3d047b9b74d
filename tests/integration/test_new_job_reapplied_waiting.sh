#!/usr/bin/env bash
# Brand-new jobs over the row cap wait for activation, each as of the tick
# that first saw it.  200 of them are applied again (a second version)
# while they wait, under the same leader: the reload keeps that first
# sight, so every instant from it to the watermark has a trigger or a
# misfire, none twice.  (The reload forgot it: those jobs were activated
# as of the next tick after the re-apply, and their instants in between
# had neither; without the row cap they would have kept them, the first
# version activated at once and the second taking over at the watermark.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 new jobs applied again while they wait for activation: every instant from the first sight on has a trigger or a misfire, none twice"
# a lookahead of 6 min: ~360 rows each up to the watermark, ~140 jobs a tick
cap_leader it_new_job_reapplied_waiting 6
N=1200
gen_sink_jobs "$NODE_DIR/a.yaml" $N "* * * * * ?" t1 cap
n_act() { sql "select count(*) from job_versions where job_id like 'cap.%' and effective_from is not null"; }
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a.yaml" >/dev/null
some_act() { [ "$(n_act)" -gt 0 ]; }
wait_until "a first slice activated" 30 some_act
F=$(sql "select min(extract(epoch from effective_from))::bigint from job_versions where job_id like 'cap.%'")
cap_waiting | shuf -n 200 >"$NODE_DIR/redo"
echo "    activated before the re-apply: $(n_act) of $N"
cap_reapply "$NODE_DIR/redo"
n2=$(sql "select count(*) from jobs j where j.job_id like 'cap.%' and j.latest_version = 2
          and not exists (select 1 from job_versions v where v.job_id = j.job_id and v.effective_from is not null)")
expect_eq "some re-applied jobs still wait for activation" 1 "$([ "$n2" -gt 0 ] && echo 1 || echo 0)"
all_active() { [ "$(sql "select count(*) from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id like 'cap.%' and v.effective_from is not null")" = $N ]; }
wait_until "the $N jobs activated" 120 all_active
sleep 4
expect_eq "every instant in (first sight, watermark] of the jobs applied once has a trigger or a misfire" 0 "$(cap_undecided "$F" "v.version = 1")"
expect_eq "the same for the jobs applied again while they waited" 0 "$(cap_undecided "$F" "v.version = 2")"
expect_eq "no instant has two triggers" 0 "$(cap_twice)"
stop_node f1
finish
