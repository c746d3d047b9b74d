#!/usr/bin/env bash
# Brand-new jobs the row cap left for a later tick are activated as of the
# tick that first saw them.  When that later tick comes late (here the
# first tick's insert is held 55 s, standing for a slow tick or a stall),
# their first instants are past the misfire threshold while the tick holds
# half its row cap in catch-ups already.  Such a job is not activated
# there without its missed run: it waits for a tick with room.  Checked:
# the committed state after that tick (what a new leader would resume
# from, at watermark - overlap) has a trigger or a misfire for every
# instant from each activation to the watermark; no instant past the
# threshold is planned later as an ordinary trigger (past the misfire
# policy and max_catchup); and after a kill -9 and a new leader nothing is
# lost.  (Activated alone, 215 of the 431 jobs that tick activated had
# neither a trigger nor a misfire after it, 6,235 instants undecided, the
# next ticks re-planted them as ordinary triggers, and 2,622 were lost to
# the new leader.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 new jobs deferred by the row cap and activated late: every instant from the activation to the watermark has a trigger or a misfire, by the misfire policy, crash or not"
it_db
sink_up
SHARDS=1
ZK_SESSION=10s LOOKAHEAD=30s MISFIRE=32s write_conf "$CLUSTER_CONF" "postgres: {statement_timeout: 2m}"
export PALISADE_STALL_LIMIT_MS=600000
hold_inserts_setup
# The tick after the late one is held at its first insert while the test
# reads what the late tick committed, f1 alive (its session kept): an
# insert waits while it_next holds a row and more cap.* jobs than N_FIRST
# (the first tick's, set once seen) were activated before its transaction.
sql "create table it_next (n_first int);
create function it_next_tick() returns trigger language plpgsql as \$\$
begin
	while exists (select 1 from it_next where n_first < (select count(*) from job_versions
	                where job_id like 'cap.%' and activated_at < now())) loop
		perform pg_sleep(0.05);
	end loop;
	return null;
end \$\$;
create trigger it_next before insert on triggers for each statement execute function it_next_tick();" >/dev/null
lead_shards 40 f1
wm_ahead() { [ "$(sql "select (watermark > now() + interval '25 s')::int from shards")" = 1 ]; }
wait_until "the watermark is ~30 s ahead" 30 wm_ahead
# The first tick activates about 416 jobs (its row cap, 50,000, over 30 s
# of 4 partitions), the late one about 200 (the rest of its cap after the
# catch-ups of the first ones): N leaves a few hundred for the ticks
# after.  Not more: every activated job adds 4 rows a second, and while
# jobs wait the watermark stays below them; at 3,400 jobs (13,600 rows a
# second) a loaded 2-core box fell behind, the waiting jobs' missed runs
# grew with every tick, and neither the activations (2,578 in 4 minutes)
# nor a new leader's catch-up ended in time.
N=1000
gen_sink_jobs "$NODE_DIR/a.yaml" $N "* * * * * ?" t1 cap "partitions: 4"
# no job yet, so no tick inserts: the first that does is the one that first sees the new jobs
hold_inserts 55
expect_exit "apply $N every-second jobs (partitions 4)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a.yaml"
wait_until "the first tick's insert is held" 30 insert_held
hold_inserts 0
n_act() { sql "select count(*) from job_versions where job_id like 'cap.%' and effective_from is not null"; }
lost() {
	sql "select count(*) from job_versions v cross join lateral
	       generate_series(extract(epoch from v.effective_from)::bigint + 1, (select extract(epoch from watermark)::bigint from shards)) g
	      where v.job_id like 'cap.%' and v.effective_from is not null
	        and not exists (select 1 from trigger_jobs t where t.job_id = v.job_id and t.partition = 0
	                         and extract(epoch from t.scheduled_at)::bigint = g)
	        and not exists (select 1 from misfires m where m.job_id = v.job_id
	                         and g between extract(epoch from m.range_from)::bigint and extract(epoch from m.range_to)::bigint)"
}
first="" late=""
for i in $(seq 1 600); do
	a=$(n_act)
	[ -z "$first" ] && [ "$a" -gt 0 ] && {
		first=$a
		echo "    the first tick activated $a"
		sql "insert into it_next values ($a)" >/dev/null
	}
	if [ -n "$first" ] && [ "$a" -gt "$first" ]; then
		# the late tick committed: its state as a new leader would find it,
		# read while the next tick is held
		wait_until "the next tick's insert is held" 60 insert_held
		t0=$SECONDS
		late=$(lost)
		echo "    the late tick: $(n_act) of $N activated; activated with neither a trigger nor a misfire: $(sql "select count(*) from job_versions v where v.job_id like 'cap.%' and v.effective_from is not null and not exists (select 1 from trigger_jobs t where t.job_id = v.job_id) and not exists (select 1 from misfires m where m.job_id = v.job_id)")"
		sql "delete from it_next" >/dev/null
		echo "    (the next tick held $((SECONDS - t0)) s for the read)"
		break
	fi
	sleep 0.2
done
expect_eq "committed state after the late tick: every instant in (activation, watermark] has a trigger or a misfire" 0 "$late"
all_active() { [ "$(n_act)" = $N ]; }
wait_until "the $N jobs activated" 90 all_active
sleep 3
expect_eq "no instant past the threshold planned as an ordinary trigger (the misfire policy decides those)" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id like 'cap.%' and partition = 0 and source = 'schedule' and created_at > scheduled_at + interval '34 s'")"
echo "    triggers of cap.* by source: $(sql "select string_agg(source || '=' || n, ' ') from (select source, count(*) n from trigger_jobs where job_id like 'cap.%' and partition = 0 group by 1) s")"
# (a leader change meanwhile activates the waiting ones as of their apply,
# before that tick: test_new_job_leader_change.sh)
expect_eq "none activated after the tick that first saw them" 0 \
	"$(sql "select count(*) from job_versions where job_id like 'cap.%' and effective_from >
	         (select effective_from from job_versions where job_id like 'cap.%' order by activated_at, effective_from limit 1)")"
kill9_node f1
start_node f2
wait_until "shards led again" 80 all_shards_led
sleep 6
expect_eq "after a kill -9 and a new leader: every instant in (activation, watermark] has a trigger or a misfire" 0 "$(lost)"
expect_eq "no instant has two triggers" 0 \
	"$(sql "select count(*) from (select 1 from trigger_jobs where job_id like 'cap.%' group by job_id, partition, scheduled_at having count(*) > 1) d")"
stop_node f2
finish
