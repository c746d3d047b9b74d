#!/usr/bin/env bash
# A draining controller resigns its shards as soon as it has stopped
# planning and written its handoff rows, not after it has freed its
# planners: with 200,000 jobs that freeing took the draining node 60-600 ms
# a shard, and the survivor could not win a shard until the node resigned
# (graceful handoff 1.0-1.6 s in the bench).  The drill switch
# PALISADE_FAULT_SLOW_STOP_MS makes freeing each led shard 3 s slower, so
# the order shows in the draining node's log: node.handoff_done comes
# before its first shard is freed, and the survivor leads every shard while
# the draining node is still freeing.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - a drain resigns before the planners are freed: the survivor takes the shards while the draining node still frees them; one leader per shard throughout, every instant planned once"

it_db drain_resign
SHARDS=4
gen_jobs "$NODE_DIR/jobs.yaml" 40 "* * * * * ?" fire_all
SHARDS=4 write_conf "$CLUSTER_CONF"
expect_exit "apply 40 every-second jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
PALISADE_FAULT_SLOW_STOP_MS=3000 start_node n1
led_by() { [ "$(sql "select count(*) from shards where leader = '$1' and watermark > clock_timestamp()")" -ge "$2" ]; }
wait_until "n1 leads all 4 shards" 30 led_by n1 4
start_node n2
balanced() { led_by n1 1 && led_by n2 1 && all_shards_led; }
wait_until "n2 joins and the shards are balanced" 60 balanced
kill -TERM "${NODE_PID[n1]}"
wait_until "n2 leads all 4 shards after n1's drain" 20 led_by n2 4
check "... while n1 is still freeing its shards (3 s each)" node_alive n1
# (a second SIGTERM would end the drain at once: wait for the first)
gone() { ! node_alive n1; }
wait_until "n1 finishes its drain" 30 gone
wait "${NODE_PID[n1]}"
expect_eq "n1 drained cleanly" 0 "$?"
unset "NODE_PID[n1]"
hd=$(grep -n '"event":"node.handoff_done"' "$NODE_DIR/n1.log" | head -1 | cut -d: -f1)
fd=$(grep -n '"event":"controller.shard_dropped".*controller stopping' "$NODE_DIR/n1.log" | head -1 | cut -d: -f1)
resigned_first() { [ -n "$hd" ] && [ -n "$fd" ] && [ "$hd" -lt "$fd" ]; }
check "n1 resigned (node.handoff_done, log line $hd) before it freed its first shard (line $fd)" resigned_first
sleep 2
stop_node n2
expect_eq "every instant planned once" 0 \
	"$(sql "select count(*) from (select job_id, scheduled_at, partition from trigger_jobs group by 1, 2, 3 having count(*) > 1) d")"
finish
