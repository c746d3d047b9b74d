#!/usr/bin/env bash
# A job no node may send is fixed (docs/executor.md, "A secret missing on one
# node"): a render skip counts only for the job version it was recorded
# against, and a node drops its own skips when it starts.
#  1. red.fix every 2 s with a host x1's executor.target_hosts does not give
#     red: its first trigger goes `manual` and x1 skips the job (version 1).
#     The operator applies version 2, whose url is a host x1 gives.  Version
#     1's skip must neither keep x1's claims off version 2 nor send version
#     2's instants `manual` with a ticket naming version 1's host; version
#     1's own instants before the switch point may go `manual` (true).
#  2. red.restart, a host x1 does not give: first trigger `manual`, x1 skips
#     the job; x1 is restarted with the host given: it claims the job at
#     once (its skip is gone), not 5 minutes later, and nothing due after
#     the restart goes `manual`.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a render skip counts for the job version it was recorded against, and not past the node's restart: a fixed version or a fixed node sends the job's instants"
it_db
LPORT=$(free_port)
IPORT=$(free_port)
RPORT=$(free_port)
echo ok >"$NODE_DIR/x"
python3 -m http.server --bind 127.0.0.1 --directory "$NODE_DIR" "$IPORT" >"$NODE_DIR/http.log" 2>&1 & IPID=$!
python3 -m http.server --bind 127.0.0.1 --directory "$NODE_DIR" "$LPORT" >"$NODE_DIR/http2.log" 2>&1 & LPID=$!
python3 -m http.server --bind 127.0.0.1 --directory "$NODE_DIR" "$RPORT" >"$NODE_DIR/http3.log" 2>&1 & RPID=$!
trap 'kill $IPID $LPID $RPID 2>/dev/null; stop_all_nodes' EXIT
SHARDS=2 write_exec_conf "$CLUSTER_CONF" \
	"executor: {lease: 5s, heartbeat: 1s, target_hosts: {red: [\"127.0.0.1:$LPORT\"]}}"
start_node x1
wait_until "node x1 ready" 30 node_ready x1
job() { printf 'jobs:\n  - id: %s\n    tenant: red\n    schedule: {cron: "0/2 * * * * ?"}\n    target:\n      url: http://127.0.0.1:%s/x\n      method: GET\n' "$1" "$2" >"$NODE_DIR/$1.yaml"; }

echo "  1. a new version that renders"
job red.fix "$IPORT"
expect_exit "apply version 1 (host not given to red)" 0 "$PAL" apply "$NODE_DIR/red.fix.yaml"
first() { [ "$(sql "SELECT count(*) FROM triggers WHERE job_id = '$1' AND state = 'manual'")" -ge 1 ]; }
wait_until "version 1's first trigger becomes manual (skip recorded)" 20 first red.fix
expect_eq "the skip names version 1" "1" "$(sql "SELECT version FROM render_skips WHERE node = 'x1' AND job_id = 'red.fix'")"
job red.fix "$LPORT"
expect_exit "apply version 2 (a host red is given)" 0 "$PAL" apply "$NODE_DIR/red.fix.yaml"
V2=$(sql "SELECT max(version) FROM job_versions WHERE job_id = 'red.fix'")
sleep 16
echo "    version 2 states: $(sql "SELECT coalesce(string_agg(state || '=' || n, ' '), 'none') FROM (SELECT state, count(*) n FROM triggers WHERE job_id = 'red.fix' AND version = $V2 GROUP BY state) s")"
echo "    version 1 states: $(sql "SELECT coalesce(string_agg(state || '=' || n, ' '), 'none') FROM (SELECT state, count(*) n FROM triggers WHERE job_id = 'red.fix' AND version < $V2 GROUP BY state) s")"
echo "    version 2 tickets: $(sql "SELECT coalesce(string_agg(DISTINCT reason, ' | '), 'none') FROM tickets k JOIN triggers t ON t.id = k.trigger_id WHERE t.job_id = 'red.fix' AND t.version = $V2")"
expect_eq "no version 2 trigger manual (its host is given: it renders)" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.fix' AND version = $V2 AND state = 'manual'")"
expect_eq "no ticket on a version 2 trigger" 0 \
	"$(sql "SELECT count(*) FROM tickets k JOIN triggers t ON t.id = k.trigger_id WHERE t.job_id = 'red.fix' AND t.version = $V2")"
check "version 2 was called" grep -q 'GET /x' "$NODE_DIR/http2.log"
expect_eq "version 2's instants due 5 s or more succeeded" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.fix' AND version = $V2 AND state <> 'succeeded' AND scheduled_at < now() - interval '5 seconds'")"
expect_eq "version 1's instants due 5 s or more are manual, each with one ticket naming its host" 0 \
	"$(sql "SELECT count(*) FROM triggers t WHERE job_id = 'red.fix' AND version < $V2 AND scheduled_at < now() - interval '5 seconds' AND (state <> 'manual' OR (SELECT count(*) FROM tickets k WHERE k.trigger_id = t.id AND k.reason LIKE '%127.0.0.1:$IPORT%') <> 1)")"
expect_eq "version 1's host was never called" 0 "$(grep -c 'GET /x' "$NODE_DIR/http.log")"

echo "  2. a node restarted with the host given"
job red.restart "$RPORT"
expect_exit "apply red.restart (host not given to red)" 0 "$PAL" apply "$NODE_DIR/red.restart.yaml"
wait_until "red.restart's first trigger becomes manual (skip recorded)" 20 first red.restart
stop_node x1
sed -i "s|target_hosts: {red: \[\"127.0.0.1:$LPORT\"\]}|target_hosts: {red: [\"127.0.0.1:$LPORT\", \"127.0.0.1:$RPORT\"]}|" "$CLUSTER_CONF"
grep -q "127.0.0.1:$RPORT" "$CLUSTER_CONF" || fail "the config gives the host"
T_RESTART=$(sql "SELECT extract(epoch FROM now())")
start_node x1
wait_until "node x1 ready again" 30 node_ready x1
expect_eq "x1's skips went at its start" 0 "$(sql "SELECT count(*) FROM render_skips WHERE node = 'x1'")"
called() { grep -q 'GET /x' "$NODE_DIR/http3.log"; }
wait_until "red.restart is called within seconds of the restart" 15 called
sleep 4
expect_eq "nothing of red.restart due after the restart went manual" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.restart' AND state = 'manual' AND scheduled_at > to_timestamp($T_RESTART)")"
finish
