#!/usr/bin/env bash
# An upstream trigger cancelled before its instant (`palisade cancel` of a
# planned row; a retirement's sweep and a re-apply's cancel write the same
# state) decides its dependent jobs' instant only once that instant came:
# with `on: finished` (any end, `cancelled` included, docs/jobs.md) the
# dependent job gets its trigger for t after t, never planned before t for
# a run that has not happened; with `on: succeeded` it gets an
# upstream_failed row naming the cancelled trigger, also after t.  verify
# holds every upstream instant that ended, however it ended, to one
# dependent trigger or one recorded reason.
#
# fc.a fires every 5 s and its controller plans 30 s ahead (lookahead), so
# its trigger for an instant ~15 s away is pending when it is cancelled,
# and the dependent jobs' controller sees it (the shard's watermark is past
# it) on every tick until t: it decides the instants before t meanwhile.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G7 - an upstream instant cancelled before it came decides its dependent jobs' instant at t, not before: on: finished runs once after t, on: succeeded records upstream_failed naming the cancelled trigger; verify holds every ended upstream instant to a trigger or a reason"

fresh_db it_after_finished_cancel
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=2 LOOKAHEAD=30s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: fc.a, schedule: {cron: "*/5 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/a"}}
  - {id: fc.f, after: [{job: fc.a, on: finished, within: 1h}], target: {url: "http://$SINK_ADDR/effects/f"}}
  - {id: fc.s, after: [{job: fc.a, on: succeeded, within: 1h}], target: {url: "http://$SINK_ADDR/effects/s"}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" || { finish; exit 1; }
from=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_node h1
wait_until "shards led" 20 all_shards_led &&
	wait_until "fc.f runs after fc.a" 20 \
		has "select count(*) from trigger_jobs where job_id = 'fc.f' and state = 'succeeded'" &&
	wait_until "fc.a has a pending trigger 14 s or more ahead" 20 \
		has "select count(*) from trigger_jobs where job_id = 'fc.a' and state = 'pending' and scheduled_at >= now() + interval '14 seconds'" ||
	{ finish; exit 1; }
read -r ID T < <(sql "select id, extract(epoch from scheduled_at)::bigint from trigger_jobs
                      where job_id = 'fc.a' and state = 'pending' and scheduled_at >= now() + interval '14 seconds'
                      order by scheduled_at limit 1" | tr '|' ' ')
expect_exit "cancel fc.a's planned trigger $ID (its instant $(( T - $(date +%s) )) s ahead)" 0 \
	"$PAL" cancel --config "$CLUSTER_CONF" --trigger "$ID" --reason "cancelled ahead of its instant"
expect_eq "fc.a's trigger for t is cancelled" cancelled "$(sql "select state from trigger_jobs where id = $ID")"
at="to_timestamp($T)"
# the dependent jobs' controller decides the instant before t (planned at
# once, run at t - 5 s) while t is still ahead
wait_until "fc.f ran fc.a's instant before t" 20 \
	has "select count(*) from trigger_jobs where job_id = 'fc.f' and scheduled_at = $at - interval '5 seconds' and state = 'succeeded'"
left=$(( T - $(date +%s) ))
check "t is still ahead ($left s)" [ "$left" -ge 1 ]
expect_eq "before t: fc.f (on: finished) has no trigger for t" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'fc.f' and scheduled_at = $at")"
expect_eq "before t: fc.s (on: succeeded) has no misfire row for t" 0 \
	"$(sql "select count(*) from misfires where job_id = 'fc.s' and range_from <= $at and range_to >= $at")"

wait_until "t came and fc.f ran its trigger for t" $(( left + 15 )) \
	has "select count(*) from trigger_jobs where job_id = 'fc.f' and scheduled_at = $at and state = 'succeeded'"
expect_eq "fc.f: one trigger for t, due at t (the upstream's instant)" "1 true" \
	"$(sql "select count(*) || ' ' || bool_and(due_at = $at) from trigger_jobs where job_id = 'fc.f' and scheduled_at = $at")"
expect_eq "fc.f: its run ended after t" 1 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'fc.f' and scheduled_at = $at and finished_at >= $at")"
wait_until "fc.s decided t" 10 \
	has "select count(*) from misfires where job_id = 'fc.s' and range_from <= $at and range_to >= $at"
expect_eq "fc.s: no trigger for t, one upstream_failed row naming fc.a's cancelled trigger" \
	"0 1 upstream_failed fc.a $ID" \
	"$(sql "select (select count(*) from trigger_jobs where job_id = 'fc.s' and scheduled_at = $at) || ' ' ||
	               count(*) || ' ' || max(reason) || ' ' || max(upstream_job) || ' ' || max(upstream_trigger)
	          from misfires where job_id = 'fc.s' and range_from <= $at and range_to >= $at")"
# the instants around t ran as usual: both dependent jobs after every other one
wait_until "fc.a's next instant ran and both dependent jobs followed" 15 \
	has "select count(*) - 1 from trigger_jobs where job_id in ('fc.f', 'fc.s') and scheduled_at = $at + interval '5 seconds' and state = 'succeeded'"
to=$(date -u -d "@$(( T + 5 ))" +%Y-%m-%dT%H:%M:%SZ)
expect_exit "verify: every instant planned or recorded, the cancelled upstream instant included" 0 \
	"$PAL" verify --config "$CLUSTER_CONF" --from "$from" --to "$to"
# verify holds the instants of an upstream trigger that ended other than
# succeeded as well: fc.f's trigger for t, and fc.s's row for t, deleted
sql "delete from triggers where job_id = 'fc.f' and scheduled_at = $at" >/dev/null
out=$("$PAL" verify --config "$CLUSTER_CONF" --from "$from" --to "$to" 2>&1); rc=$?
expect_eq "verify: fc.f's trigger for the cancelled upstream instant deleted is found missing (exit 2)" 2 "$rc"
expect_match "verify: ... one instant" "missing=1 " "$out"
sql "delete from misfires where job_id = 'fc.s' and range_from <= $at and range_to >= $at" >/dev/null
out=$("$PAL" verify --config "$CLUSTER_CONF" --from "$from" --to "$to" 2>&1); rc=$?
expect_eq "verify: fc.s's upstream_failed row deleted too: two missing (exit 2)" 2 "$rc"
expect_match "verify: ... two instants" "missing=2 " "$out"
echo "    figure: test took $SECONDS s"
finish
