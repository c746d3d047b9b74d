#!/usr/bin/env bash
# Three nodes (controller + executor each) whose pooled connections go
# through PgBouncer in transaction mode, with a server pool smaller than the
# clients it serves, under 60 jobs every second into the reference sink;
# the connections that need a session use postgres.direct_conninfo.  No
# instant missing or doubled, one effect per key, no statement lost to the
# pooler (a named statement unknown on the next server connection).
# POOL_MODE=session runs the nodes as if no pooler had been declared (named
# statements and session settings through the pooler): the test then fails.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G3 behind PgBouncer 1.18 in transaction mode, 3 nodes sharing a 4-connection server pool: zero missing and zero doubled instants (palisade verify), one effect per key at the sink, no prepared-statement or session error"
T_START=$(date +%s)

source tests/integration/pgbouncer_lib.sh
pgb_cluster it_pgbouncer || { finish; exit 1; }
# An operator's command given the node config is one session (the migration
# lock): it goes to postgres.direct_conninfo, never through the pooler.
logins() { grep -c 'login attempt' "$PGB_DIR/pgbouncer.log"; }
before=$(logins)
expect_exit "palisade migrate --config (no --pg, no PALISADE_PG)" 0 env -u PALISADE_PG "$PAL" migrate --config "$CLUSTER_CONF"
expect_eq "... connected directly, not through PgBouncer (logins before and after)" "$before" "$(logins)"
pgb_jobs 60
for n in p1 p2 p3; do start_node "$n"; done
wait_until "all shards led" 30 all_shards_led
T0=$(now_rfc3339)
# 20 s of load (at least 15 s of it in the window checked below), its own
# figure: `make test`'s LOAD_SECONDS is the controller fault test's.
sleep "${PGB_LOAD_SECONDS:-20}"
# The pooler's view under load: clients of the palisade database beside its
# server connections (SHOW CLIENTS / SERVERS: the database is column 3).
clients=$(pgb_show CLIENTS | awk -F'|' '$3 == "it_pgbouncer"' | wc -l)
servers=$(pgb_show SERVERS | awk -F'|' '$3 == "it_pgbouncer"' | wc -l)
echo "    figure: under load, $clients client connections of the nodes share $servers server connections (default_pool_size $PGB_POOL)"
check "the nodes' pooled connections ($clients) outnumber the server pool ($PGB_POOL)" [ "$clients" -gt "$PGB_POOL" ]
check "PgBouncer kept to its pool ($servers server connections)" [ "$servers" -le "$PGB_POOL" ]
T1=$(rfc3339_ago 0)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "every trigger planned in the window ends succeeded" 30 settled
echo "    states: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1) x")"
n_trig=$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1'")
echo "    figure: $n_trig triggers in the window $T0 .. $T1"
check "the window holds the load (at least 60 x 15 triggers)" [ "$n_trig" -ge 900 ]
expect_eq "no idempotency key has more than one effect (sink_ledger)" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by idempotency_key having count(*) > 1) d")"
expect_eq "every trigger's key has its effect at the sink" 0 \
	"$(sql "select count(*) from trigger_jobs t where t.scheduled_at between '$T0' and '$T1' and not exists (select 1 from sink_effects e where e.idempotency_key = t.job_id || '/' || to_char(t.scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || '/' || t.partition)")"
expect_exit "verify: no instant missing or doubled, no effect doubled at the sink" 0 \
	"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$DIRECT"
echo "    $OUT" | head -2
xacts=$(pgb_show STATS | awk -F'|' '$1 == "it_pgbouncer" { print $2 }')
echo "    figure: transactions through PgBouncer: ${xacts:-?}"
check "the nodes' claims and renewals went through PgBouncer (over 300 transactions)" [ "${xacts:-0}" -gt 300 ]
session_errors=$(cat "$NODE_DIR"/p?.log | grep -ciE 'prepared statement .* (does not exist|already exists)|needs a session' || true)
expect_eq "no statement lost to the pooler (prepared-statement or session errors in the node logs)" 0 "$session_errors"
stop_all_nodes
echo "    figure: test took $(( $(date +%s) - T_START )) s"
finish
