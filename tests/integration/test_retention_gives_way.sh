#!/usr/bin/env bash
# Retention's DDL gives way to the readers and writers it meets: it waits
# less than PostgreSQL's deadlock_timeout for a lock, so that when it
# deadlocks with a transaction (a console page or a claim that holds one of
# the tables it locks and then wants another it holds), retention is the
# one that gives up (and tries again next round), not the page or claim.
# The reader here holds attempt_responses, waits until retention (which
# has triggers and attempts already) waits for it, then asks for triggers,
# with a deadlock_timeout of 800 ms: a retention that waited 1 s for its
# lock let the reader's deadlock check fire first and fail the reader.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "retention's DDL waits less than deadlock_timeout for a lock: in a deadlock with a reader, retention gives way and the reader goes on"
T0=$(date +%s)

fresh_db it_ret_way
expect_exit "migrate" 0 "$PAL" migrate
"$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 >"$PALISADE_TEST_TMP/reader.out" 2>&1 <<'SQL' &
SET deadlock_timeout = '800ms';
BEGIN;
LOCK TABLE attempt_responses IN ACCESS SHARE MODE;
DO $$ BEGIN
	FOR i IN 1..1000 LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE database = (select oid from pg_database where datname = current_database()) AND NOT granted
			AND relation = 'attempt_responses'::regclass);
		PERFORM pg_sleep(0.01);
	END LOOP;
END $$;
SELECT count(*) FROM triggers;
COMMIT;
SELECT 'reader done';
SQL
reader=$!
# The round must start once the reader holds its lock: a round that ran
# first would take what it needs of attempt_responses before the reader
# and meet nobody.
reader_locked() { has "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE a.datname = current_database() AND l.granted AND l.relation = 'attempt_responses'::regclass"; }
wait_until "the reader holds attempt_responses" 20 reader_locked
# work for the round: ranges to create 3 days ahead
expect_exit "a retention round meets the reader" 0 "$PAL" retention --interval 1h --ahead 3d --keep 30d
wait "$reader"
expect_eq "the reader was not chosen as a deadlock's victim and finished" "reader done" \
	"$(grep -v '^[0-9]*$' "$PALISADE_TEST_TMP/reader.out" | grep -v '^SET\|^BEGIN\|^COMMIT\|^LOCK\|^DO' | tail -1)"
expect_match "retention said it was busy" "^busy" "$OUT"
expect_exit "the next round does the work" 0 "$PAL" retention --interval 1h --ahead 3d --keep 30d
expect_match "and creates the ranges" "^created triggers_p" "$OUT"
echo "    figure: took $(($(date +%s) - T0)) s"
finish
