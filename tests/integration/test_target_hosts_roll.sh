#!/usr/bin/env bash
# A roll of executor.target_hosts (docs/jobs.md, "Target hosts"): x1 does
# not give red the host, x2 does.  x1 hands back what it claims and skips the
# job; every instant must still run on x2, none go `manual` (neither the
# hand-back's rule nor the executors' sweep of jobs every live node skips,
# test_target_hosts_nowhere.sh, may take an instant x2 can send), none stay
# pending.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "during a roll of executor.target_hosts every instant runs on the node that gives the host, none goes manual"
fresh_db it_target_hosts_roll
"$PAL" migrate >/dev/null
IPORT=$(free_port)
echo ok >"$NODE_DIR/x"
python3 -m http.server --bind 127.0.0.1 --directory "$NODE_DIR" "$IPORT" >"$NODE_DIR/http.log" 2>&1 & IPID=$!
trap 'kill $IPID 2>/dev/null; stop_all_nodes' EXIT
start_executor_pair ", target_hosts: {red: [\"other.example\"]}" \
	", target_hosts: {red: [\"127.0.0.1:$IPORT\"]}"
printf 'jobs:\n  - id: red.roll\n    tenant: red\n    schedule: {cron: "0/2 * * * * ?"}\n    target:\n      url: http://127.0.0.1:%s/x\n      method: GET\n' "$IPORT" >"$NODE_DIR/roll.yaml"
expect_exit "apply without --config" 0 "$PAL" apply "$NODE_DIR/roll.yaml"
sleep 30
echo "    render skips: $(sql "SELECT coalesce(string_agg(node, ' '), 'none') FROM render_skips WHERE job_id = 'red.roll'")"
echo "    states: $(sql "SELECT string_agg(state || '=' || n, ' ') FROM (SELECT state, count(*) n FROM triggers WHERE job_id = 'red.roll' GROUP BY state) s")"
expect_eq "no trigger manual (x2 grants the host)" 0 "$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.roll' AND state = 'manual'")"
expect_eq "every instant due 5 s or more succeeded" 0 "$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.roll' AND state <> 'succeeded' AND scheduled_at < now() - interval '5 seconds'")"
expect_eq "none due 5 s or more left pending" 0 "$(sql "SELECT count(*) FROM triggers WHERE job_id = 'red.roll' AND state = 'pending' AND scheduled_at < now() - interval '5 seconds'")"
finish
