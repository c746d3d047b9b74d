#!/usr/bin/env bash
# A claim's cost must not grow with the triggers already finished that day.
# The partition of the current range holds every trigger of its day, the
# finished ones first; a claim that read it sequentially (the forbid-skips
# of migrations 005-014 did, through their generic plan, whether or not a
# job was `forbid`) read every one of them on every call.  This test fills
# today's partition with finished triggers behind a small pending backlog,
# calls palisade_claim() as an executor does (generic plans: the same
# session, several calls) and counts the sequential scans PostgreSQL records
# on that partition (pg_stat_user_tables.seq_scan): none may happen.  Then
# the same with a `forbid` job that has a live run, whose pending instants
# must still be skipped (and recorded as misfires) without such a scan.
source tests/integration/lib.sh
guarantee "performance - a claim reads the current partition through its indexes only: no sequential scan of the triggers finished so far, also with a forbid job live; forbid instants are still skipped"

fresh_db it_claim_scans
"$PAL" migrate >/dev/null
cat >"$NODE_DIR/jobs.yaml" <<'YAML'
jobs:
  - {id: scan.allow, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/a"}}
YAML
printf 'node: {roles: [executor]}\ncluster: {shards: 4}\n' >"$NODE_DIR/node.yaml"
expect_exit "apply a job (overlap: allow; no job is forbid yet)" 0 "$PAL" apply --config "$NODE_DIR/node.yaml" "$NODE_DIR/jobs.yaml"
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"
# A backlog of 45,000 pending triggers of today (a cluster catching up; the
# instants are microseconds apart, all in today's range), analysed; then the
# first 30,000 finish, as the day goes on between two analyses (the
# statistics still say "mostly pending", which is what made the old plan
# choose a sequential scan).
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'scan.allow', 1, t, 0, 'schedule', 'default', 'default', t, 0
     FROM (SELECT date_trunc('day', now()) + g * interval '1 microsecond' AS t
           FROM generate_series(1, 45000) g) x"
sql "ANALYZE triggers"
sql "UPDATE triggers SET state = 'running', fence = nextval('palisade_fence'), lease_owner = 'old',
       lease_until = now(), attempt_count = 1
     WHERE id IN (SELECT id FROM triggers ORDER BY scheduled_at LIMIT 30000)"
sql "UPDATE triggers SET state = 'succeeded', finished_at = now(), lease_owner = NULL, lease_until = NULL
     WHERE state = 'running'"
sql "VACUUM triggers"
PART=$(sql "SELECT triggers_part FROM palisade_partitions WHERE now() >= range_from AND now() < range_to")
echo "    figure: today's partition $PART holds $(sql "select count(*) from $PART") triggers"
claims() { # N LIMIT -> rows claimed, in one session (the executor's plans are per connection)
	local i q=""
	for i in $(seq 1 "$1"); do
		q="$q SELECT count(*) FROM palisade_claim('scan-node', 30000, $2, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}') WHERE id IS NOT NULL;"
	done
	sql_run "$q" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "SET jit = off" -c "$q" |
		awk '{s += $1} END {print s + 0}'
}
s0=$(seq_scans "$PART")
n=$(claims 6 50)
s1=$(seq_scans "$PART")
expect_eq "six claims of 50 take 300 pending triggers" 300 "$n"
expect_eq "no sequential scan of today's partition (30,000 finished triggers) by the claims" 0 "$((s1 - s0))"

# A forbid job with a live run and two due instants: both are skipped.
cat >>"$NODE_DIR/jobs.yaml" <<'YAML'
  - {id: scan.forbid, overlap: forbid, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/f"}}
YAML
expect_exit "apply a forbid job beside it" 0 "$PAL" apply --config "$NODE_DIR/node.yaml" "$NODE_DIR/jobs.yaml"
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0 WHERE activated_at IS NULL"
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       due_at, shard, state, fence, lease_owner, lease_until, attempt_count)
     VALUES ('scan.forbid', 1, now() - interval '3 seconds', 0, 'schedule', 'default', 'default',
       now() - interval '3 seconds', 0, 'running', nextval('palisade_fence'), 'other-node',
       now() + interval '30 seconds', 1)"
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
     SELECT 'scan.forbid', 1, now() - g * interval '1 second', 0, 'schedule', 'default', 'default',
       now() - g * interval '1 second', 0 FROM generate_series(1, 2) g"
s0=$(seq_scans "$PART")
claims 2 50 >/dev/null
s1=$(seq_scans "$PART")
expect_eq "the forbid job's two due instants are skipped while its run is live" 2 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'scan.forbid' and state = 'skipped' and last_error_class = 'overlap'")"
expect_eq "... and recorded as misfires (forbid, overlap)" 2 \
	"$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'scan.forbid' and policy = 'forbid' and reason = 'overlap'")"
expect_eq "no sequential scan of today's partition with a forbid job live" 0 "$((s1 - s0))"
finish
