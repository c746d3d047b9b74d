#!/usr/bin/env bash
# A dependent job with 2 partitions after an upstream with 2 (partition to
# partition).  The upstream's partition 0 succeeded at T, partition 1 is still
# running: the dependency planner wrote the job's T/p0 and has not decided
# T/p1 yet.  The planner decides each (instant, partition) on its own, so
# trigger --at T and a backfill over T are refused (scheduled-instant,
# nothing written): otherwise T/p1 runs twice (the operator's key and the
# planner's), and before the upstream's p1 ended.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "backfill/trigger --at of a dependent job never doubles a partition the dependency planner still runs"
badserver_cluster it_after_backfill_partition 2 60s
# pp.up's partition 1 is answered once HOLD is gone: its instant stays
# running (pp.down's T/p1 undecided) while the backfill and trigger --at
# run, however slow the box.  Each call takes 3 s: T/p0 succeeds 3 s or
# more after T, so the backfill's range (to now - 1 s) holds T.
HOLD=$NODE_DIR/up.hold
touch "$HOLD"
apply_jobs "apply" <<YAML || { finish; exit 1; }
jobs:
  - {id: pp.up, partitions: 2, schedule: {cron: "*/30 * * * * ?"}, target: $(url "log/up?delay_ms=3000&hold=$HOLD&hold_part=1")}
  - {id: pp.down, partitions: 2, after: [{job: pp.up, within: 1h}], target: $(url log/down)}
YAML
lead_shards 20 b1 || { finish; exit 1; }
wait_until "pp.down has T/p0 while pp.up's p1 is not done" 60 \
	has "select count(*) from triggers d join triggers u on u.job_id = 'pp.up' and u.request_id is null and u.scheduled_at = d.scheduled_at and u.partition = 1 and u.state <> 'succeeded' where d.job_id = 'pp.down' and d.partition = 0 and d.request_id is null" || { finish; exit 1; }
T=$(sql "select to_char(d.scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from triggers d where d.job_id = 'pp.down' and d.partition = 0 and d.request_id is null order by 1 desc limit 1")
echo "  T=$T; pp.up rows: $(sql "select string_agg(partition || ':' || state, ' ') from triggers where job_id = 'pp.up' and scheduled_at = '$T'"); pp.down rows: $(sql "select string_agg(partition || ':' || state, ' ') from triggers where job_id = 'pp.down' and scheduled_at = '$T'"); watermark $(sql "select watermark from after_watermarks where job_id = 'pp.down'")"
NOW=$(date -u -d "@$(( $(date -u +%s) - 1 ))" +%FT%TZ)
"$PAL" backfill --job pp.down --from "$T" --to "$NOW" --request-id bf1 --reason "re-run" >"$NODE_DIR/bf.out" 2>&1
rc=$?
sed 's/^/    backfill: /' "$NODE_DIR/bf.out"
expect_eq "backfill of pp.down over $T (p1 undecided) is refused (exit 4)" 4 "$rc"
"$PAL" trigger --job pp.down --at "$T" --reason x --request-id m1 >"$NODE_DIR/tr.out" 2>&1
rc=$?
sed 's/^/    trigger: /' "$NODE_DIR/tr.out"
expect_eq "trigger pp.down --at $T (p1 undecided) is refused (exit 4)" 4 "$rc"
expect_eq "neither wrote a row" 0 "$(sql "select count(*) from triggers where job_id = 'pp.down' and request_id is not null")"
rm -f "$HOLD"
wait_until "pp.up at $T p1 ended" 30 has "select count(*) from triggers where job_id = 'pp.up' and scheduled_at = '$T' and request_id is null and partition = 1 and state = 'succeeded'"
wait_until "pp.down has its own T/p1" 20 has "select count(*) from triggers where job_id = 'pp.down' and scheduled_at = '$T' and request_id is null and partition = 1"
sleep 3
echo "  pp.down rows at $T: $(sql "select string_agg(partition || ':' || source || ':' || coalesce(request_id,'-') || ':' || state, ' ' order by partition, id) from triggers where job_id = 'pp.down' and scheduled_at = '$T'")"
expect_eq "pp.down T/p1 has one effect (not the operator's and the planner's)" 1 \
	"$(sql "select count(*) from triggers where job_id = 'pp.down' and scheduled_at = '$T' and partition = 1 and state in ('pending', 'running', 'succeeded')")"
stop_all_nodes
finish
