#!/usr/bin/env bash
# The apply race: a job stopped by its spec (`end` just passed) while the
# shard's controller is planning it.  A statement trigger of the test holds
# the controller's insert of triggers for 3 s, so the apply commits while a
# tick that planned from the old version is in flight (and while the other
# shard's tick of the same pass has not heard of it yet).  The apply waits
# for the tick that holds its jobs and then sweeps what it planned; a tick
# planned before the controller heard of the apply is refused and planned
# again from the new version.  Nothing of the old version after the end
# runs but a row claimed before the apply, and verify is clean
# (docs/jobs.md, "Where a new version takes over").  The executor runs on
# a node of its own, stopped from just before the apply until it returns:
# the apply's version is stored at its transaction's start, and a row an
# executor claims while the apply waits for the tick would have been
# claimed after the apply (verify counts it), a window of the test's 3 s
# hold, not of the race.
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
sql "create table it_slow (n int);
create function it_slow_tick() returns trigger language plpgsql as \$\$
begin if exists (select 1 from it_slow) then perform pg_sleep(3); end if; return null; end \$\$;
create trigger it_slow before insert on triggers for each statement execute function it_slow_tick();" >/dev/null
start_node f1
start_node x1 --roles executor
wait_until "shards led" 40 all_shards_led
T0=$(iso $(( $(date +%s) - 1 )))
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
sleep 6
sql "insert into it_slow values (1)" >/dev/null
in_sleep() { [ "$(sql "select count(*) from pg_stat_activity where wait_event = 'PgSleep' and query like 'INSERT INTO triggers%'")" -ge 1 ]; }
wait_until "a tick's insert of triggers is held" 10 in_sleep
pause_node x1
END=$(( $(date +%s) - 1 ))
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {cron: \"* * * * * ?\", end: $(iso $END)}|" "$NODE_DIR/e.yaml"
expect_exit "re-apply with an end just passed" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/e.yaml"
APPLIED=$(date +%s.%N)
resume_node x1
sleep 1
sql "delete from it_slow" >/dev/null
sleep 10
T1=$(iso $(( $(date +%s) - 1 )))
sql "select job_id, extract(epoch from scheduled_at)::bigint - $END, version, state from trigger_jobs where scheduled_at > to_timestamp($END) order by 1, 2" | tr "\n" " " | sed "s/^/    job|offset|version|state: /"; echo
ran=$(sql "select count(*) from triggers t where job_id like 'rr.end.%' and scheduled_at >= to_timestamp($END)
  and state <> 'cancelled' and not exists (select 1 from attempt_ledger a where a.trigger_id = t.id
  and a.scheduled_at = t.scheduled_at and a.claimed_at < to_timestamp($APPLIED))")
expect_eq "nothing at or after the end runs but a row claimed before the apply" 0 "$ran"
"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG" --output json >"$NODE_DIR/v.out" 2>&1; rc=$?
expect_eq "verify finds no unexpected effect" 0 "$(jq -r .unexpected "$NODE_DIR/v.out" 2>/dev/null)"
expect_eq "verify is clean" 0 "$rc"
echo "    ticks refused for a version stored after their plan: $(grep -c '"controller.tick_superseded"' "$NODE_DIR/f1.log")"
stop_node x1
stop_node f1
finish
