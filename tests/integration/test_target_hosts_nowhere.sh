#!/usr/bin/env bash
# A recurring job that no live executor node may send (docs/executor.md, "A
# secret missing on one node" and "A host the tenant is not given"): one
# node, a red job every 2 s whose target host executor.target_hosts does not
# give red, and one whose ${NAME} executor.secrets does not give red, both
# stored by `apply` without --config.  The first trigger's hand-back goes
# `manual` with a ticket, and its render skip keeps the node's claims off the
# job for 5 minutes; every later instant must go `manual` with a ticket
# within seconds of its due time as well (the executors' periodic sweep),
# not wait, past due and ticketless, for the skip to expire.  That a node
# that gives the host still runs every instant while another refuses it is
# test_target_hosts_roll.sh.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "every instant of a job no live executor node may send ends manual with a ticket within seconds, not only the first"
it_db
LPORT=$(free_port)
IPORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$IPORT" >"$NODE_DIR/http.log" 2>&1 & IPID=$!
trap 'kill $IPID 2>/dev/null; stop_all_nodes' EXIT
export BLUE_KEY=k
SHARDS=2 write_exec_conf "$CLUSTER_CONF" \
	"executor: {lease: 5s, heartbeat: 1s, target_hosts: {red: [\"127.0.0.1:$LPORT\"]}, secrets: {blue: [BLUE_KEY]}}"
start_node x1
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[x1]}/readyz")" = 200 ]; }
wait_until "node x1 ready" 30 ready
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - id: red.sneak
    tenant: red
    schedule: {cron: "0/2 * * * * ?"}
    target:
      url: http://127.0.0.1:$IPORT/x
  - id: red.secret
    tenant: red
    schedule: {cron: "1/2 * * * * ?"}
    target:
      url: http://127.0.0.1:$LPORT/x
      headers: {X-Key: "\${BLUE_KEY}"}
YAML
expect_exit "apply without --config stores both (neither host nor secret checked)" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
first() { [ "$(sql "SELECT count(DISTINCT job_id) FROM triggers WHERE job_id LIKE 'red.%' AND state = 'manual'")" = 2 ]; }
wait_until "the first trigger of each job becomes manual" 20 first
sleep 20
for j in red.sneak red.secret; do
	echo "    $j: triggers due 5 s or more, by state: $(sql "SELECT string_agg(state || '=' || n, ' ') FROM (SELECT state, count(*) n FROM triggers WHERE job_id = '$j' AND scheduled_at < now() - interval '5 seconds' GROUP BY state) s")"
	expect_eq "$j: no trigger due 5 s or more is still pending" 0 \
		"$(sql "SELECT count(*) FROM triggers WHERE job_id = '$j' AND state = 'pending' AND scheduled_at < now() - interval '5 seconds'")"
	expect_eq "$j: every trigger due 5 s or more is manual" 0 \
		"$(sql "SELECT count(*) FROM triggers WHERE job_id = '$j' AND state <> 'manual' AND scheduled_at < now() - interval '5 seconds'")"
	expect_eq "$j: each of them has one ticket" 0 \
		"$(sql "SELECT count(*) FROM triggers t WHERE job_id = '$j' AND scheduled_at < now() - interval '5 seconds' AND (SELECT count(*) FROM tickets k WHERE k.trigger_id = t.id) <> 1")"
done
expect_eq "red.sneak's later tickets give the reason and evidence of the first" 0 \
	"$(sql "SELECT count(*) FROM tickets WHERE job_id = 'red.sneak' AND NOT (reason LIKE 'no live executor node can render the request: %executor.target_hosts does not give host 127.0.0.1:$IPORT to tenant red%' AND evidence -> 'nodes_that_cannot_render' = '[\"x1\"]')")"
expect_eq "red.secret's name the secret" 0 \
	"$(sql "SELECT count(*) FROM tickets WHERE job_id = 'red.secret' AND NOT (reason LIKE 'no live executor node can render the request: %BLUE_KEY%' AND evidence ->> 'render_error' LIKE '%BLUE_KEY%')")"
expect_eq "no attempt spent by the later instants (never claimed)" 0 \
	"$(sql "SELECT count(*) FROM triggers WHERE job_id LIKE 'red.%' AND state = 'manual' AND attempt_count <> 0")"
expect_eq "the skipped service was never called" 0 "$(grep -c 'GET /x' "$NODE_DIR/http.log")"
check "logged executor.render_manual" grep -q "\"event\":\"executor.render_manual\"" "$NODE_DIR/x1.log"
finish
