#!/usr/bin/env bash
# A trigger paused at its safe point under `pause --tenant tc`, then the job
# is moved to tenant tx/gx by apply: a trigger a gate holds keeps the scope
# of that gate (docs/jobs.md), so `resume --tenant tc`, the gate the operator
# set, finds it and the instant runs on from its checkpoint, each chunk once.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - an instant paused by a gate runs on when that gate is lifted, even if the job moved tenant in between"
it_db
sink_up --log-level debug
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
mk() { cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: p.chunky, tenant: $1, group: $2, schedule: {cron: "0 0 0 1 1 ? 2099"},
     target: {url: "http://$SINK_ADDR/effects/chunky?chunks=6", status_url: "http://$SINK_ADDR/effects/{idempotency_key}"}}
YAML
}
mk tc gc
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
lead_shards 60 x1
state_of() { sql "select state from triggers where id = $1"; }
sink_faults '{"paused": true}'
"$PAL" trigger --job p.chunky --reason "go" >/dev/null 2>&1
tid=$(sql "select id from trigger_jobs where job_id = 'p.chunky' order by id desc limit 1")
wait_until "claimed, call held at the sink" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = running ]"
expect_exit "pause --tenant tc" 0 "$PAL" pause --tenant tc --reason "hold"
sink_faults '{"paused": false}'
wait_until "paused at its safe point" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = paused ]"
mk tx gx
expect_exit "apply: the job moves to tx/gx" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
echo "    trigger now: $(sql "select state || ' ' || tenant || ' ' || resource_group from triggers where id = $tid")"
expect_exit "resume --tenant tc (the gate that paused it)" 0 "$PAL" resume --tenant tc --reason "go on" --config "$CLUSTER_CONF"
done_() { [ "$(state_of $tid)" = succeeded ]; }
wait_until "the paused trigger completes after the resume" 20 done_
key=$(sql "select idempotency_key from attempt_ledger where trigger_id = $tid and idempotency_key is not null limit 1")
expect_eq "... each of its 6 chunks applied once" "6|6" "$(sql "select count(*), count(distinct chunk) from sink_ledger where idempotency_key = '$key'")"
finish
