#!/usr/bin/env bash
# apply / jobs / plan diff against a real PostgreSQL.
source tests/integration/lib.sh
guarantee "plan versions are immutable: re-applying the same spec creates nothing, a change creates version n+1, history is never rewritten; invalid files store nothing"

fresh_db it_apply
"$PAL" migrate >/dev/null
D=$PALISADE_TEST_TMP/apply
mkdir -p "$D"
cat >"$D/jobs.yaml" <<'YAML'
jobs:
  - id: billing.daily-summary
    tenant: billing
    schedule:
      cron: "0 30 2 * * ?"
      timezone: Europe/Berlin
    partitions: 2
    target:
      url: http://127.0.0.1:8089/effects/summary
      headers: {Authorization: "Bearer ${SUMMARY_TOKEN}"}
  - id: ops.heartbeat
    schedule: {cron: "*/5 * * * *"}
    target: {url: http://127.0.0.1:8089/effects/heartbeat}
YAML
expect_exit "first apply succeeds" 0 "$PAL" apply --reason "first" "$D/jobs.yaml"
expect_match "reports created" "created +billing.daily-summary v1" "$OUT"
expect_exit "second apply of the same file succeeds" 0 "$PAL" apply "$D/jobs.yaml"
expect_match "reports unchanged" "unchanged +billing.daily-summary v1" "$OUT"
expect_eq "one version per job after two applies" "2" "$(sql 'select count(*) from job_versions')"
expect_eq "the secret stays a reference in the stored spec" "1" "$(sql "select count(*) from job_versions where spec::text like '%\${SUMMARY_TOKEN}%'")"

# Same meaning, different spelling: keys reordered, default written out.
cat >"$D/reordered.yaml" <<'YAML'
jobs:
  - id: ops.heartbeat
    target: {url: "http://127.0.0.1:8089/effects/heartbeat", method: POST}
    schedule: {timezone: UTC, cron: "*/5 * * * *"}
YAML
expect_exit "an equivalent spelling applies" 0 "$PAL" apply "$D/reordered.yaml"
expect_match "and is unchanged" "unchanged +ops.heartbeat v1" "$OUT"

sed -i 's/0 30 2 \* \* ?/0 45 3 * * ?/' "$D/jobs.yaml"
expect_exit "apply of a changed cron" 0 "$PAL" apply "$D/jobs.yaml"
expect_match "reports updated to v2" "updated +billing.daily-summary v2" "$OUT"
expect_match "and the other job unchanged" "unchanged +ops.heartbeat v1" "$OUT"
expect_eq "version 1 is kept as it was" "0 30 2 * * ?" "$(sql "select cron from job_versions where job_id='billing.daily-summary' and version=1")"
expect_eq "version 2 holds the change" "0 45 3 * * ?" "$(sql "select cron from job_versions where job_id='billing.daily-summary' and version=2")"
expect_eq "latest_version points at v2" "2" "$(sql "select latest_version from jobs where job_id='billing.daily-summary'")"
expect_eq "audit rows for two creates and one update" "3" "$(sql "select count(*) from audit_log where action in ('job.create','job.update')")"

expect_exit "jobs lists them" 0 "$PAL" jobs --versions
expect_match "with both versions" "v1 .*0 30 2" "$OUT"
expect_match "..." "v2 .*0 45 3" "$OUT"
expect_exit "jobs --output json" 0 "$PAL" jobs --output json
expect_eq "json lists two versions for the changed job" "2" "$(echo "$OUT" | python3 -c 'import json,sys; j=json.load(sys.stdin); print([len(x["versions"]) for x in j if x["job_id"]=="billing.daily-summary"][0])')"

# plan diff: move the cron again, preview before apply.
sed -i 's/0 45 3 \* \* ?/0 15 4 * * ?/' "$D/jobs.yaml"
expect_exit "plan diff runs" 0 "$PAL" plan diff --from 2026-06-01T00:00:00Z --count 2 "$D/jobs.yaml"
expect_match "shows the stored instant going away (03:45 Berlin = 01:45Z)" "^  - 2026-06-01T01:45:00Z" "$OUT"
expect_match "and the new one coming (04:15 Berlin = 02:15Z)" "^  \+ 2026-06-01T02:15:00Z" "$OUT"
expect_match "and the unchanged job" "ops.heartbeat: unchanged" "$OUT"
expect_eq "plan diff stores nothing" "2" "$(sql "select latest_version from jobs where job_id='billing.daily-summary'")"

# Invalid input: nothing stored, exit 65.
cat >"$D/bad.yaml" <<'YAML'
jobs:
  - id: ops.new-job
    schedule: {cron: "*/5 * * * *"}
    target: {url: http://127.0.0.1:8089/x}
  - id: Bad Id
    schedule: {cron: "61 * * * *"}
    target: {url: http://127.0.0.1:8089/x}
YAML
expect_exit "apply of an invalid file exits 65" 65 "$PAL" apply "$D/bad.yaml"
expect_match "names file:line:col" "bad.yaml:[0-9]+:[0-9]+:" "$OUT"
expect_eq "and stores nothing, not even the valid job" "0" "$(sql "select count(*) from jobs where job_id='ops.new-job'")"

# Concurrent applies of the same change converge on one new version.
# Five rounds: each changes the schedule once and races 8 applies of it (a
# race that loses shows as a second version with the same digest).
for round in 1 2 3 4 5; do
	sed -i "s/0 [0-9]* [0-9]* \* \* ?/0 $round 5 * * ?/" "$D/jobs.yaml"
	for i in 1 2 3 4 5 6 7 8; do "$PAL" apply "$D/jobs.yaml" >/dev/null 2>&1 & done
	wait
done
# Deterministic form of the race: two applies of one change both wait for
# the job's row lock (held here by psql), then run one after the other; the
# second must see the first's version (a fresh snapshot after the lock).
sed -i "s/0 [0-9]* [0-9]* \* \* ?/0 9 6 * * ?/" "$D/jobs.yaml"
psql "$PALISADE_PG" -XAtq -c "begin; select 1 from jobs where job_id = 'billing.daily-summary' for update; select pg_sleep(1.5); commit;" >/dev/null &
sleep 0.5
for i in 1 2; do "$PAL" apply "$D/jobs.yaml" >/dev/null 2>&1 & done
wait
expect_eq "5 rounds of 8 concurrent applies, then 2 applies released by one lock: exactly one version per change" "8" "$(sql "select max(version) from job_versions where job_id='billing.daily-summary'")"
expect_eq "no two versions of a job share a digest in a row" "0" "$(sql "select count(*) from job_versions a join job_versions b on b.job_id = a.job_id and b.version = a.version + 1 and b.digest = a.digest")"
expect_eq "no duplicate (job, version)" "0" "$(sql "select count(*) - count(distinct (job_id, version)) from job_versions")"
finish
