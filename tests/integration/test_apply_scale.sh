#!/usr/bin/env bash
# apply in batches: SQL words as names, thousands of jobs in one set.
source tests/integration/lib.sh
guarantee "apply stores every job as written (ids, tenants and groups that read as SQL words - null, true, default - included), and across a set of thousands of jobs in several files and batches: one transaction, a re-apply creates no version, a change creates version 2 for exactly the changed jobs, one NOTIFY palisade_apply per created or updated job"

fresh_db it_apply_scale
"$PAL" migrate >/dev/null
D=$PALISADE_TEST_TMP/apply_scale
mkdir -p "$D"

# Names the job grammar allows that an unquoted array element, a careless
# literal or YAML would read as something else.
cat >"$D/words.yaml" <<'YAML'
jobs:
  - id: "null"
    tenant: "null"
    group: "null"
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/null}
  - id: "true"
    tenant: "false"
    group: "true"
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/true}
  - id: default
    tenant: default
    group: default
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/default}
  - id: select
    tenant: "on"
    group: "off"
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/select}
  - id: nan
    tenant: "yes"
    group: "no"
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/nan}
YAML
expect_exit "jobs named null, true, default, select, nan apply" 0 "$PAL" apply "$D/words.yaml"
expect_eq "stored as written, none as SQL NULL" \
	"default|default|default,nan|yes|no,null|null|null,select|on|off,true|false|true" \
	"$(sql "select string_agg(concat_ws('|', job_id, tenant, resource_group), ',' order by job_id) from jobs")"
expect_eq "each has version 1 with its own id in the spec" "5" \
	"$(sql "select count(*) from job_versions where version = 1 and spec->>'id' = job_id and resource_group = spec->>'group'")"
expect_eq "audit rows name them" "job:default,job:nan,job:null,job:select,job:true" \
	"$(sql "select string_agg(scope, ',' order by scope) from audit_log where action = 'job.create'")"
expect_exit "jobs --output json" 0 "$PAL" jobs --output json
expect_eq "json shows the job null as the string \"null\"" "null|null|null" \
	"$(echo "$OUT" | python3 -c 'import json,sys; j=[x for x in json.load(sys.stdin) if x["job_id"]=="null"][0]; print(j["job_id"], j["tenant"], j["group"], sep="|")')"

# A few thousand jobs in two files: the first is stored in two batches
# (apply.c takes 5000 jobs per set of statements), the second in one.
python3 - "$D" <<'PY'
import sys
d = sys.argv[1]
def write(name, lo, hi, changed=()):
    with open(f"{d}/{name}", "w") as f:
        f.write("jobs:\n")
        for i in range(lo, hi):
            cron = "0 7 3 * * ?" if i in changed else "0 */5 * * * ?"
            f.write(f"  - id: bulk.job-{i:05d}\n    tenant: t{i % 7}\n    group: g{i % 3}\n"
                    f"    schedule: {{cron: \"{cron}\", timezone: Europe/Berlin}}\n"
                    f"    target: {{url: \"http://127.0.0.1:8089/effects/{i}\"}}\n")
write("bulk-a.yaml", 0, 6000)
write("bulk-b.yaml", 6000, 8000)
changed = set(range(0, 8000, 97))
write("bulk-a2.yaml", 0, 6000, changed)
write("bulk-b2.yaml", 6000, 8000, changed)
print(len(changed), file=open(f"{d}/changed.count", "w"))
PY
NCHANGED=$(cat "$D/changed.count")

# A problem in a later file stores nothing from the earlier ones, which
# were already sent to the server in the same transaction.
cp "$D/bulk-b.yaml" "$D/bad-b.yaml"
sed -i '0,/cron: "0 \*\/5 \* \* \* ?"/s//cron: "0 61 * * * ?"/' "$D/bad-b.yaml"
expect_exit "a bad job in the second file fails the set" 65 "$PAL" apply "$D/bulk-a.yaml" "$D/bad-b.yaml"
expect_eq "nothing of the first file was stored" "0" "$(sql "select count(*) from jobs where job_id like 'bulk.%'")"
expect_exit "a job id repeated in another file fails the set" 65 "$PAL" apply "$D/bulk-b.yaml" "$D/bulk-b.yaml"
expect_match "naming the first definition" "duplicate job id \"bulk.job-06000\" \(first defined at .*bulk-b.yaml:2:" "$OUT"

start=$(date +%s%N)
expect_exit "8000 jobs in two files apply" 0 "$PAL" apply "$D/bulk-a.yaml" "$D/bulk-b.yaml" "$D/words.yaml"
ms=$((($(date +%s%N) - start) / 1000000))
echo "    (8005 jobs applied in $ms ms)"
expect_match "reports every job" "apply: 8000 created, 0 updated, 5 unchanged" "$OUT"
expect_eq "one version each" "8000" "$(sql "select count(*) from job_versions where job_id like 'bulk.%' and version = 1")"
expect_eq "with tenant, group, shard and target host from the spec" "0" \
	"$(sql "select count(*) from jobs j join job_versions v using (job_id) where j.job_id like 'bulk.%' and (j.tenant <> v.spec->>'tenant' or j.resource_group <> v.resource_group or j.shard not between 0 and 15 or v.target_host <> '127.0.0.1:8089' or v.timezone <> 'Europe/Berlin')")"
expect_eq "retry and target columns are the spec's own" "0" "$(sql "select count(*) from job_versions where retry <> spec->'retry' or target <> spec->'target'")"
expect_eq "one audit row per created job" "8005" "$(sql "select count(*) from audit_log where action = 'job.create'")"

expect_exit "re-apply of the same files" 0 "$PAL" apply "$D/bulk-a.yaml" "$D/bulk-b.yaml" "$D/words.yaml"
expect_match "is a no-op" "apply: 0 created, 0 updated, 8005 unchanged" "$OUT"
expect_eq "no new version" "8005" "$(sql "select count(*) from job_versions")"
expect_eq "no new audit row" "8005" "$(sql "select count(*) from audit_log")"

# Change every 97th job; three appliers race with it while a listener counts
# the notifications.
psql "$PALISADE_PG" -XAt -c "LISTEN palisade_apply" -c "select pg_sleep(12)" >"$D/notify.out" 2>&1 &
listener=$!
sleep 1
for i in 1 2 3; do "$PAL" apply --output json "$D/bulk-a2.yaml" "$D/bulk-b2.yaml" >"$D/race.$i.json" 2>&1 & done
wait $(jobs -p | grep -v "^$listener$")
expect_eq "three racing appliers: exactly the changed jobs have version 2" "$NCHANGED" \
	"$(sql "select count(*) from job_versions where version = 2 and job_id like 'bulk.%' and (substr(job_id, 10)::int % 97) = 0")"
expect_eq "and nothing else changed" "$NCHANGED|2" "$(sql "select count(*) filter (where version > 1), max(version) from job_versions")"
expect_eq "version 1 kept as it was" "0 */5 * * * ?" "$(sql "select cron from job_versions where job_id = 'bulk.job-00097' and version = 1")"
expect_eq "version 2 holds the change" "0 7 3 * * ?" "$(sql "select cron from job_versions where job_id = 'bulk.job-00097' and version = 2")"
expect_eq "latest_version follows" "$NCHANGED" "$(sql "select count(*) from jobs where latest_version = 2")"
expect_eq "the three reports together: each changed job updated once, unchanged otherwise" "$NCHANGED $((3 * 8000 - NCHANGED))" \
	"$(cat "$D"/race.*.json | python3 -c '
import json, sys
text = sys.stdin.read()
dec, i, docs = json.JSONDecoder(), 0, []
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i == len(text): break
    d, i = dec.raw_decode(text, i); docs.append(d)
o = [x["outcome"] for d in docs for x in d]
print(o.count("updated"), o.count("unchanged"))')"
wait $listener
expect_eq "one NOTIFY palisade_apply per updated job, payload the job id" "$NCHANGED" \
	"$(grep -c 'notification "palisade_apply" with payload "bulk.job-[0-9]*"' "$D/notify.out")"
# apply's key lookups read jobs by its index whether or not the table has
# statistics.  A table loaded faster than autovacuum comes round has none
# (autovacuum is off for it here, to keep it that way); the planner then
# takes `job_id = ANY(1,000 ids)` to match every row, and the probe of a
# chunk read the whole table (a parallel scan: 85 ms at 300,000 jobs, and
# growing with the table, where the index takes 1-3 ms).
fresh_db it_apply_probe
"$PAL" migrate >/dev/null
sql "ALTER TABLE jobs SET (autovacuum_enabled = off)" >/dev/null
expect_exit "6000 jobs into a fresh table" 0 "$PAL" apply "$D/bulk-a.yaml"
expect_eq "jobs has no statistics (as after a bulk load)" "0" "$(sql "select count(*) from pg_stats where tablename = 'jobs'")"
s0=$(seq_scans jobs)
expect_exit "re-apply with changes: every chunk probes jobs" 0 "$PAL" apply "$D/bulk-a2.yaml"
expect_match "the changed jobs updated" "apply: 0 created, $(python3 -c "print(len(range(0, 6000, 97)))") updated" "$OUT"
expect_exit "and a file of new jobs beside existing ones" 0 "$PAL" apply "$D/bulk-a2.yaml" "$D/bulk-b.yaml"
expect_eq "no apply read the whole jobs table" "0" "$(($(seq_scans jobs) - s0))"
finish
