#!/usr/bin/env bash
# Migrations: concurrent start-up converges (G8); a newer schema is refused.
source tests/integration/lib.sh
guarantee "G8 - any number of concurrent 'palisade migrate' runs on an empty database leave one schema and no error; a binary refuses a schema newer than it knows"

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

expect_exit "unreachable database exits 69" 69 "$PAL" migrate --pg "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=2"
expect_match "and names the cause" "cannot connect to PostgreSQL" "$OUT"
finish
