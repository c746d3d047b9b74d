#!/usr/bin/env bash
# A job whose planning fails is quarantined; the rest of its shard keeps
# being planned.  Failures: the database refuses the job's rows (a
# constraint), the job's time zone no longer opens at a load.  The job gets
# a ticket and a metric, its instants are recorded as misfires with reason
# quarantined, verify reports it (exit 2), and `palisade release` (audited)
# puts it back into planning.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job whose planning fails is quarantined (ticket, metric, misfires with reason quarantined, reported by verify) while the rest of its shard keeps being planned; release is an audited operator action"

fresh_db it_quarantine
"$PAL" migrate >/dev/null
SHARDS=1 write_conf "$CLUSTER_CONF"
SHARDS=1
{
	echo "jobs:"
	for j in poison qz.badzone qz.good1 qz.good2 qz.good3; do
		echo "  - {id: $j, schedule: {cron: \"* * * * * ?\"}, misfire: skip, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
T0=$(rfc3339_ago -3)
start_node q1
wait_until "shard led" 20 all_shards_led
all_planned() { [ "$(sql "select count(distinct job_id) from trigger_jobs")" = 5 ]; }
wait_until "every job planned" 20 all_planned

# The database starts refusing the rows of one job (a constraint).
sql "alter table triggers add constraint it_poison check (job_ref <> $(sql "select ref from jobs where job_id = 'poison'")) not valid" >/dev/null
quarantined() { [ "$(sql "select count(*) from quarantine where job_id = '$1'")" = 1 ]; }
wait_until "the refused job is quarantined" 20 quarantined poison
good_at() { sql "select extract(epoch from max(scheduled_at))::bigint from trigger_jobs where job_id = 'qz.good1'"; }
# planned past what it had when g1 was read (each tick plans the next second)
advanced() { [ "$(good_at)" -gt "$g1" ]; }
g1=$(good_at)
wait_until "the rest of the shard keeps being planned" 15 advanced
# (a ZooKeeper session that timed out on a starved machine drops the shard
# too, and has nothing to do with the refused rows)
expect_eq "no shard dropped, no database error" 0 \
	"$(grep '"event":"controller.shard_dropped"\|"event":"controller.db_error"' "$NODE_DIR/q1.log" |
		grep -vc '"reason":"zookeeper disconnected"')"
q_misfires() { [ "$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'poison' and reason = 'quarantined'")" -gt 0 ]; }
wait_until "its instants are recorded as misfires with reason quarantined" 10 q_misfires
expect_eq "an open ticket whose action is release" "open|{release}" \
	"$(sql "select t.state, t.allowed_actions from tickets t join quarantine q on q.ticket_id = t.id where q.job_id = 'poison'")"
check "metric palisade_controller_quarantined_total" [ "$(metric q1 palisade_controller_quarantined_total | cut -d. -f1)" -ge 1 ]
check "log controller.job_quarantined" grep -q '"event":"controller.job_quarantined".*"job":"poison"' "$NODE_DIR/q1.log"
sleep 5
T1=$(rfc3339_ago 1)
expect_exit "verify reports the quarantined job (exit 2: mismatch)" 2 "$PAL" verify --from "$T0" --to "$T1"
expect_match "verify names it" "quarantined +poison" "$OUT"
expect_exit "verify of a healthy job alone is clean" 0 "$PAL" verify --job qz.good2 --from "$T0" --to "$T1"

# The operator fixes the cause and releases the job.
sql "alter table triggers drop constraint it_poison" >/dev/null
expect_exit "release needs a reason" 64 "$PAL" release poison
expect_exit "palisade release poison" 0 "$PAL" release poison --reason "constraint dropped"
REL=$(date +%s)
expect_eq "quarantine row gone" 0 "$(sql "select count(*) from quarantine")"
expect_eq "ticket resolved as released" "resolved|released" \
	"$(sql "select state, resolution from tickets where reason like 'quarantined%' and job_id = 'poison'")"
expect_eq "release audited" 1 "$(sql "select count(*) from audit_log where action = 'job.release' and scope = 'job:poison' and reason = 'constraint dropped'")"
planned_after() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'poison' and scheduled_at > to_timestamp($REL)")" -gt 0 ]; }
wait_until "the released job is planned again" 20 planned_after
expect_exit "release of a job not quarantined: not found (3)" 3 "$PAL" release poison --reason again
# The window ends 2 s from now; verify once the shard has planned past it
# (rather than a lookahead's margin of wall clock after it).
T2=$(rfc3339_ago -2)
sleep 2
wait_until "the shard planned past the window" 15 planned_past "$T2"
expect_exit "verify of the released job over the whole run: every instant triggered or recorded" 0 \
	"$PAL" verify --job poison --from "$T0" --to "$T2"
echo "    $OUT" | head -1

# A time zone that no longer opens: found when a controller loads the job.
sql "update job_versions set timezone = 'Gone/Nowhere' where job_id = 'qz.badzone'" >/dev/null
stop_node q1
start_node q1
wait_until "a job whose zone no longer opens is quarantined at load" 20 quarantined qz.badzone
g1=$(good_at)
wait_until "the rest of the shard is planned after the restart" 15 advanced
expect_match "its error names the zone" "Gone/Nowhere" "$(sql "select error from quarantine where job_id = 'qz.badzone'")"

# The planner itself fails on one job (computing its next instants; no
# real input reaches such a failure, so the test switch
# PALISADE_FAULT_PLAN_JOB injects it after the job's rows went into the
# tick's batch).  Without isolation the shard's every tick failed and no job
# of it was planned; now the job alone is quarantined in the same tick.
stop_node q1
PALISADE_FAULT_PLAN_JOB=qz.good3 start_node q1
wait_until "a job whose planning fails in the planner is quarantined" 20 quarantined qz.good3
g1=$(good_at)
wait_until "the rest of the shard keeps being planned (planner failure)" 15 advanced
expect_eq "no failed tick, dropped shard or database error after the restart" 0 \
	"$(sed -n '/controller.fault_injection/,$p' "$NODE_DIR/q1.log" | grep -c '"event":"controller.tick_failed"\|"event":"controller.shard_dropped"\|"event":"controller.db_error"')"
expect_match "its error names the failure" "PALISADE_FAULT_PLAN_JOB" "$(sql "select error from quarantine where job_id = 'qz.good3'")"
expect_eq "an open ticket for it whose action is release" "open|{release}" \
	"$(sql "select t.state, t.allowed_actions from tickets t join quarantine q on q.ticket_id = t.id where q.job_id = 'qz.good3'")"
q_misfires_of() { [ "$(sql "select coalesce(sum(count), 0) from misfires where job_id = '$1' and reason = 'quarantined'")" -gt 0 ]; }
wait_until "its instants are recorded as misfires with reason quarantined (planner failure)" 10 q_misfires_of qz.good3
check "metric palisade_controller_quarantined_total counts it" [ "$(metric q1 palisade_controller_quarantined_total | cut -d. -f1)" -ge 1 ]
check "log controller.job_quarantined names it" grep -q '"event":"controller.job_quarantined".*"job":"qz.good3"' "$NODE_DIR/q1.log"
expect_eq "nothing of it planned after its quarantine" 0 \
	"$(sql "select count(*) from trigger_jobs t join quarantine q using (job_id) where job_id = 'qz.good3' and t.scheduled_at > q.since")"
T3=$(rfc3339_ago 1)
expect_exit "verify reports it (exit 2)" 2 "$PAL" verify --job qz.good3 --from "$T0" --to "$T3"
expect_match "verify names it" "quarantined +qz.good3" "$OUT"

# A cause that is not one job's: the trigger rows of every job are refused.
# Bisecting finds each job refused on its own; none is quarantined (that
# would need an operator's release per job), the shard's tick fails and is
# tried again after a back-off, the shard is kept.
MARK=$(wc -l <"$NODE_DIR/q1.log")
sql "alter table triggers add constraint it_all check (false) not valid" >/dev/null
refused_all() { tail -n +"$MARK" "$NODE_DIR/q1.log" | grep -q '"event":"controller.tick_failed".*rows of every one of the 3 jobs with triggers'; }
wait_until "a batch refused for every job is logged as not one job's fault" 10 refused_all
sleep 2
expect_eq "no job quarantined for it" 0 \
	"$(sql "select count(*) from quarantine where job_id in ('qz.good1', 'qz.good2', 'poison')")"
expect_eq "the shard is kept" 0 "$(tail -n +"$MARK" "$NODE_DIR/q1.log" | grep -c '"event":"controller.shard_dropped"')"
check "the shard's tries back off" grep -q '"event":"controller.tick_failed".*"retry_ms":2000' "$NODE_DIR/q1.log"
sql "alter table triggers drop constraint it_all" >/dev/null
g1=$(good_at)
wait_until "planning resumes once the cause is gone (within the back-off)" 40 advanced
finish
