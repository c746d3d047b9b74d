#!/usr/bin/env bash
# The job reference (041): every trigger row carries its job's jobs.ref in
# job_ref, whoever wrote it.  Rows of before the migration get it from the
# backfill, in bounded batches that resume where a stopped run left them;
# rows a 0.2.0 node inserts (job_id only) from the fill trigger; rows of
# this release's writers (the controller's planning, a manual run, an
# operator backfill) from the writer itself, which the test shows with the
# fill trigger disabled.  docs/upgrades.md, "The job reference during a
# roll from 0.2.0".
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G2 - an expand step adds the integer job reference without a rewrite: every trigger row gets its job's ref (old rows by a resumable batched backfill, a 0.2.0 writer's rows by the fill trigger, this release's rows by their writer), and nothing else about the rows changes"
T0=$SECONDS

fresh_db it_job_ref
expect_exit "migrate --to 40 (the schema before the job reference)" 0 "$PAL" migrate --to 40
# What a cluster of 0.2.0 left: 250 jobs, 1,000 trigger rows.
sql "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version)
     SELECT 'old.j' || g, 'default', 'default', g % 4, 1 FROM generate_series(1, 250) g"
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'old.j' || (g % 250 + 1), 1, t, 0, 'schedule', 'default', 'default', t, (g % 250 + 1) % 4
     FROM (SELECT g, timestamptz '2020-01-01' + g * interval '1 minute' AS t FROM generate_series(1, 1000) g) x"
before=$(sql "SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM (SELECT id, job_id, version, scheduled_at, partition, state, due_at, updated_at FROM triggers) t")

# 041 alone (no backfill): catalog changes only, no index built in its
# transaction (a build would read jobs under its ACCESS EXCLUSIVE lock).
expect_exit "migrate applies 041 without the backfill" 0 "$PAL" migrate --backfill-batches 0
ref_indexes() { sql "SELECT coalesce(string_agg(i.indexrelid::regclass::text || ' ' || i.indisunique::text::char || i.indisvalid::text::char, ','), '')
                     FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
                     WHERE i.indrelid = 'jobs'::regclass AND a.attname = 'ref'"; }
expect_eq "041 builds no index on jobs.ref" "" "$(ref_indexes)"

# A transaction of another database on the same server, begun before the
# jobs step ends and open until the backfill has finished: transaction ids
# are the server's, and the fence waits only for this database's sessions.
"$PSQL" "$PALISADE_PG_ADMIN dbname=postgres" -XAtq -c "BEGIN" -c "SELECT txid_current()" \
	-c "SELECT pg_sleep(60)" -c "COMMIT" >/dev/null 2>&1 &
other_db=$!
other_open() { [ "$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' AND query = 'SELECT pg_sleep(60)' AND backend_xid IS NOT NULL")" = 1 ]; }
wait_until "a transaction of another database is open" 10 other_open

# A run stopped after 5 batches of 100: the jobs (3 batches: 100, 100, 50)
# and 200 trigger rows.
expect_exit "migrate stops the backfill after 5 batches" 0 \
	"$PAL" migrate --backfill-batch 100 --backfill-batches 5
echo "$OUT" | sed 's/^/    | /'
expect_match "the jobs step: 250 rows in 3 batches, finished" \
	"backfill jobs.ref: 250 rows in 3 batches of up to 100, finished" "$OUT"
expect_match "the triggers step: 200 rows in 2 batches, stopped" \
	"backfill triggers.job_ref: 200 rows in 2 batches of up to 100, stopped" "$OUT"
expect_match "and says the backfill is not finished" "backfill not finished" "$OUT"
expect_eq "the run built jobs_ref, unique and valid, once the jobs step finished" "jobs_ref tt" "$(ref_indexes)"
expect_eq "every job has a ref, each its own" "250 250" "$(sql "SELECT count(ref) || ' ' || count(DISTINCT ref) FROM jobs")"
expect_eq "800 trigger rows still wait for theirs" 800 "$(sql "SELECT count(*) FROM triggers WHERE job_ref IS NULL")"
cursor=$(sql "SELECT cursor FROM palisade_backfills WHERE step = 'triggers.job_ref'")
expect_eq "the triggers step keeps its cursor: the 200th id" \
	"$(sql "SELECT id FROM triggers ORDER BY id OFFSET 199 LIMIT 1")" "$cursor"

# A 0.2.0 apply and a 0.2.0 controller insert as they always did.
sql "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version) VALUES ('old.new', 'default', 'default', 1, 1)"
expect_eq "a job inserted without a ref gets the next one (the default)" 251 "$(sql "SELECT ref FROM jobs WHERE job_id = 'old.new'")"
old_id=$(sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     VALUES ('old.j7', 1, '2021-01-01', 0, 'schedule', 'default', 'default', '2021-01-01', 3) RETURNING id")
expect_eq "a trigger inserted with job_id only gets its job's ref (the fill trigger)" \
	"$(sql "SELECT ref FROM jobs WHERE job_id = 'old.j7'")" "$(sql "SELECT job_ref FROM triggers WHERE id = $old_id")"

# A row whose job does not exist (nothing deletes a job: a hand-made row)
# can get no ref; the backfill must finish all the same.
ghost_id=$(sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     VALUES ('no.such.job', 1, '2021-01-01', 0, 'schedule', 'default', 'default', '2021-01-01', 0) RETURNING id")

# The next run resumes at the cursor: 802 rows after it (the 800 left and
# the two just inserted), 9 batches of up to 100 (from the start: 11).
expect_exit "a second migrate finishes the backfill" 0 timeout 60 "$PAL" migrate --backfill-batch 100
echo "$OUT" | sed 's/^/    | /'
expect_match "from where the first stopped: 800 rows in 9 batches" \
	"backfill triggers.job_ref: 800 rows in 9 batches of up to 100, finished" "$OUT"
expect_eq "no trigger row lacks job_ref but the one without a job" "$ghost_id" "$(sql "SELECT string_agg(id::text, ' ') FROM triggers WHERE job_ref IS NULL")"
sql "DELETE FROM triggers WHERE id = $ghost_id"
expect_eq "and each is its job's ref" 0 \
	"$(sql "SELECT count(*) FROM triggers t JOIN jobs j USING (job_id) WHERE t.job_ref IS DISTINCT FROM j.ref")"
expect_eq "the steps record their batches and rows" "jobs.ref 250 3 t|triggers.job_ref 1000 11 t" \
	"$(sql "SELECT string_agg(step || ' ' || filled || ' ' || batches || ' ' || (finished_at IS NOT NULL)::text::char, '|' ORDER BY ord) FROM palisade_backfills")"
expect_eq "... while the other database's transaction was still open" 1 \
	"$(sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' AND query = 'SELECT pg_sleep(60)'")"
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'postgres' AND query = 'SELECT pg_sleep(60)'" >/dev/null
wait "$other_db" 2>/dev/null
expect_eq "the backfill changed nothing else of the rows (updated_at included)" "$before" \
	"$(sql "SELECT md5(string_agg(t::text, ',' ORDER BY id)) FROM (SELECT id, job_id, version, scheduled_at, partition, state, due_at, updated_at FROM triggers WHERE id < $old_id) t")"
expect_exit "a third migrate has nothing left to fill" 0 "$PAL" migrate
if grep -q backfill <<<"$OUT"; then fail "a finished backfill runs no batch: $OUT"; else pass "a finished backfill runs no batch"; fi

# This release's writers set job_ref themselves: with the fill trigger
# disabled, a row without it stays NULL, and theirs still carry it.
sql "ALTER TABLE triggers DISABLE TRIGGER triggers_job_ref"
nul_id=$(sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     VALUES ('old.j8', 1, '2021-01-01', 0, 'schedule', 'default', 'default', '2021-01-01', 0) RETURNING id")
expect_eq "with the fill trigger disabled a job_id-only row stays without a ref" "" \
	"$(sql "SELECT job_ref FROM triggers WHERE id = $nul_id")"
sql "DELETE FROM triggers WHERE id = $nul_id"
SHARDS=2 write_conf "$CLUSTER_CONF" "retention: {delete_slice: 300}"
SHARDS=2
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: new.a, partitions: 2, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: new.b, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply two jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_eq "apply's jobs get refs after every other" "252 253" "$(sql "SELECT string_agg(ref::text, ' ' ORDER BY ref) FROM jobs WHERE job_id LIKE 'new.%'")"
# A node's retention round runs the backfill as well: the old rows' refs
# taken away and the step reopened, the node's first round fills them
# again, in batches of retention.delete_slice (300).
sql "UPDATE triggers SET job_ref = NULL WHERE job_id LIKE 'old.%'"
sql "UPDATE palisade_backfills SET cursor = '0', finished_at = NULL WHERE step = 'triggers.job_ref'"
start_node c1
planned() { [ "$(sql "SELECT count(*) FROM triggers WHERE job_id = 'new.a'")" -ge 6 ]; }
wait_until "the controller plans new.a" 20 planned
refilled() { [ "$(sql "SELECT count(*) FROM palisade_backfills WHERE finished_at IS NULL")" = 0 ]; }
wait_until "the node's retention round finishes the reopened backfill" 20 refilled
stop_node c1
expect_match "and logs it: 1,001 rows in 4 batches, finished" \
	'"event":"retention.backfill","step":"triggers.job_ref","filled":1001,"batches":4,.*"finished":true' \
	"$(grep retention.backfill "$NODE_DIR/c1.log")"
expect_exit "a manual run" 0 "$PAL" trigger --job new.b --reason "job ref"
expect_exit "an operator backfill" 0 "$PAL" backfill --job new.a --from 2021-01-01T00:00:00Z --to 2021-01-01T00:00:02Z --reason "job ref"
sql "ALTER TABLE triggers ENABLE TRIGGER triggers_job_ref"
expect_eq "the planning, manual and backfill rows each carry their job's ref" "0" \
	"$(sql "SELECT count(*) FROM triggers t JOIN jobs j USING (job_id) WHERE j.job_id LIKE 'new.%' AND t.job_ref IS DISTINCT FROM j.ref")"
expect_eq "of each source" "backfill manual schedule" \
	"$(sql "SELECT string_agg(DISTINCT source, ' ' ORDER BY source) FROM triggers WHERE job_id LIKE 'new.%' AND job_ref IS NOT NULL")"
expect_eq "no trigger row lacks job_ref" 0 "$(sql "SELECT count(*) FROM triggers WHERE job_ref IS NULL")"
# trigger_jobs: each row with its job's id and group read through job_ref,
# every column of triggers beside them (a column added to triggers and not
# to the view fails here).
expect_eq "trigger_jobs names each row's job and group as the row does" "$(sql "SELECT count(*) FROM triggers") 0" \
	"$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE v.job_id IS DISTINCT FROM t.job_id OR v.resource_group IS DISTINCT FROM t.resource_group)
	        FROM triggers t JOIN trigger_jobs v USING (id, scheduled_at)")"
cols() { sql "SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped AND attname NOT IN ('job_id', 'resource_group')"; }
expect_eq "and every other column of triggers" "$(cols triggers)" "$(cols trigger_jobs)"
sql "UPDATE jobs SET resource_group = 'moved' WHERE job_id = 'new.b'"
expect_eq "a job moved to another group shows its triggers in it" "moved" \
	"$(sql "SELECT string_agg(DISTINCT resource_group, ' ') FROM trigger_jobs WHERE job_id = 'new.b'")"
sql "UPDATE jobs SET resource_group = 'default' WHERE job_id = 'new.b'"

# The fence: a 0.2.0 writer whose fill trigger ran before its job had a
# ref, and whose transaction commits after the backfill's walk, must not
# leave the step finished over its row.  old.j9's ref taken away and the
# steps reopened; a session inserts a job_id-only row for it (the fill
# trigger finds no ref) and holds its transaction open across a migrate.
# reopen: both steps start again from the beginning.
reopen() { sql "UPDATE palisade_backfills SET cursor = CASE step WHEN 'jobs.ref' THEN '' ELSE '0' END, finished_at = NULL"; }
# session NAME: a psql session fed through a fifo, its pid in S_PID, the
# fifo's write end in fd S_FD (closing it ends the session), its output
# in $PALISADE_TEST_TMP/NAME.out.
session() {
	mkfifo "$PALISADE_TEST_TMP/$1.fifo"
	"$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 <"$PALISADE_TEST_TMP/$1.fifo" >"$PALISADE_TEST_TMP/$1.out" 2>&1 &
	S_PID=$!
	exec {S_FD}>"$PALISADE_TEST_TMP/$1.fifo"
}
sql "UPDATE jobs SET ref = NULL WHERE job_id = 'old.j9'"
reopen
session tx
txpid=$S_PID txfd=$S_FD
echo "BEGIN; INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
      VALUES ('old.j9', 1, '2022-01-01', 0, 'schedule', 'default', 'default', '2022-01-01', 1) RETURNING 'held ' || id;" >&"$txfd"
wait_until "a 0.2.0-style insert is open, its row without a ref" 10 grep -q held "$PALISADE_TEST_TMP/tx.out"
held_id=$(sed -n 's/^held //p' "$PALISADE_TEST_TMP/tx.out")
expect_exit "a migrate runs the backfill while it is open" 0 "$PAL" migrate
echo "$OUT" | sed 's/^/    | /'
expect_match "and says the triggers step waits for transactions older than the jobs step's end" \
	"its check waits for transactions older than the jobs step.s end" "$OUT"
expect_eq "the triggers step is not finished" "jobs.ref t|triggers.job_ref f" \
	"$(sql "SELECT string_agg(step || ' ' || (finished_at IS NOT NULL)::text::char, '|' ORDER BY ord) FROM palisade_backfills")"
echo "COMMIT;" >&"$txfd"
exec {txfd}>&-
wait "$txpid"
expect_eq "the row commits without a ref" "" "$(sql "SELECT job_ref FROM triggers WHERE id = $held_id")"
expect_exit "the next migrate finishes the backfill" 0 "$PAL" migrate
echo "$OUT" | sed 's/^/    | /'
expect_eq "and the row has its job's ref" "$(sql "SELECT ref FROM jobs WHERE job_id = 'old.j9'")" \
	"$(sql "SELECT job_ref FROM triggers WHERE id = $held_id")"
expect_eq "both steps finished" 0 "$(sql "SELECT count(*) FROM palisade_backfills WHERE finished_at IS NULL")"
# The transactions the check waits for are usually those in flight when the
# jobs step finished, which end within milliseconds: a run asks again every
# 100 ms (migrate for up to 3 s, a node's round within its 2 s) rather than
# stopping at the first look.  A transaction with an xid open across the
# jobs step, committed 1 s into the migrate: the same migrate finishes.
reopen
session tx2
tx2pid=$S_PID tx2fd=$S_FD
echo "BEGIN; SELECT 'xid ' || txid_current();" >&"$tx2fd"
wait_until "a transaction with an xid is open" 10 grep -q xid "$PALISADE_TEST_TMP/tx2.out"
"$PAL" migrate >"$PALISADE_TEST_TMP/migrate-wait.out" 2>&1 &
mpid=$!
sleep 1
echo "COMMIT;" >&"$tx2fd"
exec {tx2fd}>&-
wait "$tx2pid"
wait "$mpid"
expect_eq "a migrate whose check waited for it exits 0" 0 "$?"
sed 's/^/    | /' "$PALISADE_TEST_TMP/migrate-wait.out"
if grep -q "not finished" "$PALISADE_TEST_TMP/migrate-wait.out"; then
	fail "and finishes the backfill once it committed"
else
	pass "and finishes the backfill once it committed"
fi
expect_eq "both steps finished again" 0 "$(sql "SELECT count(*) FROM palisade_backfills WHERE finished_at IS NULL")"
# A step's check of its whole table is a call of its own, after the walk's
# last batch committed (it holds none of the batch's row locks): walk,
# check, walk, check.
reopen
calls=""
for _ in 1 2 3 4; do
	calls="$calls$(sql "SELECT step || ' ' || CASE WHEN checked THEN 'check' ELSE 'walk' END || ' ' || finished::text::char FROM palisade_backfill(5000)")|"
done
expect_eq "each step: a walk of one batch, then a check that finishes it" \
	"jobs.ref walk f|jobs.ref check t|triggers.job_ref walk f|triggers.job_ref check t|" "$calls"
expect_exit "a batch above 5,000 rows is refused" 64 "$PAL" migrate --backfill-batch 5001
expect_match "with the range" "want a count from 1 to 5000" "$OUT"

# A controller that loaded its jobs before the backfill gave them refs
# takes the refs at its next reload (no restart), so that its rows stop
# going through the fill trigger: new.a's ref taken away and the backfill
# reopened, the node loads new.a without a ref while a session holds the
# backfill's lock (its rounds find it busy); then the backfill finishes,
# the fill trigger is disabled and a reload (SIGHUP: the 30 s reload's
# path, sooner) must be enough for new rows to carry the ref.
a_ref=$(sql "SELECT ref FROM jobs WHERE job_id = 'new.a'")
sql "UPDATE jobs SET ref = NULL WHERE job_id = 'new.a'"
reopen
session lock
lockpid=$S_PID lockfd=$S_FD
echo "SELECT pg_advisory_lock(7076, 41); SELECT 'held';" >&"$lockfd"
wait_until "a session holds the backfill's lock" 10 grep -q held "$PALISADE_TEST_TMP/lock.out"
from_id=$(sql "SELECT coalesce(max(id), 0) FROM triggers")
start_node c1 {lockfd}>&- # the node must not keep the session's input open
planned_noref() { has "SELECT count(*) FROM triggers WHERE job_id = 'new.a' AND id > $from_id AND job_ref IS NULL"; }
wait_until "the node plans new.a while the job has no ref" 20 planned_noref
exec {lockfd}>&-
wait "$lockpid"
expect_exit "the backfill runs once the lock is let go" 0 "$PAL" migrate
expect_eq "and gives new.a a new ref" 1 "$(sql "SELECT count(*) FROM jobs WHERE job_id = 'new.a' AND ref > $a_ref")"
sql "ALTER TABLE triggers DISABLE TRIGGER triggers_job_ref"
kill -HUP "${NODE_PID[c1]}"
from_id=$(sql "SELECT coalesce(max(id), 0) FROM triggers")
planned_ref() { has "SELECT count(*) FROM triggers WHERE job_id = 'new.a' AND id > $from_id AND job_ref IS NOT NULL"; }
wait_until "after a reload, with the fill trigger off, new.a's new rows carry its ref" 10 planned_ref
sleep 2
from_id=$(sql "SELECT min(id) FROM triggers WHERE job_id = 'new.a' AND id > $from_id AND job_ref IS NOT NULL")
expect_eq "every row planned since the first with it carries it" "0 $(sql "SELECT ref FROM jobs WHERE job_id = 'new.a'")" \
	"$(sql "SELECT count(*) FILTER (WHERE job_ref IS NULL) || ' ' || coalesce(max(job_ref), 0) FROM triggers WHERE job_id = 'new.a' AND id >= $from_id")"
stop_node c1
sql "ALTER TABLE triggers ENABLE TRIGGER triggers_job_ref"

# A round's batch is retention.delete_slice rows but at most 5,000: with a
# slice of 100,000 the node's round fills the reopened steps in batches of
# 5,000 (a batch holds its rows' locks until it commits).
reopen
SHARDS=2 write_conf "$CLUSTER_CONF" "retention: {delete_slice: 100000}"
: >"$NODE_DIR/c1.log"
start_node c1
wait_until "the node's round finishes the reopened backfill" 20 refilled
stop_node c1
expect_match "in batches of 5,000" '"event":"retention.backfill","step":"triggers.job_ref",.*"batch":5000,' \
	"$(grep retention.backfill "$NODE_DIR/c1.log")"

echo "  figure: test took $((SECONDS - T0)) s"
finish
