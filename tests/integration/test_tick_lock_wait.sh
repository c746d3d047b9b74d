#!/usr/bin/env bash
# A tick that activates a job version locks the shard row of each of the
# job's dependents (after:) on other shards, under the controller's 2 s
# lock timeout.  Held longer (here by a session of the test; in production
# a long dependency planning of that shard, or a paused process), the tick
# gives up: it is rolled back and tried again on the next pass.  It must
# not count as the database failing: that dropped every shard this node
# led and reconnected, each shard claimed and loaded again.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a tick that waits past the lock timeout for a dependent's shard row is tried again; the controller keeps its shards and connection"
it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF"
lead_shards 40 f1
U=lw.job-1
gen_sink_jobs "$NODE_DIR/u.yaml" 1 "*/5 * * * * ?" t1 lw
gen_sink_jobs "$NODE_DIR/u2.yaml" 1 "*/5 * * * * ?" t1 lw "priority: 2"
gen_sink_jobs "$NODE_DIR/d.yaml" 8 "*/5 * * * * ?" t1 lwd "after: [{job: $U, within: 1h}]"
jobs_with() { cat "$1"; tail -n +2 "$NODE_DIR/d.yaml" | grep -v 'schedule:'; }
jobs_with "$NODE_DIR/u.yaml" >"$NODE_DIR/v1.yaml"
jobs_with "$NODE_DIR/u2.yaml" >"$NODE_DIR/v2.yaml"
expect_exit "apply U and its 8 dependents" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
active() { [ "$(sql "select coalesce(active_version, 0) from jobs where job_id = '$U'")" -ge "$1" ]; }
wait_until "U v1 activated" 20 active 1
US=$(sql "select shard from jobs where job_id = '$U'")
B=$((1 - US))
expect_eq "a dependent of U on the other shard ($B)" 1 \
	"$(sql "select (count(*) > 0)::int from jobs where job_id like 'lwd.%' and shard = $B")"
# Shard B's row held until the tick activating v2 has given up on it
# (the controller's lock timeout is 2 s); then the holder is cut off.
"$PSQL" "$PALISADE_PG" -XAtq -c "begin; select 1 from shards where shard_id = $B for update; select pg_sleep(120); commit;" \
	>/dev/null 2>&1 &
HOLD=$!
HOLDER="datname = current_database() and wait_event = 'PgSleep' and query like '%for update; select pg_sleep(120)%'"
holding() { [ "$(sql "select count(*) from pg_stat_activity where $HOLDER")" -ge 1 ]; }
wait_until "shard $B's row held" 10 holding
expect_exit "apply U v2" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v2.yaml"
waiting() { grep '"event":"controller.tick_waiting"' "$NODE_DIR/f1.log" | grep -q '"during":"commit"'; }
wait_until "the tick activating v2 gives up on shard $B's row" 60 waiting
expect_eq "U v2 not activated while the row is held" 0 "$(active 2 && echo 1 || echo 0)"
lagging() { curl -s "http://${NODE_ADMIN[f1]}/metrics" |
	grep -Eq "^palisade_controller_watermark_lag_seconds\{shard=\"$US\"\} [1-9]"; }
wait_until "shard $US's watermark lag grows while its ticks wait (past the 5 s lookahead)" 30 lagging
sql "select pg_terminate_backend(pid) from pg_stat_activity where $HOLDER" >/dev/null
wait $HOLD
wait_until "U v2 activated once the row is free" 20 active 2
expect_eq "the controller dropped no shard for the database" 0 \
	"$(grep '"event":"controller.shard_dropped"' "$NODE_DIR/f1.log" | grep -c 'database unavailable')"
expect_eq "no controller.db_error" 0 "$(grep -c '"event":"controller.db_error"' "$NODE_DIR/f1.log")"
expect_eq "each shard claimed once" 2 "$(grep -c '"event":"controller.shard_planned"' "$NODE_DIR/f1.log")"
has_wait() { curl -s "http://${NODE_ADMIN[f1]}/metrics" | grep -Eq '^palisade_controller_tick_lock_waits_total [1-9]'; }
check "palisade_controller_tick_lock_waits_total counts the wait" has_wait
grep -E '"event":"controller\.(db_error|shard_dropped|tick_waiting)' "$NODE_DIR/f1.log" | cut -c1-300 | head -4 | sed 's/^/    f1: /'
stop_node f1
finish
