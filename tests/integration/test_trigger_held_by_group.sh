#!/usr/bin/env bash
# A manual run is written with the active version's group and tenant, and the
# claim holds it by the pauses of those.  When the latest version moves the job
# to another group and no controller has activated it yet (a shard without a
# live controller), trigger's held_by names the pauses of the written rows'
# group (g1), not those of the job's latest version (g2).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger's held_by names the pauses that hold the run it wrote"
fresh_db it_trigger_held_by_group
"$PAL" migrate >/dev/null
F=$PALISADE_TEST_TMP/test_trigger_held_by_group.j.yaml
printf 'jobs:\n  - {id: m.one, group: g1, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
expect_exit "apply v1 (group g1)" 0 "$PAL" apply "$F"
SHARDS=1 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "v1 active" 30 bash -c "[ \"\$(psql -Atq \"\$PALISADE_PG\" -c \"select active_version from jobs where job_id='m.one'\")\" = 1 ]"
stop_node s1
printf 'jobs:\n  - {id: m.one, group: g2, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
expect_exit "apply v2 (group g2), no controller running" 0 "$PAL" apply "$F"
echo "    | jobs: $(sql "select latest_version, active_version, resource_group from jobs where job_id='m.one'")"
expect_exit "pause --group g1" 0 "$PAL" pause --group g1 --reason "g1 hold"
expect_exit "pause --group g2 (the latest version's, not active)" 0 "$PAL" pause --group g2 --reason "g2 hold"
"$PAL" trigger --job m.one --reason "run now" --output json >"$PALISADE_TEST_TMP/test_trigger_held_by_group.one" 2>"$PALISADE_TEST_TMP/test_trigger_held_by_group.err"
cat "$PALISADE_TEST_TMP/test_trigger_held_by_group.one" "$PALISADE_TEST_TMP/test_trigger_held_by_group.err" | sed 's/^/    | /' | head -20
id=$(jq -r '(.triggers // .trigger_ids)[0]' "$PALISADE_TEST_TMP/test_trigger_held_by_group.one")
grp=$(sql "select resource_group from triggers where id = $id")
echo "    | trigger $id written with group $grp"
held=$(sql "select count(*) from triggers t where id = $id and exists (select 1 from gates g where g.paused and g.scope in ('global','job:'||t.job_id,'group:'||t.resource_group,'tenant:'||t.tenant))")
expect_eq "the trigger is held by the g1 pause (claim's check)" 1 "$held"
expect_eq "held_by names group:g1, the pause holding it" "group:g1" "$(jq -r '[.held_by[].scope] | join(" ")' "$PALISADE_TEST_TMP/test_trigger_held_by_group.one")"
finish
