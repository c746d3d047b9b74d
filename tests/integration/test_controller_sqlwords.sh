#!/usr/bin/env bash
# Jobs whose id, tenant and group read as SQL words or carry the characters
# of PostgreSQL's array syntax (quotes, commas, braces, a backslash, blanks)
# are planned, claimed, replaced and recorded like any other: every array a
# node hands to PostgreSQL quotes its text elements (src/store/pgarray.c).
# Before that, a job called `null` made the planning insert fail on every
# tick and its controller dropped every shard it led.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job named null, true or default, or with a tenant or group holding quotes, commas, braces, a backslash or blanks, is planned, claimed, replaced (overlap: replace) and its misfires recorded; no other job of its shard is held back"

fresh_db it_sqlwords
"$PAL" migrate >/dev/null
start_sink --delay-ms 2500 || { fail "sink starts"; finish; exit 1; }
SHARDS=2
# Limits on groups and tenants called null/true send those names to the
# claim as array elements too.
SHARDS=2 write_conf "$CLUSTER_CONF" \
	"executor: {lease: 10s, heartbeat: 2s, groups: {\"null\": {concurrency: 0, cluster_concurrency: 50}}, tenants: {\"null\": {cap: 50}, \"true\": {weight: 2}}}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
TODAY=$(date -u +%Y-%m-%d)
job() { # id tenant group [extra flow keys]
	echo "  - {id: \"$1\", tenant: \"$2\", group: \"$3\", schedule: {cron: \"*/2 * * * * ?\"$5}, target: {url: \"http://$SINK_ADDR/effects/w\", timeout: 10s}$4}"
}
{
	echo "jobs:"
	# `null` replaces its older run: the sink takes 2.5 s, the job fires every 2 s.
	job null null null ", overlap: replace"
	job true true true
	# every instant of today is excluded: recorded as misfires, never planned
	job default default default "" ", exclude: [\"$TODAY\"]"
	for i in 1 2 3 4; do job "w$i" plain plain; done
	job plain.neighbour plain plain
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply accepts ids, tenants and groups that read as SQL words" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"

# Names the job-file grammar refuses but PostgreSQL stores: set them in the
# database (as an older or a future validator could have), before any node
# loads the jobs.  Tenant and group travel in the planning and claim arrays.
declare -A TEN GRP
TEN[w1]='NULL';             GRP[w1]='Null'
TEN[w2]='a "quoted" name';  GRP[w2]='a,b'
TEN[w3]='{braced}';         GRP[w3]='back\slash'
TEN[w4]=' spaced  out ';    GRP[w4]='}{ "\'
for j in w1 w2 w3 w4; do
	sql_run "UPDATE job_versions, jobs: tenant and group of $j" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -v j="$j" -v t="${TEN[$j]}" -v g="${GRP[$j]}" <<'SQL' >/dev/null
UPDATE job_versions SET spec = jsonb_set(jsonb_set(spec, '{tenant}', to_jsonb(:'t'::text)), '{group}', to_jsonb(:'g'::text)),
	resource_group = :'g' WHERE job_id = :'j';
UPDATE jobs SET tenant = :'t', resource_group = :'g' WHERE job_id = :'j';
SQL
done
expect_eq "the odd tenants and groups are stored as written" "4" \
	"$(sql "select count(*) from job_versions where (job_id, resource_group) in (('w1', 'Null'), ('w2', 'a,b'), ('w3', 'back\\slash'), ('w4', '}{ \"\\'))")"

T0=$(rfc3339_ago -2)
start_node s1
wait_until "both shards led and planned ahead" 20 all_shards_led
sleep 12
T1=$(rfc3339_ago 3)

planned() { sql "select count(*) from trigger_jobs where job_id = '$1' and tenant = \$q\$$2\$q\$ and resource_group = \$q\$$3\$q\$"; }
claimed() { sql "select count(*) from trigger_jobs where job_id = '$1' and attempt_count > 0"; }
for j in null true; do
	check "job $j: planned with tenant $j and group $j" [ "$(planned "$j" "$j" "$j")" -gt 0 ]
	check "job $j: claimed and called" [ "$(claimed "$j")" -gt 0 ]
done
for j in w1 w2 w3 w4; do
	check "job $j: planned with tenant [${TEN[$j]}] and group [${GRP[$j]}]" [ "$(planned "$j" "${TEN[$j]}" "${GRP[$j]}")" -gt 0 ]
	check "job $j: claimed and called" [ "$(claimed "$j")" -gt 0 ]
done
check "job plain.neighbour (same shards) planned and called" [ "$(claimed plain.neighbour)" -gt 0 ]
replaced() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'null' and last_error_class = 'replaced'")" -gt 0 ]; }
wait_until "overlap: replace works for job null (older runs replaced)" 30 replaced
check "job true: succeeded runs" [ "$(sql "select count(*) from trigger_jobs where job_id = 'true' and state = 'succeeded'")" -gt 0 ]
check "job default: today's instants recorded as misfires (reason excluded)" \
	[ "$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'default' and reason = 'excluded'")" -gt 0 ]
expect_eq "job default: nothing planned on its excluded day" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'default'")"
expect_eq "every job activated (version 1 active)" 8 "$(sql "select count(*) from jobs where active_version = 1")"
expect_eq "no tick failed, no shard dropped" 0 \
	"$(grep -c '"event":"controller.tick_failed"\|"event":"controller.shard_dropped"\|"event":"controller.db_error"' "$NODE_DIR/s1.log")"
expect_exit "verify: nothing missing or doubled for these jobs" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    $OUT" | head -1
finish
