#!/usr/bin/env bash
# A job in shadow, planned ahead, is retired (`delete`: its shadow rows
# stay shadow, and a cut-over leaves a retired job's alone) and applied
# again with another schedule.  The re-apply's sweep cancels the retired
# version's shadow rows after the new version's switch point, as it
# cancels pending ones, so a cut-over of the job afterwards runs only the
# new version's instants: none at an instant no version of the job fires.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a retired-and-reapplied job in shadow fires only its new version's instants after the cut-over"
fresh_db it_shadow_retired_reapplied
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=30s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
start_node f1
wait_until "shards led" 40 all_shards_led
J=sr.job-1
gen_sink_jobs "$NODE_DIR/v1.yaml" 1 "0/2 * * * * ?" t1 sr "mode: shadow"
expect_exit "apply v1 (even seconds, shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml"
ahead() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J' and state = 'shadow' and scheduled_at > now() + interval '15 s'")" -ge 1 ]; }
wait_until "v1 planned ahead (shadow)" 15 ahead
expect_exit "delete the job" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason gone $J
gen_sink_jobs "$NODE_DIR/v2.yaml" 1 "1/2 * * * * ?" t1 sr "mode: shadow"
expect_exit "apply it again (odd seconds, shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v2.yaml"
A=$(date +%s)
sleep 2
echo "    states by version: $(sql "select string_agg(version || ':' || state || '=' || n, ' ') from (select version, state, count(*) n from trigger_jobs where job_id = '$J' group by 1, 2 order by 1, 2) s")"
expect_eq "no shadow row of the retired version after the new one's switch point" 0 \
	"$(sql "select count(*) from trigger_jobs t join job_versions v on v.job_id = t.job_id and v.version = 3 where t.job_id = '$J' and t.version = 1 and t.state = 'shadow' and t.scheduled_at > v.effective_from")"
expect_exit "cut the job over (100 %, now)" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job $J --percent 100 --at "$(iso $(date +%s))" --reason go
sleep 35
sql "select version, extract(epoch from scheduled_at - now())::int, state, coalesce(last_error_class, '') from trigger_jobs where job_id = '$J' and version = 1 order by scheduled_at" | sed "s/^/      /"
echo "    states by version: $(sql "select string_agg(version || ':' || state || '=' || n, ' ') from (select version, state, count(*) n from trigger_jobs where job_id = '$J' group by 1, 2 order by 1, 2) s")"
expect_eq "no even-second (retired v1) instant after the re-apply ran" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = '$J' and version = 1 and state in ('pending', 'running', 'succeeded', 'retry_wait') and scheduled_at > to_timestamp($A)")"
expect_eq "no effect at an even second" 0 \
	"$(sql "select count(*) from triggers t where t.job_id = '$J' and extract(second from t.scheduled_at)::int % 2 = 0 and t.state = 'succeeded'")"
finish
