#!/usr/bin/env bash
# Notify: a receiver removed while the job is failing and added back in a
# later apply, the failure unchanged, is not told that failure again (the
# outbox holds its `failed` of that trigger); C, kept throughout, gets
# nothing new either, and D, a new url of the same apply, is told
# (docs/protocol.md, "A receiver added while the job is failing").
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a receiver re-added while the job fails is not told the same failure twice"
source tests/integration/notify_lib.sh
hooks A C D
FR=$FAILED_RECOVERED
{ echo "notify_rules:"; tenant_rule "$A" "$FR"; tenant_rule "$C" "$FR"; echo "jobs:"; notify_job j billing; } >"$NODE_DIR/v1.yaml"
expect_exit "apply rules A and C" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
receiver A "$A_PORT"
receiver C "$C_PORT"
receiver D "$D_PORT"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
receiver T "$T_PORT" 600
expect_exit "trigger j" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r1
wait_until "run 1 failed" 15 eval '[ "$(states j)" = failed ]'
wait_until "A and C got failed" 10 eval '[ "$(got A)" = failed ] && [ "$(got C)" = failed ]'
{ echo "notify_rules:"; tenant_rule "$A" 'remove: true'; } >"$NODE_DIR/rm.yaml"
expect_exit "remove rule A while j is failing" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rm.yaml"
{ echo "notify_rules:"; tenant_rule "$A" "$FR"; tenant_rule "$D" "$FR"; } >"$NODE_DIR/back.yaml"
expect_exit "add rule A back and a new rule D, j still failing (same failure)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/back.yaml"
sleep 3
sql "select webhook_id, url, event, coalesce(delivered_at::text, 'pending') from notifications order by id" | sed 's/^/      /'
expect_eq "A was told this failure once" 1 "$(sql "select count(*) from notifications where url = '$A' and event = 'failed'")"
expect_eq "A's stream: failed once" "failed" "$(got A)"
expect_eq "C (kept) got nothing new" "failed" "$(got C)"
wait_until "D (new) is told the failure" 10 eval '[ "$(got D)" = failed ]'
finish
