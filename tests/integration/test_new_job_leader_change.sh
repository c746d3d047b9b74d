#!/usr/bin/env bash
# Brand-new jobs over the row cap are activated in slices, each as of the
# tick that first saw them; the others wait.  That first sight is kept in
# the leader's memory: here the leader is killed (kill -9) after its first
# slice and before the last, and a new leader loads the waiting jobs.  It
# activates those stored before the shard's last write before its claim
# (the previous leader's last committed tick) as of when they were stored,
# at or before that first sight, so every instant from the first sight
# (the first slice's effective_from) to the watermark has a trigger or a
# misfire, for every job, none twice; so for the half of the waiting jobs
# applied again (a second version) while no controller runs: they are
# judged by when their first version was stored.  (Activated as of the new leader's
# own first tick, the 1 569 jobs still waiting after the first slice of
# 431 had 4 707 instants with neither, and verify, walking each job from
# its effective_from, found nothing.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 new jobs waiting for activation when the shard changes leader: every instant from the first sight on has a trigger or a misfire, none twice"
cap_leader it_new_job_leader_change
# ~120 rows each up to the watermark: ~416 jobs a tick under the cap of 50 000
N=2000
gen_sink_jobs "$NODE_DIR/a.yaml" $N "* * * * * ?" t1 cap
n_act() { sql "select count(*) from job_versions where job_id like 'cap.%' and effective_from is not null"; }
# The leader ticks again at once after a slice: polled for the first
# slice, a loaded box lets the next ones (all of them) commit before the
# kill.  A row trigger holds the activation of any tick after the one
# that committed the first slice (activated_at before the holding tick's
# own start), so the leader dies with that slice only; the held
# transaction is cut off with it.
sql "create function test_hold_slice() returns trigger language plpgsql as \$\$
 begin
   if exists (select 1 from job_versions where job_id like 'cap.%' and activated_at < now()) then
     perform pg_sleep(120);
   end if;
   return new;
 end \$\$;
 create trigger hold_slice before update of effective_from on job_versions for each row
 when (old.effective_from is null and new.effective_from is not null and new.job_id like 'cap.%')
 execute function test_hold_slice()" >/dev/null
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a.yaml" >/dev/null &
apply_pid=$!
held() { [ "$(sql "select count(*) from pg_stat_activity where $OUR_SLEEP")" -ge 1 ]; }
wait_until "the tick after the first slice is held" 120 held
kill9_node f1
sql "select pg_terminate_backend(pid) from pg_stat_activity where $OUR_SLEEP" >/dev/null
sql "drop trigger hold_slice on job_versions; drop function test_hold_slice()" >/dev/null
wait $apply_pid
a=$(n_act)
echo "    activated when the leader was killed: $a of $N"
expect_eq "some jobs wait for activation when the leader dies" 1 "$([ "$a" -gt 0 ] && [ "$a" -lt $N ] && echo 1 || echo 0)"
F=$(sql "select min(extract(epoch from effective_from))::bigint from job_versions where job_id like 'cap.%'")
# half the waiting jobs get a second version while no controller runs:
# stored after the shard's last write, they keep the first one's apply
cap_waiting | awk 'NR % 2 == 0' >"$NODE_DIR/redo"
cap_reapply "$NODE_DIR/redo"
start_node f2
wait_until "shards led again" 40 all_shards_led
all_active() { [ "$(n_act)" = $N ]; }
wait_until "the $N jobs activated" 60 all_active
sleep 4
echo "    effective_from of the jobs (first sight $F): $(sql "select string_agg(d || ' s: ' || n, ', ') from (select extract(epoch from effective_from)::bigint - $F d, count(*) n from job_versions where job_id like 'cap.%' group by 1 order by 1) s")"
expect_eq "every instant in (first sight, watermark] of every job has a trigger or a misfire" 0 "$(cap_undecided "$F")"
expect_eq "the same for the $(wc -l <"$NODE_DIR/redo") re-applied while no controller ran" 0 "$(cap_undecided "$F" "v.version = 2")"
expect_eq "no instant has two triggers" 0 "$(cap_twice)"
expect_eq "no instant has both a trigger and a misfire" 0 \
	"$(sql "select count(*) from trigger_jobs t join misfires m on m.job_id = t.job_id
	         and t.scheduled_at between m.range_from and m.range_to where t.job_id like 'cap.%'")"
from=$(date -u -d "@$((F - 2))" +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%SZ)
out=$("$PAL" verify --from "$from" --to "$to" 2>&1); rc=$?
echo "$out" | head -3 | sed 's/^/      verify: /'
expect_eq "verify from the first sight on: clean" 0 "$rc"
stop_node f2
finish
