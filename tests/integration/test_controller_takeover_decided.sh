#!/usr/bin/env bash
# A leader's tick that defers one job's catch-up (the row cap) commits a
# watermark below the missed runs it decided for the jobs before it.  The
# leader dies after that tick; its successor resumes each job after the
# latest instant the database holds for it, not at watermark - overlap:
# an instant recorded as not fired is never planted as a trigger, and no
# missed run is decided twice.  A 10-day outage is simulated as
# test_outage_long.sh does (watermark and activations moved back while no
# node runs).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2: after a takeover in the middle of a long catch-up, an instant the first leader recorded as not fired (skip, over_max_catchup) gets no trigger and no second misfire row; the successor decides the rest of each missed run exactly once"

fresh_db it_takeover_decided
"$PAL" migrate >/dev/null
SHARDS=1 SCAN=5s LOOKAHEAD=5s OVERLAP=10s MISFIRE=15s write_conf "$CLUSTER_CONF"
SHARDS=1
{
	echo "jobs:"
	echo "  - {id: aa.skip, schedule: {cron: \"* * * * * ?\"}, misfire: {policy: skip}, target: {url: \"http://127.0.0.1:9/x\"}}"
	for i in 01 02 03 04; do
		echo "  - {id: f$i.minutely, schedule: {cron: \"0 * * * * ?\"}, misfire: {policy: fire_all, catchup_window: 30d, max_catchup: 10000}, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply five jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node l1
wait_until "shard led" 30 all_shards_led
activated() { [ "$(sql "select count(*) from jobs where active_version = 1")" = 5 ]; }
wait_until "every job activated" 30 activated
stop_node l1
# Every node down for 10 days; the watermark back to :20 of a minute.
sql "begin; delete from triggers; delete from misfires;
 update job_versions set effective_from = effective_from - interval '10 days 1 hour',
   activated_at = activated_at - interval '10 days 1 hour';
 update shards set watermark = date_trunc('minute', watermark) + interval '20 seconds' - interval '10 days';
 commit" >/dev/null
W0=$(sql "select extract(epoch from watermark)::bigint from shards")
# The leader ticks again at once after its first tick (the claim's tick,
# then the pass's own): the second one would finish the catch-up before
# the kill.  A row trigger holds any tick that moves the watermark past
# an hour of the outage, so the leader dies with only its first tick
# committed; the held transaction is cut off with it.
sql "create function test_hold_tick() returns trigger language plpgsql as \$\$
 begin perform pg_sleep(120); return new; end \$\$;
 create trigger hold_tick before update on shards for each row
 when (new.watermark > to_timestamp($W0 + 3600)) execute function test_hold_tick()" >/dev/null
start_node l1
skipped() { [ "$(sql "select count(*) from misfires where job_id = 'aa.skip'")" -ge 1 ]; }
wait_until "aa.skip's missed run recorded" 60 skipped
held() { [ "$(sql "select count(*) from pg_stat_activity where $OUR_SLEEP")" -ge 1 ]; }
wait_until "the second tick is held" 60 held
kill9_node l1
sql "select pg_terminate_backend(pid) from pg_stat_activity where $OUR_SLEEP" >/dev/null
sql "drop trigger hold_tick on shards; drop function test_hold_tick()" >/dev/null
W1=$(sql "select extract(epoch from watermark)::bigint from shards")
echo "    first leader's tick: watermark W0 + $((W1 - W0)), misfire rows $(sql "select count(*) from misfires")"
check "the first tick deferred a catch-up (its watermark below its decided runs)" \
	[ "$((W1 - W0))" -lt 3600 ]
start_node l2
wait_until "shard led by l2" 30 all_shards_led
planned_by_l2() { [ "$(sql "select extract(epoch from watermark)::bigint from shards")" -gt "$(($(date +%s) - 30))" ]; }
wait_until "l2 caught up" 60 planned_by_l2
stop_node l2

# Each instant of (W0, watermark] in exactly one row: a trigger or a
# misfire range.
both=$(sql "select count(*) from triggers t join misfires m on m.job_id = t.job_id
  and t.scheduled_at between m.range_from and m.range_to")
twice=$(sql "select count(*) from misfires a join misfires b on a.job_id = b.job_id and a.id < b.id
  and a.range_from <= b.range_to and b.range_from <= a.range_to")
echo "    triggers inside a misfire range: $both; overlapping misfire rows: $twice"
check "no instant recorded as not fired has a trigger" [ "$both" = 0 ]
check "no instant is in two misfire rows" [ "$twice" = 0 ]
WM=$(sql "select extract(epoch from watermark)::bigint from shards")
skip_n=$(sql "select (select coalesce(sum(count), 0) from misfires where job_id = 'aa.skip')
  + (select count(*) from triggers where job_id = 'aa.skip' and scheduled_at > to_timestamp($W0))
  - (select count(*) from triggers where job_id = 'aa.skip' and scheduled_at > to_timestamp($WM))")
check "aa.skip: every second of (W0, watermark] decided once ($skip_n of $((WM - W0)))" \
	[ "$skip_n" = "$((WM - W0))" ]
mins=$(( (WM - (W0 + 40)) / 60 + 1 ))
for i in 01 02 03 04; do
	n=$(sql "select (select count(*) from triggers where job_id = 'f$i.minutely'
	   and scheduled_at > to_timestamp($W0) and scheduled_at <= to_timestamp($WM))
	 + (select coalesce(sum(count), 0) from misfires where job_id = 'f$i.minutely')")
	check "f$i.minutely (fire_all): every minute of (W0, watermark] decided once ($n of $mins)" \
		[ "$n" = "$mins" ]
done
expect_exit "verify finds nothing missing or doubled" 0 "$PAL" verify \
	--from "$(date -u -d @$((W0 + 1)) +%Y-%m-%dT%H:%M:%SZ)" --to "$(rfc3339_ago 30)"
# verify flags an instant decided twice: a planner misfire row beside a
# trigger, and two such rows for one instant.
T=$(sql "select extract(epoch from scheduled_at)::bigint from triggers
  where job_id = 'f01.minutely' and source = 'catchup' order by scheduled_at limit 1")
sql "insert into misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
  values ('f01.minutely', 1, to_timestamp($T), to_timestamp($T), 1, 'fire_all', 'over_max_catchup', 0, 1),
         ('aa.skip', 1, to_timestamp($W0 + 5), to_timestamp($W0 + 6), 2, 'skip', 'missed', 0, 1)" >/dev/null
out=$("$PAL" verify --from "$(date -u -d @$((W0 + 1)) +%Y-%m-%dT%H:%M:%SZ)" --to "$(rfc3339_ago 30)" 2>&1)
rc=$?
echo "$out" | grep -m1 "verify:"
expect_eq "verify exits 2 on instants decided twice" 2 "$rc"
check "... counting 3 of them" grep -q "duplicates=3 " <<<"$out"
echo "    took ${SECONDS}s"
finish
