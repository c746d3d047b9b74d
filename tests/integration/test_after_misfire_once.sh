#!/usr/bin/env bash
# A dependent job's misfires are recorded once: an upstream instant that
# did not run becomes one upstream_* row of the dependent job (one
# `misfire` notification), whatever wrote the upstream's own record of it
# and however many ticks look at it while an earlier instant is undecided.
#
# One controller and no executor: every upstream trigger stays pending, so
# each dependent job's watermark stays at its first instant (undecided for
# `within: 1h`) and every tick looks at every later instant again.  Three
# shapes, each one of the upstream's writers of misfire rows:
#   * mo.f (2 partitions, overlap: forbid) -> mo.fd (1 partition): an
#     instant of partition 1 skipped as the claim's forbid step does it
#     (the trigger skipped with class overlap, a misfire row of partition 1);
#   * mo.f's planner ranges (no trigger at those instants), one of them
#     written for each partition -> one row of mo.fd per range;
#   * mo.p paused and resumed with policy skip (the held triggers skipped,
#     one range row, reason paused) -> mo.pd, one row per instant.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G5 - each upstream instant that did not run is one misfire row (and one notification) of the dependent job, whether the upstream's record is its planner's range, a forbid skip of one partition or a resume's range, and however many ticks see it"

fresh_db it_after_misfire_once
"$PAL" migrate >/dev/null
trap 'stop_all_nodes' EXIT
SHARDS=2 MISFIRE=3s LOOKAHEAD=1s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=2
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: mo.f, partitions: 2, overlap: forbid, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://127.0.0.1:9/f"}}
  - id: mo.fd
    after: [{job: mo.f, within: 1h}]
    target: {url: "http://127.0.0.1:9/fd"}
    notify: [{on: [misfire], url: "http://127.0.0.1:9/hook", secret: "\${HOOK_SECRET}"}]
  - {id: mo.p, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://127.0.0.1:9/p"}}
  - id: mo.pd
    after: [{job: mo.p, within: 1h}]
    target: {url: "http://127.0.0.1:9/pd"}
    notify: [{on: [misfire], url: "http://127.0.0.1:9/hook", secret: "\${HOOK_SECRET}"}]
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" || { finish; exit 1; }
start_node c1 --roles controller
wait_until "shards led" 20 all_shards_led &&
	wait_until "both dependent jobs have a watermark" 20 \
		has "select count(*) - 1 from after_watermarks where job_id in ('mo.fd', 'mo.pd')" ||
	{ finish; exit 1; }
expect_exit "pause mo.p" 0 "$PAL" pause --job mo.p --reason "misfire once test"
from=$(date -u +%Y-%m-%dT%H:%M:%SZ)
wait_until "mo.f has two past instants of partition 1" 10 \
	has "select count(*) - 1 from trigger_jobs where job_id = 'mo.f' and partition = 1 and scheduled_at <= now() - interval '1 second'"

# The forbid step's writes for mo.f's latest past instant of partition 1
# (palisade_claim_forbid_skips: through the door, then the row).
sql "with v as (select id, scheduled_at from trigger_jobs where job_id = 'mo.f' and partition = 1
                  and request_id is null and state = 'pending' and scheduled_at <= now()
                order by scheduled_at desc limit 1),
      sk as (select m.* from v, palisade_trigger_move(array[v.id], array[v.scheduled_at],
                  array['pending'], 'skipped', 'overlap') m)
 insert into misfires (job_id, version, partition, range_from, range_to, count, policy, reason, shard, epoch)
 select sk.job_id, sk.version, 1, sk.scheduled_at, sk.scheduled_at, 1, 'forbid', 'overlap', sk.shard, sk.epoch
   from sk" >/dev/null
SKIPPED=$(sql "select extract(epoch from max(range_from))::bigint from misfires where job_id = 'mo.f' and reason = 'overlap'")
check "a partition-1 instant of mo.f skipped for overlap" [ -n "$SKIPPED" ] || { finish; exit 1; }
# mo.f's planner ranges: an odd second between its instants (no trigger),
# written once per partition (the planner writes NULL; two rows of one
# range stand for any upstream writer with per-partition rows)
GAP=$((SKIPPED - 1))
sql "insert into misfires (job_id, version, partition, range_from, range_to, count, policy, reason, shard, epoch)
     select job_id, version, p, to_timestamp($GAP), to_timestamp($GAP), 1, 'skip', 'missed', shard, epoch
       from trigger_jobs, generate_series(0, 1) p
      where job_id = 'mo.f' and scheduled_at = to_timestamp($SKIPPED) and partition = 1" >/dev/null

sleep 3
expect_exit "resume mo.p (its held instants skipped, policy skip)" 0 \
	"$PAL" resume --job mo.p --reason "misfire once test" --config "$CLUSTER_CONF"
HELD=$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'mo.p' and reason = 'paused'")
check "the resume skipped at least 2 instants of mo.p in one range row ($HELD)" [ "$HELD" -ge 2 ] || { finish; exit 1; }
wait_until "mo.pd decided them" 10 \
	has "select count(*) - $HELD + 1 from misfires where job_id = 'mo.pd'"
# several ticks more: a row written per tick would show here
sleep 4

rows() { sql "select count(*) || ' ' || coalesce(sum(count), 0) from misfires where job_id = '$1'"; }
expect_eq "mo.fd: the forbid skip and the planner range, one row each (rows, instants)" "2 2" "$(rows mo.fd)"
expect_eq "mo.fd: the forbid skip is its upstream_failed row at that instant, naming the skipped trigger" \
	"0 upstream_failed true" \
	"$(sql "select m.partition || ' ' || m.reason || ' ' || (m.upstream_trigger = t.id)
	          from misfires m join trigger_jobs t on t.job_id = 'mo.f' and t.scheduled_at = m.range_from and t.partition = 1
	         where m.job_id = 'mo.fd' and m.range_from = to_timestamp($SKIPPED)")"
expect_eq "mo.fd: the planner range is one row of all partitions" "1 NULL upstream_failed mo.f" \
	"$(sql "select count(*) || ' ' || coalesce(max(partition)::text, 'NULL') || ' ' || max(reason) || ' ' || max(upstream_job) from misfires
	         where job_id = 'mo.fd' and range_from = to_timestamp($GAP)")"
expect_eq "mo.pd: one row per instant the resume skipped, no range row besides" "$HELD $HELD" "$(rows mo.pd)"
expect_eq "mo.pd: no instant covered by two rows" 0 \
	"$(sql "select count(*) from misfires a join misfires b on b.job_id = a.job_id and b.id > a.id
	         and b.range_from <= a.range_to and b.range_to >= a.range_from where a.job_id = 'mo.pd'")"
expect_eq "one misfire notification per row, each its own webhook-id" "$((HELD + 2)) $((HELD + 2))" \
	"$(sql "select count(*) || ' ' || count(distinct webhook_id) from notifications
	         where job_id in ('mo.fd', 'mo.pd') and event = 'misfire'")"
expect_exit "verify: every instant planned or recorded" 0 \
	"$PAL" verify --from "$from" --to "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "    figure: test took $SECONDS s"
finish
