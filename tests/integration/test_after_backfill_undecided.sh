#!/usr/bin/env bash
# A backfill of a dependent job over a past instant its upstream is still
# running (not decided by the dependency planner yet) is refused, as
# `trigger --at` of that instant is (scheduled-instant): the dependency
# planner runs it under its own key once the upstream ends, so a backfill
# there would be a second effect at the service.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "backfill of a dependent job never doubles an instant the dependency planner still runs"
badserver_cluster it_after_backfill_undecided 2
apply_jobs "apply" <<YAML || { finish; exit 1; }
jobs:
  - {id: bt.up, schedule: {cron: "*/10 * * * * ?"}, target: $(url "log/up?delay_ms=8000")}
  - {id: bt.down, after: [{job: bt.up, within: 1h}], target: $(url log/down)}
YAML
lead_shards 20 b1 || { finish; exit 1; }
wait_until "bt.up has an instant running" 30 \
	has "select count(*) from triggers where job_id = 'bt.up' and state = 'running'" || { finish; exit 1; }
T=$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from triggers where job_id = 'bt.up' and state = 'running' order by scheduled_at limit 1")
sleep 2
NOW=$(date -u -d "@$(( $(date -u +%s) - 1 ))" +%FT%TZ)
echo "  bt.up running at $T; bt.down's dependency watermark: $(sql "select watermark from after_watermarks where job_id = 'bt.down'")"
expect_exit "trigger bt.down --at $T (undecided past instant) is refused" 4 "$PAL" trigger --job bt.down --at "$T" --reason x
"$PAL" backfill --job bt.down --from "$T" --to "$NOW" --request-id bf1 --reason "re-run" >"$NODE_DIR/bf.out" 2>&1
expect_eq "backfill of bt.down over $T (undecided) is refused (exit 4)" 4 "$?"
check "the refusal names the undecided instant" grep -q "$T" "$NODE_DIR/bf.out"
expect_eq "the refused backfill wrote nothing" 0 \
	"$(sql "select count(*) from triggers where job_id = 'bt.down' and request_id = 'bf1'")"
wait_until "bt.up at $T ended" 20 has "select count(*) from triggers where job_id = 'bt.up' and scheduled_at = '$T' and request_id is null and state = 'succeeded'"
wait_until "bt.down's watermark past $T" 20 has "select count(*) from after_watermarks where job_id = 'bt.down' and watermark >= '$T'"
sleep 3
echo "  bt.down rows at $T: $(sql "select string_agg(source || ':' || state, ' ') from triggers where job_id = 'bt.down' and scheduled_at = '$T'")"
expect_eq "bt.down has one trigger (one effect) at $T, not a backfill's and the planner's" 1 \
	"$(sql "select count(*) from triggers where job_id = 'bt.down' and scheduled_at = '$T' and state in ('pending', 'running', 'succeeded')")"
stop_all_nodes
finish
