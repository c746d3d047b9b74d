#!/usr/bin/env bash
# trigger --at of a dependent job's coming instant while its upstream's new
# version is stored but not activated yet (no live controller).  A plain job
# in the same state is refused (its latest version alone counts); the
# dependent job is refused as well: an instant of its upstream's stored
# version counts, since once a controller activates that version the
# upstream runs there and the dependency planner runs the job after it
# under its own key (a manual run would be a second effect).  The same for
# an upstream retired and applied again while no controller runs (its
# activated version has an `end`).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger --at of a dependent job refuses an instant its upstream's stored version fires"
badserver_cluster it_after_manual_upstream_pending 2
jobs() {
	up_jobs "$1" "$(
		cat <<YAML
  - {id: up.d, schedule: {cron: "$1"}, target: $(url log/d)}
  - {id: up.r, schedule: {cron: "$1"}, target: $(url log/r)}
  - {id: up.rb, after: [{job: up.r, within: 1h}], target: $(url log/rb)}
YAML
	)"
}
jobs "0 0 0 * * ?" | apply_jobs "apply v1 (daily)" || { finish; exit 1; }
lead_shards 20 b1 || { finish; exit 1; }
wait_until "all five activated" 20 has "select (count(*) = 5)::int from jobs where active_version = 1"
expect_exit "delete up.r (a retired upstream, applied again below)" 0 \
	"$PAL" delete --config "$CLUSTER_CONF" --reason "retire it" up.r
wait_until "up.r's retiring version activated" 20 has "select count(*) from jobs where job_id = 'up.r' and active_version = 2"
stop_all_nodes
sleep 11 # no shard row touched in the last 10 s: the apply does not wait
jobs "*/20 * * * * ?" | apply_jobs "apply v2 (every 20 s; up.r applied again), no controller running" || { finish; exit 1; }
echo "  versions: $(sql "select string_agg(job_id || ' v' || version || ' ef=' || coalesce(effective_from::text, 'NULL'), '; ' order by job_id, version) from job_versions")"
now=$(date -u +%s)
T=$(( (now + 40) / 20 * 20 ))
TS=$(date -u -d "@$T" +%FT%TZ)
echo "  T=$TS (a v2 instant, not a v1 one)"
expect_exit "control: trigger up.d (plain job) --at $TS is refused: its stored version fires it" 4 \
	"$PAL" trigger --job up.d --at "$TS" --reason x --request-id m1
"$PAL" trigger --job up.b --at "$TS" --reason x --request-id m1 >"$NODE_DIR/tr.out" 2>&1
rc=$?
sed 's/^/    trigger: /' "$NODE_DIR/tr.out"
expect_eq "trigger up.b (after up.u) --at $TS is refused: up.u's stored version fires it" 4 "$rc"
expect_eq "the refusal says the upstream's version is not activated yet" 1 \
	"$(grep -c "stored but not activated yet" "$NODE_DIR/tr.out")"
"$PAL" trigger --job up.rb --at "$TS" --reason x --request-id m1 >"$NODE_DIR/tr2.out" 2>&1
rc=$?
sed 's/^/    trigger: /' "$NODE_DIR/tr2.out"
expect_eq "trigger up.rb (after up.r, retired and applied again) --at $TS is refused" 4 "$rc"
lead_shards 20 b2 || { finish; exit 1; }
wait_until "up.u ran $TS" 60 has "select count(*) from triggers where job_id = 'up.u' and scheduled_at = '$TS' and state = 'succeeded'"
wait_until "up.b has the planner's trigger at $TS" 20 has "select count(*) from triggers where job_id = 'up.b' and scheduled_at = '$TS' and request_id is null"
sleep 3
echo "  up.b rows at $TS: $(sql "select string_agg(source || ':' || coalesce(request_id,'-') || ':' || state, ' ' order by id) from triggers where job_id = 'up.b' and scheduled_at = '$TS'")"
expect_eq "up.b has one effect at $TS" 1 \
	"$(sql "select count(*) from triggers where job_id = 'up.b' and scheduled_at = '$TS' and state in ('pending', 'running', 'succeeded')")"
wait_until "up.rb has the planner's trigger at $TS" 20 has "select count(*) from triggers where job_id = 'up.rb' and scheduled_at = '$TS' and request_id is null"
sleep 2
expect_eq "up.rb has one effect at $TS" 1 \
	"$(sql "select count(*) from triggers where job_id = 'up.rb' and scheduled_at = '$TS' and state in ('pending', 'running', 'succeeded')")"
stop_all_nodes
finish
