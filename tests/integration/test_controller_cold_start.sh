#!/usr/bin/env bash
# A first start after an apply: the controller wins every shard at once,
# loads them in one statement, then gives each its first tick.  Brand-new
# jobs with no instant by the horizon are activated a bounded number per
# tick (max_activations_per_tick).  The first ticks of shards claimed
# together activate none of them, so that every shard plans before any
# spends its tick writing activations: with 1,000,000 jobs those writes
# took about 120 ms a shard, 1.9 s before the 16th shard planned.  The
# deferred jobs are activated by the following ticks, each as of the tick
# that first saw it, so what is planned does not change.
#
# Without the hold, every shard_planned line below reports the idle jobs
# of its shard as activations.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - shards claimed together all plan before deferred activations are written; every job is still activated, as of its shard's first tick, and the due job is planned from then on"

it_db cold_start
write_conf "$CLUSTER_CONF"
IDLE=160
gen_jobs "$NODE_DIR/jobs.yaml" $IDLE "0 0 0 1 1 ? 2099" skip cs.idle
echo "  - {id: cs.due, schedule: {cron: \"* * * * * ?\"}, target: {url: \"http://127.0.0.1:9/x\"}}" >>"$NODE_DIR/jobs.yaml"
expect_exit "apply 1 due job and $IDLE idle ones" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node cs1
planned() { [ "$(grep -c '"controller.shard_planned"' "$NODE_DIR/cs1.log")" = 16 ]; }
wait_until "the 16 shards planned" 30 planned
# The shards claimed together (controller.shard_acquired loaded_with > 1:
# one node starting usually claims all 16 in one pass) and the activations
# of their first ticks.
due_shard=$(sql "select shard from jobs where job_id = 'cs.due'")
read -r together acts due_in <<<"$(python3 - "$NODE_DIR/cs1.log" "$due_shard" <<'PY'
import json, sys
together, acts = set(), 0
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for e in lines:
    if e.get("event") == "controller.shard_acquired" and e.get("loaded_with", 1) > 1:
        together.add(e["shard"])
for e in lines:
    if e.get("event") == "controller.shard_planned" and e["shard"] in together:
        acts += e["activations"]
print(len(together), acts, 1 if int(sys.argv[2]) in together else 0)
PY
)"
check "several shards were claimed in one pass ($together)" [ "$together" -ge 2 ]
expect_eq "their first ticks activated only the due job (not their share of the $IDLE idle ones)" "$due_in" "$acts"
all_active() { [ "$(sql "select count(*) from job_versions where effective_from is null")" = 0 ]; }
wait_until "the next ticks activate every idle job" 30 all_active
# Each deferred job is activated as of its shard's first tick, as the due
# job of the same tick was: one effective_from per shard.
expect_eq "every job of a shard has its first tick's effective_from" 0 \
	"$(sql "select count(*) from (select j.shard from jobs j join job_versions v using (job_id)
	        group by j.shard having count(distinct v.effective_from) > 1) x")"
fires() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'cs.due'")" -ge 3 ]; }
wait_until "the due job is planned" 20 fires
stop_all_nodes
finish
