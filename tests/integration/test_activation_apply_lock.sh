#!/usr/bin/env bash
# An apply of job J (v3) and the tick activating J's previous version (v2)
# at once.  The apply locks J's jobs row first and writes its audit row
# last; its `job.update` audit row is held here (before the audit chain's
# lock) until the tick waits for J's row.  The tick must not hold the audit
# chain's lock (7076/4) while it waits: the apply would wait for it in
# turn, and the server would abort one of the two (`deadlock detected`),
# the controller dropping every shard it leads.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an apply and a tick activating the same job take their locks in one order: neither is aborted as a deadlock"
it_db
sink_up
SHARDS=1
write_exec_conf "$CLUSTER_CONF"
sql "create table it_hold (n int);
create function it_hold_audit() returns trigger language plpgsql as \$\$
begin while exists (select 1 from it_hold) loop perform pg_sleep(0.05); end loop; return new; end \$\$;
create trigger a_it_hold before insert on audit_log for each row
 when (new.action = 'job.update') execute function it_hold_audit();" >/dev/null
J=lk.job-1
lead_shards 40 f1
gen_sink_jobs "$NODE_DIR/j1.yaml" 1 "*/10 * * * * ?" t1 lk
gen_sink_jobs "$NODE_DIR/j2.yaml" 1 "*/10 * * * * ?" t1 lk "priority: 2"
gen_sink_jobs "$NODE_DIR/j3.yaml" 1 "*/10 * * * * ?" t1 lk "priority: 3"
expect_exit "apply J" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j1.yaml"
active() { [ "$(sql "select coalesce(active_version, 0) from jobs where job_id = '$J'")" -ge "$1" ]; }
wait_until "J v1 activated" 20 active 1
stop_node f1
expect_exit "apply J v2 (no controller)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j2.yaml"
sql "insert into it_hold values (1)" >/dev/null
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j3.yaml" >"$NODE_DIR/a3.out" 2>&1 &
AP=$!
held() { [ "$(sql "select count(*) from pg_stat_activity where wait_event = 'PgSleep' and query like 'COPY audit_log%'")" -ge 1 ]; }
wait_until "the apply of v3 holds J's row, its audit row held" 20 held
lead_shards 40 f1
waits() { [ "$(sql "select count(*) from pg_stat_activity where wait_event_type = 'Lock' and query like 'WITH a AS (SELECT * FROM unnest(\$1::text[], \$2::int[], \$3::bigint[])%'")" -ge 1 ]; }
wait_until "the tick activating v2 waits for J's row" 20 waits
sql "delete from it_hold" >/dev/null
wait $AP
expect_eq "the apply of v3 commits" 0 "$?"
sed 's/^/    apply: /' "$NODE_DIR/a3.out" | head -3
wait_until "J v3 activated" 20 active 3
sleep 1
expect_eq "no deadlock in the controller's log" 0 "$(grep -c 'deadlock detected' "$NODE_DIR/f1.log")"
expect_eq "the controller dropped no shard for the database" 0 \
	"$(grep '"event":"controller.shard_dropped"' "$NODE_DIR/f1.log" | grep -c 'database unavailable')"
expect_eq "J's versions 2 and 3 activated, the apply's audit rows there" "2 1 1" \
	"$(sql "select count(*) from job_versions where job_id = '$J' and version >= 2 and effective_from is not null") $(sql "select count(*) from audit_log where scope = 'job:$J' and action = 'job.update' and (details ->> 'version')::int = 3") $(sql "select count(*) from audit_log where scope = 'job:$J' and action = 'job.activate' and (details ->> 'version')::int = 2")"
grep -E '"event":"controller\.(db_error|shard_dropped)' "$NODE_DIR/f1.log" | cut -c1-300 | sed 's/^/    f1: /'
stop_node f1
finish
