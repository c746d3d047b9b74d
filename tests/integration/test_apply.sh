#!/usr/bin/env bash
# apply / jobs / plan diff against a real PostgreSQL.
source tests/integration/lib.sh
guarantee "plan versions are immutable: re-applying the same spec creates nothing, a change creates version n+1, history is never rewritten; invalid files store nothing"

it_db
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
expect_exit "apply --output json" 0 "$PAL" apply --output json "$D/jobs.yaml"
expect_eq "its report: each job once, with its outcome and version" \
	'[["billing.daily-summary","unchanged",1],["ops.heartbeat","unchanged",1]]' \
	"$(echo "$OUT" | jq -c '[.[] | [.job_id, .outcome, .version]] | sort')"

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
# apply connects while it parses; an invalid file must still exit 65 at
# once, not wait for a database that does not answer (a loopback listener
# that accepts and never replies; libpq would wait its connect_timeout).
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$D/mute.port" &
mute=$!
for _ in $(seq 50); do [ -s "$D/mute.port" ] && break; sleep 0.1; done
t0=$(date +%s%3N)
expect_exit "an invalid file with a database that never answers exits 65" 65 \
	env PALISADE_PG="host=127.0.0.1 port=$(cat "$D/mute.port") connect_timeout=20" "$PAL" apply "$D/bad.yaml"
took=$(($(date +%s%3N) - t0))
check "at once, without waiting for the connection ($took ms)" [ "$took" -lt 5000 ]
# apply hands the store 1,000 jobs at a time while it parses: a file whose
# problem comes after 2,500 valid jobs is refused just as whole, at once
# with a database that does not answer, and stores none of them with one
# that does.
{ echo "jobs:"; for i in $(seq 2500); do
	echo "  - {id: late.job-$i, schedule: {cron: \"0 0 3 * * ?\"}, target: {url: http://127.0.0.1:8089/x}}"
done; echo "  - {id: late.bad, schedule: {cron: \"61 * * * *\"}, target: {url: http://127.0.0.1:8089/x}}"; } >"$D/late-bad.yaml"
t0=$(date +%s%3N)
expect_exit "a file with a problem after 2,500 valid jobs and a database that never answers exits 65" 65 \
	env PALISADE_PG="host=127.0.0.1 port=$(cat "$D/mute.port") connect_timeout=20" "$PAL" apply "$D/late-bad.yaml"
took=$(($(date +%s%3N) - t0))
check "at once ($took ms)" [ "$took" -lt 5000 ]
kill "$mute" 2>/dev/null
wait "$mute" 2>/dev/null
expect_exit "the same file with a database exits 65" 65 "$PAL" apply "$D/late-bad.yaml"
expect_match "names the late problem" "late-bad.yaml:2502:" "$OUT"
expect_eq "and stores none of the 2,500 valid jobs, no version, no audit row" "0|0|0" \
	"$(sql "select (select count(*) from jobs where job_id like 'late.%'), (select count(*) from job_versions where job_id like 'late.%'), (select count(*) from audit_log where scope like 'job:late.%')")"
# After a chunk of new jobs only, the next chunk skips the probe for
# existing rows and is copied whole: existing jobs right behind new ones
# fail that COPY on the key and take the ON CONFLICT path, and each job is
# still reported and versioned right.
cat >"$D/seq-old.yaml" <<'YAML'
jobs:
  - {id: seq.old-1, schedule: {cron: "0 0 3 * * ?"}, target: {url: http://127.0.0.1:8089/x}}
  - {id: seq.old-2, schedule: {cron: "0 0 3 * * ?"}, target: {url: http://127.0.0.1:8089/x}}
YAML
expect_exit "two jobs applied" 0 "$PAL" apply "$D/seq-old.yaml"
{ echo "jobs:"; for i in $(seq 1500); do
	echo "  - {id: seq.new-$i, schedule: {cron: \"0 0 4 * * ?\"}, target: {url: http://127.0.0.1:8089/x}}"
done; } >"$D/seq-new.yaml"
sed 's/seq.old-2, schedule: {cron: "0 0 3/seq.old-2, schedule: {cron: "0 0 5/' "$D/seq-old.yaml" >"$D/seq-old2.yaml"
expect_exit "1,500 new jobs, then the two existing ones (one changed), in one apply" 0 \
	"$PAL" apply "$D/seq-new.yaml" "$D/seq-old2.yaml"
expect_match "reports each" "apply: 1500 created, 1 updated, 1 unchanged" "$OUT"
expect_match "the changed one as v2" "updated +seq.old-2 v2" "$OUT"
expect_eq "versions: 1,500 new at v1, the changed one at v2, the other still v1 only" "1500|2|1" \
	"$(sql "select (select count(*) from job_versions where job_id like 'seq.new-%' and version = 1), (select max(version) from job_versions where job_id = 'seq.old-2'), (select count(*) from job_versions where job_id = 'seq.old-1')")"

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
# A new job that another apply creates between our probe of the jobs rows
# and our COPY of them: the COPY waits for that apply, fails on the key when
# it commits, and apply rolls back to its savepoint and inserts the rows with
# ON CONFLICT instead.  Apply A (race.job-2 alone) is held after its jobs
# row by psql's lock on audit_log; apply B (race.job-1..3) probes then, and
# A commits while B waits.
cat >"$D/race-a.yaml" <<'YAML'
jobs:
  - {id: race.job-2, schedule: {cron: "0 0 3 * * ?"}, target: {url: http://127.0.0.1:8089/x}}
YAML
{ echo "jobs:"; for i in 1 2 3; do echo "  - {id: race.job-$i, schedule: {cron: \"0 0 3 * * ?\"}, target: {url: http://127.0.0.1:8089/x}}"; done; } >"$D/race-b.yaml"
psql "$PALISADE_PG" -XAtq -c "begin; lock table audit_log in exclusive mode; select pg_sleep(3); commit;" >/dev/null &
sleep 0.5
"$PAL" apply "$D/race-a.yaml" >"$D/race-a.out" 2>&1 &
sleep 1
expect_exit "an apply racing another apply that creates one of its new jobs succeeds" 0 "$PAL" apply "$D/race-b.yaml"
expect_match "and finds that job unchanged, the others created" "2 created, 0 updated, 1 unchanged" "$OUT"
wait
expect_match "the other apply created it" "1 created" "$(cat "$D/race-a.out")"
expect_eq "one version per raced job" "3|3|1" "$(sql "select count(*), count(distinct job_id), max(version) from job_versions where job_id like 'race.%'")"
expect_eq "one job.create audit row per raced job" "3" "$(sql "select count(*) from audit_log where action = 'job.create' and scope like 'job:race.%'")"
# ---- lifecycle: owner/description, suspend, delete, apply --prune ----------
fresh_db it_lifecycle
"$PAL" migrate >/dev/null
export PALISADE_ACTOR=carol@ops
L=$PALISADE_TEST_TMP/lifecycle
mkdir -p "$L"
cat >"$L/a.yaml" <<'YAML'
jobs:
  - id: life.keep
    owner: team-a
    description: "Keeps going."
    schedule: {cron: "*/5 * * * *"}
    target: {url: http://127.0.0.1:8089/effects/keep}
  - id: life.gone
    schedule: {cron: "* * * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/gone}
  - id: life.later
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/later}
YAML
expect_exit "apply with owner and description" 0 "$PAL" apply --reason setup "$L/a.yaml"
expect_eq "owner and description stored on the job" "team-a|Keeps going." "$(sql "select owner || '|' || description from jobs where job_id = 'life.keep'")"
sed -i 's/Keeps going\./Keeps going, daily./' "$L/a.yaml"
expect_exit "a description change applies" 0 "$PAL" apply --reason describe "$L/a.yaml"
expect_match "and is no new version" "unchanged +life.keep v1" "$OUT"
expect_eq "the new description is stored" "Keeps going, daily." "$(sql "select description from jobs where job_id = 'life.keep'")"
expect_eq "audited with old and new" "Keeps going.|Keeps going, daily." "$(sql "select details->>'previous_description' || '|' || (details->>'description') from audit_log where action = 'job.meta' and scope = 'job:life.keep'")"
expect_exit "jobs shows the owner" 0 "$PAL" jobs life.keep
expect_match "owner line" "owner: team-a" "$OUT"

# suspend: true closes the job's gate (source spec), audited as a pause.
sed -i 's/^  - id: life.later$/  - id: life.later\n    suspend: true/' "$L/a.yaml"
expect_exit "apply with suspend: true" 0 "$PAL" apply --reason suspend "$L/a.yaml"
expect_match "reports the gate" "suspended +life.later" "$OUT"
expect_eq "the job's gate is closed, source spec" "true|spec" "$(sql "select paused || '|' || source from gates where scope = 'job:life.later'")"
expect_eq "audited as a pause from the spec" "1" "$(sql "select count(*) from audit_log where action = 'pause' and scope = 'job:life.later' and details->>'source' = 'spec'")"
expect_exit "re-applying the same file" 0 "$PAL" apply "$L/a.yaml"
expect_eq "changes no gate and writes no second pause" "1" "$(sql "select count(*) from audit_log where action = 'pause' and scope = 'job:life.later'")"
expect_exit "gates lists it" 0 "$PAL" gates --output json
expect_eq "with its source" "spec" "$(echo "$OUT" | python3 -c 'import json,sys; print([g["source"] for g in json.load(sys.stdin) if g["scope"]=="job:life.later"][0])')"
sed -i '/^    suspend: true$/d' "$L/a.yaml"
expect_exit "apply without suspend" 0 "$PAL" apply --reason unsuspend "$L/a.yaml"
expect_match "lifts the gate the file set" "resumed +life.later" "$OUT"
expect_eq "the gate is gone" "0" "$(sql "select count(*) from gates where scope = 'job:life.later'")"
# An operator's pause is never lifted by a job file.
"$PAL" pause --job life.later --reason "by hand" >/dev/null
expect_exit "apply without suspend over a manual pause" 0 "$PAL" apply "$L/a.yaml"
expect_eq "leaves the operator's gate" "true|operator" "$(sql "select paused || '|' || source from gates where scope = 'job:life.later'")"
sed -i 's/^  - id: life.later$/  - id: life.later\n    suspend: true/' "$L/a.yaml"
expect_exit "suspend: true over a manual pause" 0 "$PAL" apply "$L/a.yaml"
sed -i '/^    suspend: true$/d' "$L/a.yaml"
expect_exit "and suspend removed again" 0 "$PAL" apply "$L/a.yaml"
expect_eq "the operator's gate stays throughout" "true|operator|by hand" "$(sql "select paused || '|' || source || '|' || reason from gates where scope = 'job:life.later'")"
"$PAL" resume --job life.later >/dev/null

# delete: a last version ending now, pending triggers cancelled, history kept.
sql "INSERT INTO triggers (job_id, version, scheduled_at, source, tenant, resource_group, state, due_at, shard)
     SELECT job_id, 1, now() + g * interval '1 second', 'schedule', tenant, resource_group, 'pending', now() + g * interval '1 second', shard
     FROM jobs, generate_series(1, 5) g WHERE job_id = 'life.gone'" >/dev/null
sql "INSERT INTO triggers (job_id, version, scheduled_at, source, tenant, resource_group, state, due_at, shard, finished_at)
     SELECT job_id, 1, now() - interval '1 hour', 'schedule', tenant, resource_group, 'succeeded', now() - interval '1 hour', shard, now()
     FROM jobs WHERE job_id = 'life.gone'" >/dev/null
expect_exit "delete of an unknown job" 3 "$PAL" delete --reason x life.gone no.such-job
expect_eq "retires nothing" "0" "$(sql "select count(*) from jobs where retired_at is not null")"
expect_exit "delete --dry-run" 0 "$PAL" delete --dry-run life.gone
expect_match "says what would go" "would retire life.gone" "$OUT"
expect_eq "and stores nothing" "1" "$(sql "select latest_version from jobs where job_id = 'life.gone'")"
expect_exit "delete without --reason" 64 "$PAL" delete life.gone
expect_exit "delete" 0 "$PAL" delete --wait 0 --reason "no longer needed" life.gone
expect_match "reports the cancelled triggers" "retired life.gone v2: .*5 pending triggers cancelled" "$OUT"
expect_eq "a retiring version v2 whose schedule ends" "2|true" "$(sql "select latest_version || '|' || (retired_at is not null) from jobs where job_id = 'life.gone'")"
expect_eq "v2 ends at the retirement (nothing planned after it)" "t" "$(sql "select (v.spec #>> '{schedule,end}')::timestamptz = date_trunc('second', j.retired_at) from jobs j join job_versions v on v.job_id = j.job_id and v.version = 2 where j.job_id = 'life.gone'")"
expect_eq "pending triggers cancelled" "5" "$(sql "select count(*) from trigger_jobs where job_id = 'life.gone' and state = 'cancelled'")"
expect_eq "history kept" "1|1" "$(sql "select count(*) filter (where state = 'succeeded') || '|' || (select count(*) from job_versions where job_id = 'life.gone' and version = 1) from trigger_jobs where job_id = 'life.gone'")"
expect_eq "the cancellation is recorded with the trigger ids" "5" "$(sql "select jsonb_array_length(details->'trigger_ids') from audit_log where action = 'cancel' and scope = 'job:life.gone'")"
expect_eq "and the retirement" "1" "$(sql "select count(*) from audit_log where action = 'job.retire' and scope = 'job:life.gone'")"
expect_exit "jobs hides the retired job" 0 "$PAL" jobs
check "not listed" bash -c "! grep -q life.gone <<<\"\$1\"" _ "$OUT"
expect_exit "jobs --retired --output json" 0 "$PAL" jobs --retired --output json
expect_eq "lists it" "life.gone" "$(echo "$OUT" | python3 -c 'import json,sys; print(",".join(j["job_id"] for j in json.load(sys.stdin)))')"
expect_exit "delete again (named twice)" 0 "$PAL" delete --wait 0 --reason again life.gone life.gone
expect_match "already retired" "already retired life.gone" "$OUT"
expect_exit "trigger of a retired job is refused" 4 "$PAL" trigger --job life.gone --reason x
expect_exit "re-apply of the retired job" 0 "$PAL" apply --reason back "$L/a.yaml"
expect_match "is a new version, never an old one" "updated +life.gone v3" "$OUT"
expect_eq "and lives again" "3|false" "$(sql "select latest_version || '|' || (retired_at is not null) from jobs where job_id = 'life.gone'")"

# apply --prune: the jobs absent from the files are retired.
cat >"$L/b.yaml" <<'YAML'
jobs:
  - id: life.keep
    owner: team-a
    description: "Keeps going, daily."
    schedule: {cron: "*/5 * * * *"}
    target: {url: http://127.0.0.1:8089/effects/keep}
YAML
expect_exit "apply --prune --dry-run" 0 "$PAL" apply --prune --dry-run "$L/b.yaml"
expect_match "shows what would go" "would retire life.gone" "$OUT"
expect_match "..." "would retire life.later" "$OUT"
expect_match "and says nothing was stored" "dry run: nothing stored" "$OUT"
expect_eq "nothing retired" "0" "$(sql "select count(*) from jobs where retired_at is not null")"
expect_exit "apply --prune" 0 "$PAL" apply --prune --reason prune "$L/b.yaml"
expect_match "retires them" "retired +life.later v2" "$OUT"
expect_match "..." "1 unchanged, 2 retired" "$OUT"
expect_eq "two retired, the kept one live" "life.gone,life.later" "$(sql "select string_agg(job_id, ',' order by job_id) from jobs where retired_at is not null")"
expect_exit "apply --prune again retires nothing more" 0 "$PAL" apply --prune --reason prune "$L/b.yaml"
expect_match "..." "0 retired" "$OUT"

# The read commands.
expect_exit "audit --output json" 0 "$PAL" audit --output json --limit 500
expect_eq "holds the retirements" "3" "$(echo "$OUT" | python3 -c 'import json,sys; print(sum(1 for a in json.load(sys.stdin) if a["action"]=="job.retire"))')"
expect_exit "audit --since the future" 0 "$PAL" audit --since 2999-01-01T00:00:00Z --output json
expect_eq "is empty" "[]" "$(echo $OUT)"
expect_exit "audit table" 0 "$PAL" audit --limit 3
expect_match "has a header" "^AT +ACTOR +ACTION" "$OUT"
sql "INSERT INTO misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
     VALUES ('life.keep', 1, '2026-03-01T00:00:00Z', '2026-03-01T01:00:00Z', 12, 'skip', 'missed', 0, 1),
            ('life.keep', 1, '2026-04-01T00:00:00Z', '2026-04-01T00:05:00Z', 1, 'skip', 'missed', 0, 1)" >/dev/null
expect_exit "misfires --job --from --to" 0 "$PAL" misfires --job life.keep --from 2026-02-01T00:00:00Z --to 2026-03-15T00:00:00Z --output json
expect_eq "only the range in the interval" "12" "$(echo "$OUT" | python3 -c 'import json,sys; print(",".join(str(m["count"]) for m in json.load(sys.stdin)))')"
expect_exit "misfires table" 0 "$PAL" misfires
expect_match "both rows" "life.keep .* 2026-04-01T00:00:00Z" "$OUT"
expect_exit "misfires of an unknown job" 3 "$PAL" misfires --job no.such-job
T1=$(sql "select min(id) from trigger_jobs where job_id = 'life.gone'")
add_attempt "$T1" "fence, node, idempotency_key, outcome, error_class, http_status, duration_ms, ended_at" \
	"nextval('palisade_fence'), 'node-a', 'life.gone/x/0', 'retry_wait', 'http_503', 503, 12, now()"
expect_exit "attempts TRIGGER --output json" 0 "$PAL" attempts "$T1" --output json
expect_eq "the attempt" "node-a|http_503|503" "$(echo "$OUT" | python3 -c 'import json,sys; a=json.load(sys.stdin)[0]; print(a["node"]+"|"+a["error_class"]+"|"+str(a["http_status"]))')"
expect_exit "attempts table" 0 "$PAL" attempts "$T1"
expect_match "a row" "node-a .*http_503" "$OUT"
expect_exit "attempts of a missing trigger" 3 "$PAL" attempts 99999999
unset PALISADE_ACTOR
finish
