#!/usr/bin/env bash
# Settings every executor node must share (executor.target_hosts, .secrets,
# .tenants) are published by each node in its ZooKeeper registration as a
# digest, and `palisade status` (the CLI and GET /api/v1/status) names the
# nodes that differ: during a roll a node without executor.target_hosts
# calls any host, and nothing else would show it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an executor node whose target_hosts, secrets or tenants differ from its peers' is named by palisade status, with each value's nodes"

fresh_db it_config_drift
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
A_CONF=$PALISADE_TEST_TMP/a.yaml B_CONF=$PALISADE_TEST_TMP/b.yaml
SHARDS=2 write_conf "$A_CONF" \
	"executor: {target_hosts: {red: [\"127.0.0.1:9\", \"*.red.example\"]}, tenants: {red: {cap: 4}}}"
SHARDS=2 write_conf "$B_CONF" "executor: {tenants: {red: {cap: 4}}}"
CLUSTER_CONF=$A_CONF start_node x1 --roles controller,executor
CLUSTER_CONF=$B_CONF start_node x2 --roles executor
CLUSTER_CONF=$A_CONF
wait_until "x1 and x2 ready" 30 sh -c "curl -sf http://${NODE_ADMIN[x1]}/readyz >/dev/null && curl -sf http://${NODE_ADMIN[x2]}/readyz >/dev/null"
status_json() { "$PAL" status --config "$A_CONF" --output json; }
wait_until "both registered" 10 sh -c "[ \"\$('$PAL' status --config '$A_CONF' --output json | jq '.nodes | length')\" = 2 ]"
S=$(status_json)
expect_eq "one warning: target_hosts differs" 1 "$(jq '.warnings | length' <<<"$S")"
W=$(jq -r '.warnings[0]' <<<"$S")
expect_match "... it names the setting, each value and its node" \
	'^executor\.target_hosts differs between executor nodes: [0-9a-f]{12}: x1; default: x2 \(a node where it is default or unpublished calls any host\)$' "$W"
expect_eq "... tenants agree: not named" 0 "$(jq '[.warnings[] | select(test("tenants"))] | length' <<<"$S")"
expect_eq "... each node's digests in its info" "default default" \
	"$(jq -r '[.nodes[] | select(.id == "x2") | .info.config["executor.target_hosts"], .info.config["executor.secrets"]] | join(" ")' <<<"$S")"
expect_exit "palisade status (table)" 0 "$PAL" status --config "$A_CONF"
expect_match "... prints the warning" "^warning: executor\.target_hosts differs" "$OUT"
API=$(curl -s -H "Authorization: Bearer $PALISADE_ADMIN_TOKEN" "http://${NODE_ADMIN[x1]}/api/v1/status")
expect_eq "GET /api/v1/status: the same warning" "$W" "$(jq -r '.warnings[0]' <<<"$API")"

# a reloadable setting changed by a reload is published again
sed -i 's/tenants: {red: {cap: 4}}}/tenants: {red: {cap: 8}}}/' "$B_CONF"
kill -HUP "${NODE_PID[x2]}"
wait_until "x2's reloaded tenants published: named as differing" 10 sh -c \
	"'$PAL' status --config '$A_CONF' --output json | jq -e '[.warnings[] | select(startswith(\"executor.tenants differs\"))] | length == 1' >/dev/null"
# a restart-only one is not, until the restart
sed -i 's|executor: {tenants: {red: {cap: 8}}}|executor: {target_hosts: {red: ["*.red.example", "127.0.0.1:9", "127.0.0.1:9"]}, tenants: {red: {cap: 4}}}|' "$B_CONF"
kill -HUP "${NODE_PID[x2]}"
sleep 1
expect_eq "after a reload that sets target_hosts (restart only): still named, tenants no longer" \
	"1 executor.target_hosts" "$(status_json | jq -r '[(.warnings | length), (.warnings[0] | split(" ")[0])] | join(" ")')"
stop_node x2
CLUSTER_CONF=$B_CONF start_node x2 --roles executor
# the same hosts in another order, one twice: the same grant, no warning
wait_until "after x2's restart (the same hosts, in another order, one twice): nothing differs" 30 sh -c \
	"'$PAL' status --config '$A_CONF' --output json | jq -e '(.nodes | length) == 2 and (.warnings == null)' >/dev/null"
stop_node x1
stop_node x2
finish
