#!/usr/bin/env bash
# A node told to stop while its retention round builds jobs_ref (the unique
# index on jobs.ref, built CONCURRENTLY once 041's jobs step has finished)
# stops within a batch, as docs/upgrades.md ("The backfill") says of the
# round's backfill: the build waits for every transaction older than it,
# and an open session (a report, an operator's psql) would otherwise hold
# the node's stop, and a roll's drain of it, for as long as it stays open.
# The state is the one an interrupted build leaves (jobs step finished,
# jobs_ref missing or invalid), which a roll from 0.3.0 may find.
#   1. jobs_ref missing, a 40 s transaction of another session: the
#      round's CREATE INDEX CONCURRENTLY waits for it; SIGTERM: the node
#      cancels the build and exits within 5 s, an invalid jobs_ref left.
#   2. that invalid jobs_ref, a 40 s transaction that read jobs: the
#      round's DROP INDEX CONCURRENTLY waits for it; SIGTERM: the same.
#   3. the long sessions gone: a node's round drops the invalid index and
#      builds it again, valid, and the backfill is done.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a node stopping while its retention round builds or drops jobs_ref stops within a batch, and the next round repairs the index"

fresh_db it_datafill_stop
expect_exit "migrate" 0 "$PAL" migrate
write_conf "$CLUSTER_CONF" "retention: {check_interval: 1s}"
sql "drop index jobs_ref" >/dev/null
expect_eq "jobs step finished, jobs_ref not there" "true " \
	"$(sql "select (select finished_at is not null from palisade_backfills where step = 'jobs.ref') || ' ' || coalesce(to_regclass('jobs_ref')::text, '')")"
index_state() { sql "select coalesce((select indisvalid::text from pg_index where indexrelid = to_regclass('jobs_ref')), 'absent')"; }
LONG=
# long_tx SQL: a session of its own that runs SQL then sleeps 40 s in its
# transaction (application_name it_long).
long_tx() {
	PGAPPNAME=it_long "$PSQL" "$PALISADE_PG" -XAtq -c "begin; $1; select pg_sleep(40); commit" >/dev/null 2>&1 &
	LONG=$!
	wait_until "the 40 s transaction runs" 10 has "select count(*) from pg_stat_activity where application_name = 'it_long' and wait_event = 'PgSleep'"
}
end_long() {
	sql "select count(pg_terminate_backend(pid)) from pg_stat_activity where application_name = 'it_long'" >/dev/null
	wait "$LONG" 2>/dev/null
	LONG=
}
trap 'end_long; stop_all_nodes' EXIT
# stop_in_index WHAT: start n1, wait until its round runs WHAT (a statement
# on jobs_ref waiting for the long transaction), SIGTERM it, check it exits
# within 5 s.
stop_in_index() {
	start_node n1 --roles controller
	wait_until "n1's retention round runs $1 jobs_ref (waiting for the 40 s transaction)" 30 \
		has "select count(*) from pg_stat_activity where query ilike '$1%jobs_ref%' and wait_event_type = 'Lock'" ||
		{ stop_node n1; return 1; }
	sleep 1
	local t0 took
	t0=${EPOCHREALTIME//[.,]/}
	kill -TERM "${NODE_PID[n1]}"
	for _ in $(seq 1 600); do node_alive n1 || break; sleep 0.1; done
	took=$(((${EPOCHREALTIME//[.,]/} - t0) / 100000))
	echo "    figure: n1 stopped $((took / 10)).$((took % 10)) s after SIGTERM, in $1"
	check "n1 stops within 5 s of SIGTERM ($1 cancelled: one batch at most, docs/upgrades.md)" [ "$took" -lt 50 ]
	stop_node n1
	expect_eq "n1 exited 0" 0 "${NODE_EXIT[n1]}"
	expect_eq "nothing on jobs_ref runs after n1 stopped" 0 \
		"$(sql "select count(*) from pg_stat_activity where query ilike '%index concurrently%jobs_ref%' and state = 'active' and pid <> pg_backend_pid()")"
}

# ---- 1. the build, waiting for a transaction older than it ---------------------
long_tx "select txid_current()"
stop_in_index "create unique index concurrently"
check "n1 logged the build stopped (store.datafill_index_stopped)" \
	grep -q '"event":"store.datafill_index_stopped"' "$NODE_DIR/n1.log"
expect_eq "the cancelled build leaves jobs_ref invalid" false "$(index_state)"
end_long

# ---- 2. the drop of that invalid index, waiting for a reader of jobs ------------
long_tx "select count(*) from jobs"
stop_in_index "drop index concurrently"
expect_eq "jobs_ref still there, invalid, after the cancelled drop" false "$(index_state)"
end_long

# ---- 3. the next round repairs it -------------------------------------------------
: >"$NODE_DIR/n1.log"
start_node n1 --roles controller
valid() { [ "$(index_state)" = true ]; }
wait_until "n1's next round drops the invalid jobs_ref and builds it again, valid" 30 valid
check "n1 logged the build (store.datafill_index_built)" \
	grep -q '"event":"store.datafill_index_built"' "$NODE_DIR/n1.log"
expect_eq "one jobs_ref, unique on jobs (ref)" "1 true" \
	"$(sql "select count(*) || ' ' || bool_and(i.indisunique) from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname like 'jobs_ref%' and i.indrelid = 'jobs'::regclass")"
stop_node n1
expect_eq "n1 exited 0" 0 "${NODE_EXIT[n1]}"
finish
