#!/usr/bin/env bash
# The functions, views and triggers that run are those of sql/functions/
# (docs/schema.md, "Functions, views and triggers"): after the numbered
# migrations the migrator applies the files, once per set of files, under
# the migration lock and the same lock budget as a migration.  The sink's
# own schema (sql/sink/functions/) likewise.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G8 - every function, view and trigger in the database is its file in sql/functions/, byte for byte, and nothing else is there; re-applying them is idempotent and gives way to live transactions"
t0=$SECONDS
objects() { python3 tests/integration/sql_objects.py "$PALISADE_PG" sql/functions; }
latest=$(ls sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n | tail -1)
claim_xmin() { sql "SELECT xmin FROM pg_proc WHERE proname = 'palisade_claim'"; }

# Numbered steps change tables, indexes and data only: no function, view
# or trigger is created there, and no body is edited as text.
n=$(grep -l -i -E "^[[:space:]]*CREATE[[:space:]]+(OR[[:space:]]+REPLACE[[:space:]]+)?(FUNCTION|PROCEDURE|VIEW|TRIGGER)|pg_get_functiondef" \
	sql/[0-9]*.sql sql/sink/[0-9]*.sql)
expect_eq "no numbered migration creates or edits a function, view or trigger" "" "$n"

fresh_db it_sql_functions
expect_exit "migrate an empty database" 0 "$PAL" migrate
expect_match "which applies the files once" "^migrate: applied the $(ls sql/functions/*.sql | wc -l) functions, views and triggers of schema $latest\$" "$OUT"
expect_exit "the database runs exactly the files of sql/functions/" 0 objects
expect_match "all of them" "^$(ls sql/functions/*.sql | wc -l) objects, each as its file says" "$OUT"
expect_eq "schema_functions names this binary's schema" "$latest" "$(sql 'SELECT version FROM schema_functions')"

x=$(claim_xmin)
expect_exit "a second migrate" 0 "$PAL" migrate
expect_eq "leaves the functions alone (same version, same files)" "$x" "$(claim_xmin)"
if grep -q "functions, views and triggers" <<<"$OUT"; then fail "and says it applied none: $OUT"; else pass "and says it applied none"; fi

# The check fails on what it is there to catch.
sql "CREATE FUNCTION palisade_stray() RETURNS integer LANGUAGE sql AS 'SELECT 1'"
expect_exit "a function with no file fails the check" 1 objects
expect_match "naming it" "function palisade_stray is in the database but has no file" "$OUT"
sql "DROP FUNCTION palisade_stray()"
sql "CREATE OR REPLACE FUNCTION palisade_retention_horizon() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT NULL::timestamptz'"
expect_exit "a body edited in place fails the check" 1 objects
expect_match "naming its file" "function palisade_retention_horizon: the database's body differs from sql/functions/palisade_retention_horizon.sql" "$OUT"

# Another set recorded for this version (another build of it): applied again.
sql "UPDATE schema_functions SET digest = 'other'"
expect_exit "migrate after another set of the same version" 0 "$PAL" migrate
expect_exit "puts the files' bodies back" 0 objects
# A newer binary's set (recorded above this binary's schema) is left alone.
sql "UPDATE schema_functions SET version = $latest + 1, digest = 'newer'"
sql "CREATE OR REPLACE FUNCTION palisade_retention_horizon() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT NULL::timestamptz'"
expect_exit "migrate beside a newer binary's functions" 0 "$PAL" migrate
expect_exit "leaves them as they are" 1 objects
expect_eq "and their record" "newer" "$(sql 'SELECT digest FROM schema_functions')"

# Beside a live transaction: a claim's lock on triggers (ROW EXCLUSIVE)
# held 1.5 s.  Re-creating triggers_state_edges needs SHARE ROW EXCLUSIVE
# on it: the application waits at most 500 ms per try, gives way, and
# succeeds once the claim commits, without stalling it.
sql "UPDATE schema_functions SET version = $latest - 1, digest = 'older'"
psql "$PALISADE_PG" -XAtq -c "BEGIN; LOCK TABLE triggers IN ROW EXCLUSIVE MODE; SELECT pg_sleep(1.5); COMMIT" >/dev/null 2>&1 &
hpid=$!
held() { [ "$(sql "SELECT count(*) FROM pg_locks WHERE granted AND mode = 'RowExclusiveLock' AND relation = 'triggers'::regclass AND pid <> pg_backend_pid()")" -gt 0 ]; }
wait_until "a transaction holds triggers as a claim does" 10 held
s=$SECONDS
"$PAL" migrate >"$PALISADE_TEST_TMP/sf.out" 2>"$PALISADE_TEST_TMP/sf.err"
expect_eq "migrate with an older set recorded succeeds beside it" 0 "$?"
wait "$hpid"
expect_eq "the live transaction commits" 0 "$?"
expect_match "having given way to its lock (logged)" '"event":"store.migrate_lock_retry".*"migration":"functions".*"sqlstate":"55P03"' "$(cat "$PALISADE_TEST_TMP/sf.err")"
expect_match "then applied the files" "functions, views and triggers of schema $latest" "$(cat "$PALISADE_TEST_TMP/sf.out")"
expect_exit "which the database now runs" 0 objects
echo "    figure: migrate beside a 1.5 s lock took $((SECONDS - s)) s"

# A database migrated short of this binary's schema gets no functions of
# this binary (they are written for its whole schema).
fresh_db it_sql_functions_to
expect_exit "migrate --to 20" 0 "$PAL" migrate --to 20
expect_eq "creates no function" 0 "$(sql "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace")"
expect_exit "the rest of the way" 0 "$PAL" migrate
expect_exit "then the database runs the files" 0 objects

# The sink's schema is built the same way (sql/sink/, sql/sink/functions/).
fresh_db it_sql_functions_sink
sink_fn_xmin() { sql "SELECT xmin FROM pg_proc WHERE proname = 'sink_apply_group'"; }
expect_exit "palisade-sink applies its schema to an empty database" 0 \
	"$PALISADE_BIN/palisade-sink" --migrate-only --pg "$PALISADE_PG"
expect_exit "which then runs exactly the files of sql/sink/functions/" 0 \
	python3 tests/integration/sql_objects.py "$PALISADE_PG" sql/sink/functions
x=$(sink_fn_xmin)
expect_exit "a second start" 0 "$PALISADE_BIN/palisade-sink" --migrate-only --pg "$PALISADE_PG"
expect_eq "replaces no function" "$x" "$(sink_fn_xmin)"
sql "UPDATE sink_schema_functions SET digest = 'other'"
expect_exit "a start after another set of the same version" 0 \
	"$PALISADE_BIN/palisade-sink" --migrate-only --pg "$PALISADE_PG"
check "replaces them" [ "$x" != "$(sink_fn_xmin)" ]

echo "    figure: test took $((SECONDS - t0)) s"
finish
