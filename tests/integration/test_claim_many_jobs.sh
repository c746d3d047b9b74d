#!/usr/bin/env bash
# A claim's cost does not grow with the number of registered jobs.  The
# claim read its candidates joined with job_versions; its generic plan (the
# candidate side estimated at one row) could read every job version once
# into a Materialize and test each candidate against all of them: in the
# bench's soak (5,000 jobs every second) 1.3 million rows removed by the
# join filter per claim of 512, 116 ms.  And its expired-lease candidates
# were found by `lease_until < clock_timestamp()`, no index condition, so
# every claim read the lease index entry of every running trigger.
# Migration 022 looks each candidate's version up by key and tests the
# lease against statement_timestamp().
#
# This test registers 3,000 jobs with one due trigger each and claims 256 at
# a time, four times in one session (as the executor does, its plans
# cached), then counts what the claims read (pg_stat_user_tables and
# pg_stat_user_indexes): job_versions rows, and entries of the lease index.
# Without 022 the lease entries read are 1,536 (0, 256, 512 and 768 running
# triggers); the versions read are 1,028 here too: this setup's estimates
# give the old statement its index plan, the soak's gave it the Materialize
# (the version check guards the bound whatever the estimates).
source tests/integration/lib.sh
guarantee "performance - a claim reads one job version per candidate and no lease that has not expired, however many jobs are registered"

JOBS=3000
fresh_db it_claim_many
"$PAL" migrate >/dev/null
f=$PALISADE_TEST_TMP/many-jobs.yaml
{
	echo "jobs:"
	for i in $(seq 1 $JOBS); do
		echo "  - {id: many.job-$i, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:9/effects/m\"}}"
	done
} >"$f"
expect_exit "apply $JOBS jobs" 0 "$PAL" apply "$f"
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"
PART=$(sql "SELECT triggers_part FROM palisade_partitions WHERE now() >= range_from AND now() < range_to")
# one due trigger per job, in the last minute
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT j.job_id, 1, t, 0, 'schedule', 'default', 'default', t, 0
     FROM (SELECT job_id, greatest(date_trunc('day', now()), now() - interval '1 minute')
             + row_number() OVER (ORDER BY job_id) * interval '1 millisecond' AS t FROM jobs) j" >/dev/null
sql "ANALYZE" >/dev/null
LEASE_IDX=$(sql "SELECT indexrelid::regclass FROM pg_index WHERE indrelid = '$PART'::regclass
                 AND pg_get_indexdef(indexrelid) LIKE '%(lease_until)%'")
claim="SELECT 'claimed', count(*) FROM palisade_claim('many-node', 30000, 256, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}') WHERE id IS NOT NULL;"
flush="SELECT pg_stat_force_next_flush()"
reads="SELECT 'reads', (SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables
         WHERE relname = 'job_versions'), (SELECT idx_tup_read FROM pg_stat_user_indexes
         WHERE indexrelid = '$LEASE_IDX'::regclass)"
out=$(sql_run "$claim" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -F ' ' -c "SET jit = off" -c "$flush" -c "$reads" \
	-c "$claim" -c "$claim" -c "$claim" -c "$claim" -c "$flush" -c "$reads")
echo "    figure: $(echo $out)"
read -r v0 l0 v1 l1 <<<"$(awk '$1 == "reads" {printf "%s %s ", $2, $3}' <<<"$out")"
expect_eq "four claims of 256 take 1,024 triggers of 1,024 jobs" 1024 "$(awk '$1 == "claimed" {s += $2} END {print s}' <<<"$out")"
echo "    figure: job_versions rows read $((v1 - v0)), lease index entries read $((l1 - l0))"
check "the claims read at most 2 job versions per claimed trigger (not the $JOBS of every job)" \
	test $((v1 - v0)) -le 2048
check "the claims read no entry of the lease index (no lease has expired)" test $((l1 - l0)) -eq 0
finish
