#!/usr/bin/env bash
# Nothing reads the trigger row's text copies of its job (triggers.job_id,
# triggers.resource_group) but the readers listed in
# tests/jobref_readers.txt, which wait for their move to job_ref: every
# function and view the database runs and every SQL string of src/
# (tests/jobref_readers.py says how it looks).  The contract step drops the
# columns; a reader of them would fail then.  docs/schema.md, "The job
# reference".
source tests/integration/lib.sh
guarantee "G8 - the functions, views and SQL strings of this release read a trigger's job by job_ref: none reads triggers.job_id or triggers.resource_group (nor a row trigger NEW.job_id) but the listed readers waiting for their move, and a new one is found"
t0=$SECONDS

fresh_db it_jobref_readers
"$PAL" migrate >/dev/null 2>&1 || { echo "  migrate failed"; exit 1; }
expect_exit "no reader of the text but the listed ones" 0 python3 tests/jobref_readers.py "$PALISADE_PG"
echo "$OUT" | sed 's/^/      /'

# A reader of the text, as a new function would be: found, and named.
sql "CREATE FUNCTION palisade_probe_reader(p_id bigint) RETURNS text LANGUAGE sql STABLE AS \$\$
       SELECT x.job_id FROM triggers x WHERE x.id = p_id \$\$" >/dev/null
sql "CREATE VIEW probe_groups AS SELECT t.id, t.resource_group FROM triggers t" >/dev/null
sql "CREATE FUNCTION palisade_probe_row() RETURNS trigger LANGUAGE plpgsql AS \$\$
       BEGIN RAISE NOTICE '%', NEW.resource_group; RETURN NEW; END \$\$;
     CREATE TRIGGER probe_row BEFORE UPDATE ON triggers FOR EACH ROW EXECUTE FUNCTION palisade_probe_row()" >/dev/null
expect_exit "a function that reads triggers.job_id fails the check" 1 \
	python3 tests/jobref_readers.py "$PALISADE_PG" --db-only
expect_match "... which names it" "palisade_probe_reader x\\.job_id" "$OUT"
expect_match "... and the view that reads resource_group" "probe_groups t\\.resource_group" "$OUT"
expect_match "... and the row trigger's function that reads NEW.resource_group" "palisade_probe_row NEW\\.resource_group" "$OUT"
sql "DROP FUNCTION palisade_probe_reader(bigint); DROP VIEW probe_groups;
     DROP TRIGGER probe_row ON triggers; DROP FUNCTION palisade_probe_row()" >/dev/null
sql "CREATE FUNCTION palisade_probe_reader(p_job text) RETURNS bigint LANGUAGE sql STABLE AS \$\$
       SELECT x.id FROM triggers x JOIN jobs j ON j.ref = x.job_ref WHERE j.job_id = p_job \$\$" >/dev/null
expect_exit "one that reads job_ref and the job's id from jobs passes" 0 \
	python3 tests/jobref_readers.py "$PALISADE_PG" --db-only

echo "  ($((SECONDS - t0)) s)"
finish
