#!/usr/bin/env bash
# Notify: a success of a trigger of a version without `notify:` clears
# the mark a failure of that version set.  A job without notify; two
# manual runs (v1, instants t1 < t2, same partition) retry; a tenant rule
# B (failed, recovered) is applied between; t1 ends failed (B is told
# failed and the job is marked: the result commit asks the latest
# version), then t2 ends succeeded: the result commit asks for that
# success too, because the job is marked, so the mark is cleared and B
# gets `recovered` (docs/protocol.md, "Which receivers").
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a later success of a version without notify clears the mark a failure of that version set, and the receiver gets recovered"
source tests/integration/notify_lib.sh
hooks B
RETRY='{max_attempts: 2, backoff: {initial: 8s, max: 8s, multiplier: 1, jitter: none}}'
{ echo "jobs:"; notify_job j billing "$RETRY"; } >"$NODE_DIR/v1.yaml"
expect_exit "apply j (no notify)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
receiver B "$B_PORT"
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
# 500 for the first 3 calls (r1, r2, r1's retry), then 200 (r2's retry):
# by count, since a loaded box may start the receiver seconds late
receiver T "$T_PORT" 0 3
expect_exit "trigger j (r1)" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r1
wait_until "r1 waits to retry" 10 eval '[ "$(states j)" = retry_wait ]'
until_t0 4
expect_exit "trigger j (r2)" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job j --reason r2
wait_until "r2 waits to retry too" 10 eval '[ "$(states j)" = retry_wait,retry_wait ]'
{ echo "notify_rules:"; tenant_rule "$B" "$FAILED_RECOVERED"; } >"$NODE_DIR/b.yaml"
expect_exit "add rule B while both v1 triggers retry" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml"
wait_until "r1 failed, r2 succeeded" 30 eval '[ "$(states j)" = failed,succeeded ]'
sleep 3
sql "select id, version, state, scheduled_at, partition from triggers where job_id = 'j' order by scheduled_at" | sed 's/^/      /'
sql "select webhook_id, url, event from notifications order by id" | sed 's/^/      /'
expect_eq "B's stream: failed, then recovered" "failed recovered" "$(got B)"
expect_eq "the job is no longer marked failing" 0 "$(sql "select count(*) from notify_state where job_id = 'j' and failed_since is not null")"
finish
