#!/usr/bin/env bash
# The claim and the SQL functions beside it name a trigger's job by
# triggers.job_ref (the job's row by jobs.ref), never by the row's text
# copies job_id and resource_group, which the job reference's contract step
# drops.  The triggers here name their job by job_ref alone (the fill
# trigger that writes the copies for 0.2.0 readers is off), as once no
# 0.2.0 node runs: the claim finds their job and version, returns the job's
# id and group, honours job and group gates and group limits by the job's
# group now (a job moved to another group takes its pending triggers with
# it), skips a forbid job's overlapping instant naming the job; the door,
# a job's latest triggers and the attempt ledger's default key find the
# job too.
source tests/integration/lib.sh
guarantee "G3, G7: the claim, the door, the forbid skip, a job's latest triggers and the attempt ledger find a trigger's job by its reference (triggers.job_ref), with the rows' text copies of the job's id and group empty; a group gate or limit covers the triggers of the jobs in the group now"
t0=$SECONDS

fresh_db it_claim_job_ref
"$PAL" migrate >/dev/null 2>&1 || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/claim_job_ref.yaml
cat >"$f" <<'YAML'
jobs:
  - {id: cj.alpha, tenant: ta, group: ga, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/a"}}
  - {id: cj.beta, tenant: ta, group: gb, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/b"}}
  - {id: cj.solo, tenant: ta, group: gc, overlap: forbid, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/c"}}
YAML
"$PAL" apply "$f" >/dev/null 2>&1 || { echo "  apply failed"; exit 1; }
sql "UPDATE job_versions SET effective_from = now() - interval '1 hour', activated_at = now(), activated_epoch = 0" >/dev/null
sql "ALTER TABLE triggers DISABLE TRIGGER triggers_job_ref" >/dev/null
sql "CREATE SEQUENCE it_instant" >/dev/null

# due JOB [STATE]: a scheduled trigger of JOB due a fresh second ago, named
# by job_ref alone; prints its id.
due() {
	sql "INSERT INTO triggers (job_ref, version, scheduled_at, partition, source, tenant, state, due_at,
	       shard, fence, lease_owner, lease_until)
	     SELECT j.ref, 1, a.t, 0, 'schedule', j.tenant, '${2:-pending}', a.t, 0,
	       CASE WHEN '${2:-pending}' = 'running' THEN nextval('palisade_fence') END,
	       CASE WHEN '${2:-pending}' = 'running' THEN 'node-x' END,
	       CASE WHEN '${2:-pending}' = 'running' THEN clock_timestamp() + interval '5 minutes' END
	     FROM jobs j, (SELECT date_trunc('second', now()) - interval '1 hour'
	                     + nextval('it_instant') * interval '1 second' AS t) a
	     WHERE j.job_id = '$1' RETURNING id"
}
# claim [GROUPS NODE_LIMITS CLUSTER_LIMITS]: "job group" of each trigger a
# claim takes, in id order (jit off, as an executor's connection).
claim() {
	sql "SET jit = off; SELECT coalesce(string_agg(job_id || ' ' || resource_group, ',' ORDER BY id), '-')
	     FROM palisade_claim_batch('node-a', 30000, 20, 0, '{}', '${1:-{\}}', '${2:-{\}}', '${3:-{\}}',
	       '{}', '{}', '{}', true) WHERE id IS NOT NULL"
}

a1=$(due cj.alpha) b1=$(due cj.beta)
expect_eq "the rows carry no text copy of their job" "2|0|0" \
	"$(sql "SELECT count(*), count(job_id), count(resource_group) FROM triggers")"
expect_eq "the claim takes them and returns each one's job and group" "cj.alpha ga,cj.beta gb" "$(claim)"
expect_eq "the door returns a moved trigger's job" "cj.alpha" \
	"$(sql "SET jit = off; SELECT m.job_id FROM triggers t, palisade_trigger_move(ARRAY[t.id], ARRAY[t.scheduled_at],
	          ARRAY[t.state], 'cancelling', 'test') m WHERE t.id = $a1")"
sql "UPDATE triggers SET first_ended_at = clock_timestamp() WHERE id = $b1" >/dev/null
expect_eq "the ledger's default key of an attempt in the row names the job" "1" \
	"$(sql "SELECT count(*) FROM attempt_ledger l JOIN triggers t ON t.id = l.trigger_id
	         WHERE t.id = $b1 AND l.in_row AND l.idempotency_key
	           = palisade_default_key('cj.beta', t.scheduled_at, t.partition, t.request_id)")"
expect_eq "a job's latest triggers by its id" "$b1" "$(sql "SELECT string_agg(id::text, ',') FROM palisade_job_triggers('cj.beta', 10)")"

echo "  -- gates and limits by the job's group"
sql "INSERT INTO gates (scope, paused, reason, actor) VALUES ('group:gb', true, 'test', 'test')" >/dev/null
due cj.alpha >/dev/null
due cj.beta >/dev/null
expect_eq "group:gb paused: only cj.alpha's trigger is claimed" "cj.alpha ga" "$(claim)"
sql "UPDATE jobs SET resource_group = 'gb' WHERE job_id = 'cj.alpha'" >/dev/null
due cj.alpha >/dev/null
expect_eq "cj.alpha moved to gb: the gate holds its trigger too" "-" "$(claim)"
sql "DELETE FROM gates" >/dev/null
sql "UPDATE jobs SET resource_group = 'ga' WHERE job_id = 'cj.alpha'" >/dev/null
sql "INSERT INTO gates (scope, paused, reason, actor) VALUES ('job:cj.beta', true, 'test', 'test')" >/dev/null
expect_eq "job:cj.beta paused: cj.alpha's held trigger is claimed, cj.beta's stays" "cj.alpha ga" "$(claim)"
sql "DELETE FROM gates" >/dev/null
expect_eq "resumed, cj.beta's is claimed" "cj.beta gb" "$(claim)"
sql "UPDATE triggers SET lease_until = clock_timestamp() + interval '5 minutes' WHERE state = 'running'" >/dev/null
due cj.alpha >/dev/null
n=$(sql "SELECT count(*) FROM triggers t JOIN jobs j ON j.ref = t.job_ref
          WHERE j.resource_group = 'ga' AND t.state IN ('running', 'cancelling')")
expect_eq "group ga at its cluster limit ($n of cj.alpha's triggers live): none of ga claimed" "-" \
	"$(claim '{ga}' '{10}' "{$n}")"
expect_eq "with room for one more: claimed" "cj.alpha ga" "$(claim '{ga}' '{10}' "{$((n + 1))}")"

echo "  -- forbid"
due cj.solo running >/dev/null
s2=$(due cj.solo)
expect_eq "cj.solo's due instant beside its live run is not claimed" "-" "$(claim)"
expect_eq "... it is skipped (overlap) and recorded as cj.solo's misfire" "skipped overlap|cj.solo overlap 1" \
	"$(sql "SELECT state || ' ' || last_error_class FROM triggers WHERE id = $s2")|$(sql "SELECT job_id || ' ' || reason || ' ' || count FROM misfires")"

echo "  ($((SECONDS - t0)) s)"
finish
