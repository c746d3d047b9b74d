#!/usr/bin/env bash
# A calendar applied on its own gives every live job that names it a new
# version (its followers, docs/jobs.md "Calendars"), also a job another
# transaction is giving a version at that moment: the apply of another
# calendar the job names does, with the stored copy of this one.  The
# calendar's apply waits for the job's row, then must see the version
# the other committed and follow it, not pass the job over.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - a calendar change moves every job that names it, also one given a version concurrently: no job keeps planning against a calendar's old rules"
t0=$SECONDS

fresh_db it_calendar_followers
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
cal() { printf 'calendars:\n  - name: office\n    timezone: UTC\n    exclude:\n      windows: ["%s"]\n' "$1"; }
{
	cal "01:00:00-02:00:00"
	printf 'jobs:\n  - {id: cf.y, schedule: {cron: "0 * * * * ?", calendar: office}, target: {url: "http://127.0.0.1:9/x"}}\n'
} >"$PALISADE_TEST_TMP/v1.yaml"
cal "03:00:00-04:00:00" >"$PALISADE_TEST_TMP/office2.yaml"
expect_exit "apply cf.y and office v1" 0 "$PAL" apply "$PALISADE_TEST_TMP/v1.yaml"

# The other transaction: cf.y v2, a copy of v1 (office v1 inside), written
# under the job row's lock as apply writes it, committed 2 s later.
cols=$(sql "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns
	    WHERE table_name = 'job_versions' AND is_generated = 'NEVER'")
sel=$(tr ',' '\n' <<<"$cols" | sed -e 's/^version$/2/' -e 's/^digest$/md5(digest)/' \
	-e 's/^\(effective_from\|activated_at\|activated_epoch\)$/NULL/' | paste -sd,)
psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT 1 FROM jobs WHERE job_id = 'cf.y' FOR UPDATE" \
	-c "INSERT INTO job_versions ($cols) SELECT $sel FROM job_versions WHERE job_id = 'cf.y' AND version = 1" \
	-c "UPDATE jobs SET latest_version = 2 WHERE job_id = 'cf.y'" -c "SELECT pg_sleep(2)" -c "COMMIT" \
	>"$PALISADE_TEST_TMP/other.out" 2>&1 &
other=$!
wait_until "the other transaction holds cf.y" 10 bash -c \
	"[ \"\$(psql \"\$PALISADE_PG\" -XAtq -c \"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(2)%'\")\" = 1 ]"
expect_exit "office v2 applied on its own meanwhile" 0 "$PAL" apply "$PALISADE_TEST_TMP/office2.yaml"
expect_match "cf.y follows it" 'updated +cf\.y v3 \(follows a calendar it names\)' "$OUT"
wait "$other"
expect_eq "the other transaction committed cf.y v2" "" "$(grep -v '^1$\|^$' "$PALISADE_TEST_TMP/other.out")"
expect_eq "cf.y's latest version carries office v2" "3 2" \
	"$(sql "SELECT j.latest_version || ' ' || (e->>'version') FROM jobs j JOIN job_versions v
		ON v.job_id = j.job_id AND v.version = j.latest_version,
		jsonb_array_elements(v.spec #> '{schedule,calendars}') e WHERE j.job_id = 'cf.y'")"

echo "  ($((SECONDS - t0)) s)"
finish
