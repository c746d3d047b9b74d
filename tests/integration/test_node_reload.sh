#!/usr/bin/env bash
# SIGHUP: reloadable keys take effect, restart-only keys are reported, a
# broken file is refused and the old configuration stays.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "configuration reload: a valid SIGHUP applies the reloadable keys, names restart-only changes, keeps the command-line overrides, and a broken file keeps the running configuration"

it_db reload
SHARDS=2
write_conf "$CLUSTER_CONF"
start_node h1
wait_until "node up" 20 all_shards_led
sed -i 's/scan_interval: 1s/scan_interval: 2s/' "$CLUSTER_CONF"
echo "log: {level: debug}" >>"$CLUSTER_CONF"
sed -i 's/shards: 2}/shards: 4}/' "$CLUSTER_CONF"
kill -HUP "${NODE_PID[h1]}"
wait_until "the reload is logged" 5 grep -q '"event":"node.config_reloaded"' "$NODE_DIR/h1.log"
wait_until "the new scan interval reached the controller" 5 grep -q '"event":"controller.timing_reloaded".*"scan_interval_ms":2000' "$NODE_DIR/h1.log"
expect_match "the restart-only shard count change is named" 'node.reload_needs_restart.*shards' "$(cat "$NODE_DIR/h1.log")"
# start_node passes --node-id and --admin: a reload keeps them
check "the command-line node id is kept (not named as a change)" \
	bash -c "! grep -q 'node.reload_needs_restart.*node.id' '$NODE_DIR/h1.log'"
check "the command-line admin address is kept (not named as a change)" \
	bash -c "! grep -q 'node.reload_needs_restart.*admin.listen' '$NODE_DIR/h1.log'"
expect_match "the reload result is logged" '"event":"node.reload_done".*"result":"reloaded"' "$(cat "$NODE_DIR/h1.log")"
expect_eq "the admin endpoint still answers at the flag's address" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[h1]}/healthz")"
echo "controller: {scan_interval: 0s" >>"$CLUSTER_CONF"
kill -HUP "${NODE_PID[h1]}"
wait_until "a broken file is refused with file:line:col" 5 grep -q '"event":"node.reload_rejected"' "$NODE_DIR/h1.log"
check "the node keeps running" node_alive h1
wait_until "the rejected reload is reported" 5 grep -q '"event":"node.reload_done".*"result":"rejected"' "$NODE_DIR/h1.log"
stop_node h1
expect_eq "and still drains cleanly (exit 0)" 0 "${NODE_EXIT[h1]}"
finish
