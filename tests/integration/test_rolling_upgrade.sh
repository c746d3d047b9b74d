#!/usr/bin/env bash
# ops/rolling-upgrade.sh restarts every node of a loaded cluster one at a
# time (drain, wait for the handoff, restart, wait until ready and leading):
# no instant is lost or doubled, every trigger ends succeeded, one effect
# per key.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G3 - a rolling restart of every node under load (ops/rolling-upgrade.sh): no instant missing or doubled, every trigger succeeded, one effect per key"

it_db rolling
sink_up
SHARDS=8
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 60 "*/2 * * * * ?" t1 roll
expect_exit "apply 60 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
for n in r1 r2 r3; do start_node "$n"; done
wait_until "all shards led" 30 all_shards_led

# The restart command a supervisor would run: start the node again with the
# same admin address, remember its PID (the test stops it at the end).
cat >"$NODE_DIR/restart.sh" <<SH
#!/usr/bin/env bash
id=\$1
case \$id in
r1) admin=${NODE_ADMIN[r1]} ;; r2) admin=${NODE_ADMIN[r2]} ;; r3) admin=${NODE_ADMIN[r3]} ;;
*) exit 1 ;;
esac
setsid "$PAL" node --config "$CLUSTER_CONF" --node-id "\$id" --admin "\$admin" >>"$NODE_DIR/\$id.log" 2>&1 </dev/null &
echo \$! >"$NODE_DIR/\$id.pid"
SH
old_pids="${NODE_PID[r1]} ${NODE_PID[r2]} ${NODE_PID[r3]}"
T0=$(now_rfc3339)
sleep 6
OUT=$(bash ops/rolling-upgrade.sh --config "$CLUSTER_CONF" --palisade "$PAL" --timeout 60 \
	--restart "bash $NODE_DIR/restart.sh {node}" r1 r2 r3 2>&1)
rc=$?
echo "$OUT" | sed 's/^/    | /'
for n in r1 r2 r3; do
	[ -f "$NODE_DIR/$n.pid" ] && NODE_PID[$n]=$(cat "$NODE_DIR/$n.pid")
done
expect_eq "rolling upgrade of r1 r2 r3 (exit)" 0 "$rc"
check "each node was drained and restarted (three new PIDs)" \
	[ "$(for n in r1 r2 r3; do [ -f "$NODE_DIR/$n.pid" ] && echo x; done | wc -l)" = 3 ]
for p in $old_pids; do
	check "old process $p has exited" bash -c "! kill -0 $p 2>/dev/null"
done
expect_eq "each drained node exited 0 after its handoff" 3 \
	"$(cat "$NODE_DIR"/r?.log | grep -c '"event":"node.stopped"[^}]*"exit":0' || true)"
sleep 6
T1=$(rfc3339_ago 0)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger planned in the window ends succeeded" 60 settled
echo "    figure: $(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'") triggers in the window"
expect_exit "verify: no instant missing or doubled across the rolling restart" 0 "$PAL" verify --from "$T0" --to "$T1"
expect_eq "no idempotency key has more than one effect" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")"
check "the cluster is healthy afterwards (all shards led)" all_shards_led
expect_exit "usage: --restart is required" 64 bash ops/rolling-upgrade.sh --config "$CLUSTER_CONF"
expect_exit "an unknown node is refused before anything is drained" 69 bash ops/rolling-upgrade.sh \
	--config "$CLUSTER_CONF" --palisade "$PAL" --restart true nosuchnode
finish
