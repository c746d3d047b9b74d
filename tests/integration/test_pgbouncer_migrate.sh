#!/usr/bin/env bash
# `palisade migrate --pg <PgBouncer in transaction mode>` while nodes run
# through the same pooler.  The migration lock is a session advisory lock:
# through the pooler it would be taken on one server connection and
# released on another (the release finds nothing, the lock stays held by a
# server connection that other clients keep busy), and every later
# migration - a node's start-up migration too - would wait behind it.
# migrate refuses before it takes the lock (exit 4, nothing applied); no
# backend holds the lock after any attempt; a node restarted afterwards
# passes its start-up migration; --config still reaches PostgreSQL itself.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G8 behind a transaction pooler: palisade migrate refuses a --pg that reaches PostgreSQL through a pooler and leaves no migration lock held"
source tests/integration/pgbouncer_lib.sh
pgb_cluster it_pgbouncer_migrate || { finish; exit 1; }
pgb_jobs 60
for n in m1 m2; do start_node "$n"; done
wait_until "all shards led" 30 all_shards_led
sleep 2

# The lock's key, PAL_MIGRATE_LOCK_KEY, as pg_locks shows a bigint key.
held() { sql "select count(*) from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database()) and ((classid::bigint << 32) | objid::bigint) = 7075283591402447205 and granted"; }
# Under load: the pooler's server connections are shared by the nodes'
# claims and renewals between the command's statements.
for i in 1 2 3 4 5; do
	expect_exit "migrate --pg <pooler> #$i: refused before the lock" 4 "$PAL" migrate --pg "$POOLED"
	[ "$i" = 1 ] && expect_match "... saying why and what to use" \
		"connection pooler.*migration lock.*PostgreSQL itself.*nothing applied" "$OUT"
	expect_eq "... no backend holds the migration lock after it" 0 "$(held)"
done
expect_exit "PALISADE_PG=<pooler> migrate: refused as well" 4 env PALISADE_PG="$POOLED" "$PAL" migrate
expect_eq "... no backend holds the migration lock after it" 0 "$(held)"
expect_exit "migrate --config (postgres.direct_conninfo) is not refused" 0 \
	env -u PALISADE_PG timeout 20 "$PAL" migrate --config "$CLUSTER_CONF"
expect_exit "migrate --pg <PostgreSQL itself> is not refused, nor waits" 0 timeout 20 "$PAL" migrate --pg "$DIRECT"
expect_eq "no backend holds the migration lock at the end" 0 "$(held)"

# A node's start-up migration takes the same lock (on the direct conninfo).
stop_node m2
start_node m2
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[m2]}/readyz")" = 200 ]; }
wait_until "m2 restarted passes its start-up migration and is ready" 30 ready
stop_all_nodes
finish
