#!/usr/bin/env bash
# A paused job with a deep backlog at the head of its tenant's queue must not
# hold back the tenant's other jobs: the claim's per-tenant window (32
# batches) skips gated jobs while it reads, not after.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 + fairness - a paused job's backlog (deeper than the claim window) does not starve the other jobs of its tenant; nothing of the paused job runs"

it_db pause_backlog
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s, batch: 1}"
apply_jobs apply <<YAML
jobs:
  - {id: q.paused, tenant: tq, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/paused"}}
  - {id: q.other, tenant: tq, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/other"}}
YAML
expect_exit "pause q.paused" 0 "$PAL" pause --job q.paused --reason "deep backlog test"
# 200 instants of the paused job, all due before the other job's run: with
# executor.batch 1 the claim window is 32 rows, so they fill it many times over.
cat >"$NODE_DIR/busy.yaml" <<YAML
jobs:
  - {id: q.paused, tenant: tq, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/paused"}}
  - {id: q.other, tenant: tq, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/other"}}
YAML
expect_exit "apply a per-second schedule to the paused job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/busy.yaml"
from=$(rfc3339_ago 400); to=$(rfc3339_ago 200)
expect_exit "backfill 200 instants of the paused job" 0 "$PAL" backfill --job q.paused --from "$from" --to "$to" --reason "backlog"
lead_shards 20 w1
backlog=$(sql "select count(*) from trigger_jobs where job_id = 'q.paused' and state = 'pending'")
echo "    figure: paused backlog $backlog pending triggers (claim window 32)"
check "the paused backlog is deeper than the claim window" [ "$backlog" -gt 32 ]
"$PAL" trigger --job q.other --reason "must not wait for the paused job" >/dev/null
done_other() { [ "$(sql "select state from trigger_jobs where job_id = 'q.other'")" = succeeded ]; }
wait_until "the tenant's other job runs while the paused backlog waits" 15 done_other
expect_eq "nothing of the paused job was claimed" 0 "$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'q.paused'")"
expect_exit "resume q.paused" 0 "$PAL" resume --job q.paused --reason "drain the backlog"
drained() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'q.paused' and state = 'succeeded'")" -ge "$backlog" ]; }
wait_until "after resume the backlog drains" 60 drained
finish
