#!/usr/bin/env bash
# An executor node whose claims and lease renewals go through PgBouncer
# (transaction mode) while its listening and results connections reach
# PostgreSQL itself.  With PgBouncer stopped the node can neither claim nor
# renew: palisade_executor_db_up goes to 0 and /readyz answers 503
# "PostgreSQL unreachable (executor: ...)" until the pooler is back (200
# again); the change is logged once each way (executor.db_down with the
# connection, executor.db_up), not once per pass.  With every server
# connection of the pool held busy (nothing fails, renewals and claims
# queue in the pooler) the node logs executor.db_stalled once, then
# executor.db_stall_over.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "degrade safely and say so: behind a transaction pooler, /readyz and palisade_executor_db_up say PostgreSQL unreachable while the pooled connections are down, and the node logs the change and a stall once"
source tests/integration/pgbouncer_lib.sh
pgb_cluster it_pgbouncer_readyz || { finish; exit 1; }
pgb_jobs 10
start_node e1
LOG=$NODE_DIR/e1.log
code() { curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[e1]}/readyz"; }
ready() { [ "$(code)" = 200 ]; }
not_ready() { [ "$(code)" = 503 ]; }
events() { grep -c "\"event\":\"$1\"" "$LOG"; }
wait_until "e1 ready" 30 ready
claims() { [ "$(metric e1 palisade_executor_claimed_total)" != 0 ]; }
wait_until "e1 claims jobs through the pooler" 20 claims
sleep 2
expect_eq "palisade_executor_db_up is 1 with the pooler up" 1 "$(metric e1 palisade_executor_db_up)"

# ---- the pooler down: PostgreSQL itself still answers the direct connections
stop_pgbouncer
db_down() { [ "$(metric e1 palisade_executor_db_up)" = 0 ]; }
wait_until "palisade_executor_db_up goes to 0 with the pooler down" 15 db_down
wait_until "/readyz answers 503 while the pooled connections are down" 15 not_ready
body=$(curl -s "http://${NODE_ADMIN[e1]}/readyz")
echo "    /readyz: $body"
expect_match "... naming PostgreSQL unreachable and the executor's path that is down" \
	"^not ready: PostgreSQL unreachable \(executor: (claims|lease renewals)\)" "$body"
sleep 5
check "... for the whole outage (still 503 5 s later)" not_ready
expect_eq "the change is logged once (executor.db_down), not once per pass" 1 "$(events executor.db_down)"
grep '"event":"executor.db_down"' "$LOG" | head -1 | sed 's/^/      /'
start_pgbouncer
wait_until "PgBouncer answers again" 10 pgb_up
wait_until "e1 is ready again once the pooler is back" 30 ready
expect_eq "palisade_executor_db_up is 1 again" 1 "$(metric e1 palisade_executor_db_up)"
expect_eq "the way back is logged once (executor.db_up)" 1 "$(events executor.db_up)"

# ---- the pool exhausted: every server connection busy for 8 s ------------------
sleep 3
stalled0=$(events executor.db_stalled)
pids=()
for _ in $(seq 1 "$PGB_POOL"); do
	"$PSQL" "$POOLED" -XAtqc "select pg_sleep(8)" >/dev/null 2>&1 &
	pids+=($!)
done
stalled() { [ "$(events executor.db_stalled)" -gt "$stalled0" ]; }
wait_until "the node logs executor.db_stalled while the pool is held" 8 stalled
grep '"event":"executor.db_stalled"' "$LOG" | tail -1 | sed 's/^/      /'
for p in "${pids[@]}"; do wait "$p"; done
over() { [ "$(events executor.db_stall_over)" -ge 1 ]; }
wait_until "... and executor.db_stall_over once the pool is free" 15 over
expect_eq "the stall is logged once" 1 "$(events executor.db_stalled)"
wait_until "e1 ready after the stall" 15 ready
stop_all_nodes
finish
