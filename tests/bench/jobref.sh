#!/usr/bin/env bash
# tests/bench/jobref.sh - what migration 041 (the job reference) and its
# backfill cost on a database of N jobs and N trigger rows, on a dev cluster
# of its own (devlib.sh).  Run from the checkout after make:
#
#   bash tests/bench/jobref.sh            # N = 1,000,000 (BENCH_JOBREF_N)
#
# Steps: migrate --to 40; N jobs and N trigger rows as 0.2.0 leaves them
# (one version each, one trigger per job, in the past); then
#   - 041 alone (`migrate --to 41`: the columns, the sequence, the
#     backfill table; no backfill): its wall time, which bounds how long it
#     holds jobs and triggers under ACCESS EXCLUSIVE (the migration is one
#     transaction of catalog changes);
#   - the backfill (`migrate`, batches of 5,000): wall time, rows/s, the
#     WAL it wrote (pg_current_wal_lsn before and after), how many of the
#     jobs updates were HOT (pg_stat_user_tables.n_tup_hot_upd), and the
#     CONCURRENTLY build of jobs_ref that follows the jobs step;
#   - the fill trigger: INSERTs of BENCH_JOBREF_ROWS (100,000) trigger rows
#     in one statement, job_id only (a 0.2.0 writer: the trigger looks the
#     ref up) against the same with job_ref set (this release: the
#     trigger's WHEN is false), alternated three times; rows/s of each.
# Prints one "figure:" line per measure.
set -euo pipefail
N=${BENCH_JOBREF_N:-1000000}
source tests/bench/devlib.sh
PAL=${PALISADE_BIN:-$PWD/bin}/palisade
dev_cluster_up jobref
"$PAL" migrate --to 40 >/dev/null
sql "INSERT INTO jobs (job_id, tenant, resource_group, shard, latest_version)
     SELECT 'bench.j' || g, 'default', 'default', g % 16, 1 FROM generate_series(1, $N) g"
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'bench.j' || g, 1, t, 0, 'schedule', 'default', 'default', t, g % 16
     FROM (SELECT g, timestamptz '2020-01-01' + g * interval '1 second' AS t FROM generate_series(1, $N) g) x"
sql "VACUUM ANALYZE jobs" >/dev/null
sql "VACUUM ANALYZE triggers" >/dev/null
t0=$(ms)
"$PAL" migrate --to 41 >/dev/null
t1=$(ms)
echo "figure: 041 on $N jobs and $N trigger rows: $((t1 - t0)) ms (migrate --to 41, wall time)"
"$PAL" migrate --backfill-batches 0 >/dev/null # the function set (041's trigger and backfill)
lsn0=$(sql "SELECT pg_current_wal_lsn()")
hot0=$(sql "SELECT pg_stat_force_next_flush(); SELECT n_tup_hot_upd || ' ' || n_tup_upd FROM pg_stat_user_tables WHERE relname = 'jobs'" | tail -1)
t0=$(ms)
"$PAL" migrate --backfill-batch 5000 2>&1 | grep -v '^{' | sed 's/^/    | /'
t1=$(ms)
sleep 1
hot1=$(sql "SELECT pg_stat_force_next_flush(); SELECT n_tup_hot_upd || ' ' || n_tup_upd FROM pg_stat_user_tables WHERE relname = 'jobs'" | tail -1)
wal=$(sql "SELECT pg_current_wal_lsn() - '$lsn0'::pg_lsn")
echo "figure: backfill of $N jobs and $N trigger rows (and the jobs_ref build): $((t1 - t0)) ms, $((2 * N * 1000 / (t1 - t0 + 1))) rows/s"
echo "figure: WAL $((wal / 1024 / 1024)) MiB ($((wal / (2 * N))) B per row)"
echo "figure: jobs updates HOT: $((${hot1% *} - ${hot0% *})) of $((${hot1#* } - ${hot0#* }))"
echo "figure: jobs_ref valid: $(sql "SELECT indisvalid FROM pg_index WHERE indexrelid = 'jobs_ref'::regclass")"
M=${BENCH_JOBREF_ROWS:-100000}
ins() { # $1: run number, $2: the job_ref expression
	local t0 t1
	t0=$(ms)
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard, job_ref)
	     SELECT 'bench.j' || g, 1, t, 0, 'schedule', 'default', 'default', t, g % 16, $2
	     FROM (SELECT g, timestamptz '2021-01-01' + ($1 * $M + g) * interval '1 second' AS t FROM generate_series(1, $M) g) x"
	t1=$(ms)
	echo $((M * 1000 / (t1 - t0 + 1)))
}
old="" new=""
for i in 1 2 3; do
	old="$old $(ins $((2 * i)) NULL)"
	new="$new $(ins $((2 * i + 1)) 1)"
done
echo "figure: insert of $M rows, job_id only (the fill trigger):$old rows/s"
echo "figure: insert of $M rows, job_ref set (WHEN false):$new rows/s"
