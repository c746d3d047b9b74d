#!/usr/bin/env bash
# A trigger row that 0.2.0 wrote before 041 has no job_ref until the
# backfill reaches it (docs/upgrades.md, "The job reference during a roll
# from 0.2.0"), and this release's nodes run beside such rows: its readers
# find a trigger's job by the row's job_id, never by job_ref alone.  Here
# the rows have no job_ref (the fill trigger off, as before 041): the
# dependency planning plans the dependent's instants after its upstream's
# succeeded ones (a read by job_ref would find none and move the
# dependent's watermark past them: its instants lost for good, also once
# the backfill filled the rows), and the claim's overlap check sees a
# forbid job's live run (a read by job_ref would miss it).
source tests/integration/lib.sh
guarantee "G1, overlap: rows without job_ref (before the backfill reached them) are read like any other: the dependency planning plans after them and the claim's forbid check sees their live runs"
t0=$SECONDS

fresh_db it_job_ref_unfilled
"$PAL" migrate >/dev/null 2>&1 || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/job_ref_unfilled.yaml
cat >"$f" <<'YAML'
jobs:
  - {id: uf.up, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/u"}}
  - {id: uf.dep, after: [{job: uf.up}], target: {url: "http://127.0.0.1:9/d"}}
  - {id: uf.solo, overlap: forbid, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/s"}}
YAML
"$PAL" apply "$f" >/dev/null 2>&1 || { echo "  apply failed"; exit 1; }
sql "UPDATE job_versions SET effective_from = now() - interval '1 hour', activated_at = now(), activated_epoch = 1;
     UPDATE jobs SET active_version = latest_version;
     UPDATE shards SET epoch = 1, watermark = now()" >/dev/null

# Rows as 0.2.0 wrote them before 041: job_id, no job_ref.
sql "ALTER TABLE triggers DISABLE TRIGGER triggers_job_ref" >/dev/null
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       state, due_at, shard, epoch, finished_at)
     SELECT 'uf.up', 1, t, 0, 'schedule', 'default', 'default', 'succeeded', t, j.shard, 1, t
     FROM jobs j, (SELECT date_trunc('minute', now()) - g * interval '10 minutes' AS t
                   FROM generate_series(1, 3) g) x WHERE j.job_id = 'uf.up';
     INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       state, due_at, shard, epoch, fence, lease_owner, lease_until)
     SELECT 'uf.solo', 1, now() - interval '2 minutes', 0, 'schedule', 'default', 'default',
       'running', now() - interval '2 minutes', j.shard, 1, nextval('palisade_fence'), 'node-x',
       clock_timestamp() + interval '5 minutes' FROM jobs j WHERE j.job_id = 'uf.solo';
     INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       due_at, shard, epoch)
     SELECT 'uf.solo', 1, now() - interval '1 minute', 0, 'schedule', 'default', 'default',
       now() - interval '1 minute', j.shard, 1 FROM jobs j WHERE j.job_id = 'uf.solo'" >/dev/null
sql "ALTER TABLE triggers ENABLE TRIGGER triggers_job_ref" >/dev/null
expect_eq "the rows carry no job_ref" "5|0" "$(sql "SELECT count(*), count(job_ref) FROM triggers")"

expect_eq "the dependency planning plans uf.dep after each of uf.up's 3 succeeded instants" "3|3" \
	"$(sql "SELECT p.planned FROM jobs j, shards s, palisade_plan_after(j.shard, s.epoch) p
	         WHERE j.job_id = 'uf.dep' AND s.shard_id = j.shard")|$(sql "SELECT count(*) FROM triggers
	         WHERE job_id = 'uf.dep'")"
sql "UPDATE triggers t SET job_ref = j.ref FROM jobs j WHERE j.job_id = t.job_id AND t.job_id = 'uf.up'" >/dev/null
expect_eq "once the backfill filled uf.up's, the next round adds none and has lost none" "3" \
	"$(sql "SELECT count(*) FROM jobs j, shards s, palisade_plan_after(j.shard, s.epoch) p
	         WHERE j.job_id = 'uf.dep' AND s.shard_id = j.shard" >/dev/null
	   sql "SELECT count(*) FROM triggers WHERE job_id = 'uf.dep'")"

expect_eq "the claim takes nothing of uf.solo beside its live run" "0" \
	"$(sql "SET jit = off; SELECT count(*) FROM palisade_claim_batch('node-a', 30000, 20, 0, '{}', '{}', '{}', '{}',
	         '{}', '{}', '{}', true) WHERE id IS NOT NULL AND job_id = 'uf.solo'")"
expect_eq "... its due instant is skipped (overlap), a misfire of uf.solo" "skipped overlap|1" \
	"$(sql "SELECT state || ' ' || last_error_class FROM triggers WHERE job_id = 'uf.solo'
	         AND state <> 'running'")|$(sql "SELECT count(*) FROM misfires WHERE job_id = 'uf.solo' AND reason = 'overlap'")"

echo "  ($((SECONDS - t0)) s)"
finish
