#!/usr/bin/env bash
# Migrations: concurrent start-up converges (G8); a newer schema is refused.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G8 - any number of concurrent 'palisade migrate' runs on an empty database leave one schema and no error; a binary refuses a schema newer than it knows; a migration beside live transactions gives way to them rather than deadlock or stall them"

fresh_db it_migrate
pids=()
for i in 1 2 3 4 5; do
	"$PAL" migrate >"$PALISADE_TEST_TMP/migrate.$i" 2>&1 &
	pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
expect_eq "5 concurrent migrate runs all exit 0" 5 "$ok"
n_sql=$(ls sql/[0-9]*.sql | wc -l)
total=0
for f in "$PALISADE_TEST_TMP"/migrate.*; do
	a=$(sed -n 's/^migrate: applied \([0-9]*\).*/\1/p' "$f")
	total=$((total + ${a:-0}))
done
expect_eq "each migration applied exactly once across the 5 runs" "$n_sql" "$total"
expect_eq "schema_migrations has one row per migration" "$n_sql" "$(sql 'select count(*) from schema_migrations')"
expect_eq "no duplicate versions" "0" "$(sql 'select count(*) - count(distinct version) from schema_migrations')"
expect_eq "core tables exist" "11" "$(sql "select count(*) from pg_tables where schemaname='public' and tablename in ('jobs','job_versions','triggers','attempts','misfires','shards','gates','tickets','audit_log','schema_migrations','cluster_settings')")"
expect_exit "a second migrate is a no-op" 0 "$PAL" migrate
expect_match "and says so" "applied 0 migrations" "$OUT"

for col in id job_id version scheduled_at partition source state fence lease_owner lease_until; do
	expect_eq "triggers.$col exists" 1 "$(sql "select count(*) from information_schema.columns where table_name='triggers' and column_name='$col'")"
done

sql "insert into schema_migrations (version, name) values (9999, '9999_future')"
expect_exit "migrate refuses a newer schema" 70 "$PAL" migrate
expect_match "with a clear message" "schema is at version 9999 but this binary knows only up to" "$OUT"
expect_exit "jobs refuses a newer schema" 70 "$PAL" jobs
sql "delete from schema_migrations where version = 9999"

fresh_db it_migrate_empty
expect_exit "jobs on an unmigrated database asks for migrate" 70 "$PAL" jobs
expect_match "naming the command to run" "run 'palisade migrate'" "$OUT"

# --- A migration beside live transactions (docs/upgrades.md, "Migrations
# beside live nodes").  020_exec_writes drops the foreign key from attempts
# to triggers: it locks attempts, then triggers.  A node's claim locks them
# the other way round (it updates triggers, then inserts attempts).  Session
# H plays the claim: it holds triggers, waits until the migration holds
# attempts and waits for triggers, then asks for attempts.  Without lock
# timeouts PostgreSQL breaks that cycle after deadlock_timeout by aborting
# one side: the migration (exit 69) or, worse, the node's transaction.
versions=$(ls sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n)
latest=$(tail -1 <<<"$versions")
before=$(awk '$1 < 20' <<<"$versions" | tail -1) # the last one before 020
fk_count() { sql "SELECT count(*) FROM pg_constraint WHERE conname = 'attempts_trigger_fkey' AND conrelid = 'attempts'::regclass"; }
fresh_db it_migrate_locks
expect_exit "migrate --to 19 stops short of this binary's schema" 0 "$PAL" migrate --to 19
expect_match "and says where it stopped" "schema at version $before\$" "$OUT"
expect_exit "--to beyond this binary is refused" 64 "$PAL" migrate --to 9999
expect_match "with the range" "want a schema version from 1 to $latest" "$OUT"

fifo=$PALISADE_TEST_TMP/h.fifo
mkfifo "$fifo"
psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 <"$fifo" >"$PALISADE_TEST_TMP/h.out" 2>&1 &
hpid=$!
exec 7>"$fifo"
echo "BEGIN; LOCK TABLE triggers IN ROW EXCLUSIVE MODE; SELECT 'held';" >&7
wait_until "H holds triggers (as a claim's update does)" 10 grep -q held "$PALISADE_TEST_TMP/h.out"
"$PAL" migrate >"$PALISADE_TEST_TMP/m.out" 2>"$PALISADE_TEST_TMP/m.err" &
mpid=$!
# The migration's backend holds attempts and waits for a lock on triggers.
migration_in_cycle() {
	[ "$(sql "SELECT EXISTS (SELECT 1 FROM pg_locks w JOIN pg_locks h ON h.pid = w.pid
	            WHERE w.database = (select oid from pg_database where datname = current_database()) AND NOT w.granted AND w.relation = 'triggers'::regclass
	              AND h.granted AND h.relation = 'attempts'::regclass
	              AND h.mode = 'AccessExclusiveLock')")" = t ]
}
wait_until "the migration holds attempts and waits for triggers" 10 migration_in_cycle
echo "LOCK TABLE attempts IN ROW EXCLUSIVE MODE; SELECT 'both'; SELECT pg_sleep(1.5); COMMIT;" >&7
exec 7>&-
wait "$hpid"
expect_eq "H, then waiting for attempts, commits: not a deadlock's victim" "0" "$?"
wait "$mpid"
expect_eq "migrate succeeds beside it" "0" "$?"
expect_match "having given way to H's locks (logged on stderr)" \
	'"event":"store.migrate_lock_retry".*"migration":"020_exec_writes"' "$(cat "$PALISADE_TEST_TMP/m.err")"
expect_match "its report on stdout" "^migrate: applied [0-9]+ migrations; schema at version $latest\$" \
	"$(cat "$PALISADE_TEST_TMP/m.out")"
expect_eq "the foreign key is gone" 0 "$(fk_count)"

# A lock held past the budget: the migration gives up, says why, applies
# nothing of itself; once the lock is gone a second run applies it.
fresh_db it_migrate_locks_budget
expect_exit "migrate --to 19" 0 "$PAL" migrate --to 19
psql "$PALISADE_PG" -XAtq -c "BEGIN; LOCK TABLE attempts IN ACCESS SHARE MODE; SELECT pg_sleep(20); COMMIT" \
	>/dev/null 2>&1 &
hpid=$!
attempts_held() { [ "$(sql "SELECT count(*) FROM pg_locks WHERE granted AND database = (select oid from pg_database where datname = current_database()) AND relation = 'attempts'::regclass")" -gt 0 ]; }
wait_until "a long transaction reads attempts" 10 attempts_held
expect_exit "migrate gives up on the locks it cannot take (EX_TEMPFAIL)" 75 "$PAL" migrate
expect_match "and says why and what to do" \
	"migration 020_exec_writes could not take its locks in [0-9]+ tries \([0-9]+ ms giving way in all\) .*nothing of it was applied: run migrate again" "$OUT"
expect_eq "020 is not applied" "$before" "$(sql 'SELECT max(version) FROM schema_migrations')"
expect_eq "its foreign key is still there" 1 "$(fk_count)"
kill "$hpid" 2>/dev/null
sql "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE database = (select oid from pg_database where datname = current_database()) AND relation = 'attempts'::regclass AND pid <> pg_backend_pid()" >/dev/null
wait "$hpid" 2>/dev/null
expect_exit "a second run applies the rest" 0 "$PAL" migrate
expect_match "up to this binary's schema" "schema at version $latest" "$OUT"

expect_exit "unreachable database exits 69" 69 "$PAL" migrate --pg "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=2"
expect_match "and names the cause" "cannot connect to PostgreSQL" "$OUT"
finish
