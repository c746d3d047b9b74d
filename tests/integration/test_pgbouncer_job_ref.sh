#!/usr/bin/env bash
# The build of the index jobs_ref (after 041's jobs.ref backfill) by the
# nodes' retention workers, whose own connections go through PgBouncer in
# transaction mode.  The build is serialised by a session advisory lock
# (7076/42) held across CREATE INDEX CONCURRENTLY, which runs in no
# transaction: through the pooler the lock and its release would land on
# different server connections and the lock would stay held there.  The
# workers build it on a connection to postgres.direct_conninfo: the index
# is built, by a worker that held the lock, and no backend holds 7076/42
# afterwards; no "you don't own a lock" warning reaches a node's log.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the retention workers' jobs_ref build behind a transaction pooler holds its advisory lock on a session of its own and releases it"
source tests/integration/pgbouncer_lib.sh
pgb_cluster it_pgbouncer_job_ref "retention: {check_interval: 1s}" || { finish; exit 1; }
expect_eq "041's jobs.ref backfill is finished" "t" \
	"$(sql "select finished_at is not null from palisade_backfills where step = 'jobs.ref'")"
sql "drop index if exists jobs_ref" >/dev/null
pgb_jobs 60
# Other clients of the pool besides the nodes, a short transaction after
# another: a client's next transaction lands on whichever server
# connection is free then, seldom the one its last one ran on.
for _ in $(seq 1 3000); do echo "select pg_sleep(0.01);"; done >"$NODE_DIR/churn.sql"
CHURN=()
stop_churn() { local p; for p in "${CHURN[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; CHURN=(); }
trap 'stop_churn; stop_all_nodes; stop_sink; pgb_cleanup' EXIT
for _ in 1 2 3; do
	"$PSQL" "$POOLED" -XAtq -f "$NODE_DIR/churn.sql" >/dev/null 2>&1 &
	CHURN+=($!)
done
holders() { sql "select count(*) from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database()) and classid = 7076 and objid = 42 and granted"; }
built() { [ "$(sql "select count(*) from pg_index where indexrelid = to_regclass('jobs_ref') and indisvalid")" = 1 ]; }
# Three nodes starting together: their first rounds race for the build.
for n in j1 j2 j3; do start_node "$n"; done
wait_until "the retention workers build jobs_ref" 60 built
sleep 2
expect_eq "no backend holds the build's advisory lock 7076/42 once the index is built" 0 "$(holders)"
# Again under load: j3 restarted with the index dropped.
for i in 1 2 3; do
	stop_node j3
	sql "drop index if exists jobs_ref" >/dev/null
	start_node j3
	wait_until "round $i: jobs_ref built again under load" 60 built
	sleep 2
	expect_eq "round $i: no backend holds 7076/42 afterwards" 0 "$(holders)"
done
stop_churn
check "the builds were logged (store.datafill_index_built)" grep -q '"event":"store.datafill_index_built"' "$NODE_DIR"/j?.log
expect_eq "no 'you don't own a lock' warning (each release ran where its lock was)" 0 \
	"$(cat "$NODE_DIR"/j?.log | grep -c "own a lock")"
expect_eq "no retention.backfill_failed" 0 "$(cat "$NODE_DIR"/j?.log | grep -c '"event":"retention.backfill_failed"')"
stop_all_nodes
finish
