#!/usr/bin/env bash
# Manual runs and backfills of dependent jobs (`after:`, docs/jobs.md): a
# dependent job has its first upstream's instants (the candidates the
# dependency planner decides), so
#   * `trigger --at` an instant still to come of its upstream is refused
#     (exit 4, scheduled-instant) as it is for a scheduled job: the
#     dependency planner runs that instant under the job's own key, and a
#     manual run would be a second effect at the service; so for a chain
#     (after a dependent job) and a fan-in (several upstreams, `on:
#     finished` on the second: the first upstream's instants);
#   * `backfill` of a dependent job creates a trigger at each of its first
#     upstream's instants in the range (not 0 triggers and exit 0).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G5 - trigger --at a coming instant of a dependent job (after:) is refused as a scheduled instant is, and a backfill of it runs its upstream's instants in the range"
fresh_db it_after_manual
"$PAL" migrate >/dev/null
start_sink || exit 1
F=$PALISADE_TEST_TMP/d.yaml
cat >"$F" <<YAML
jobs:
  - {id: u.up, schedule: {cron: "*/10 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/up"}}
  - {id: u.two, schedule: {cron: "*/5 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/two"}}
  - {id: u.down, after: [{job: u.up}], target: {url: "http://$SINK_ADDR/effects/down"}}
  - {id: u.chain, after: [{job: u.down}], target: {url: "http://$SINK_ADDR/effects/chain"}}
  - {id: u.fan, after: [{job: u.up}, {job: u.two, on: finished}], partitions: 2,
     target: {url: "http://$SINK_ADDR/effects/fan"}}
YAML
expect_exit "apply" 0 "$PAL" apply "$F"
SHARDS=2 write_conf "$CLUSTER_CONF"
sed -i "s/roles: \[controller\]/roles: [controller, executor]/" "$CLUSTER_CONF"
start_node r1
wait_until "u.down ran (after u.up)" 40 has "select count(*) from triggers where job_id='u.down' and state='succeeded'"
# the next instant of u.up at least 4 s away
now=$(date -u +%s); n=$(( (now / 10 + 1) * 10 )); [ $((n - now)) -lt 4 ] && n=$((n + 10))
N=$(date -u -d "@$n" +%FT%TZ)
expect_exit "trigger u.up --at $N (a coming scheduled instant) is refused" 4 "$PAL" trigger --job u.up --at "$N" --reason x
expect_exit "trigger u.down --at $N (the same coming instant, its upstream's) is refused too" 4 "$PAL" trigger --job u.down --at "$N" --reason x
expect_exit "trigger u.chain --at $N (its upstream's upstream's instant) is refused" 4 "$PAL" trigger --job u.chain --at "$N" --reason x
expect_exit "trigger u.fan --at $N (its first upstream's instant) is refused" 4 "$PAL" trigger --job u.fan --at "$N" --reason x
# u.two fires at :05 as well: not an instant of u.fan (its first upstream is u.up)
expect_exit "trigger u.fan --at N+5s (an instant of its second upstream only) runs" 0 "$PAL" trigger --job u.fan --at "$(date -u -d "@$((n + 5))" +%FT%TZ)" --reason x
expect_eq "no manual trigger of u.down, u.chain at $N" 0 "$(sql "select count(*) from triggers where job_id in ('u.down', 'u.chain') and source = 'manual'")"
sleep $(( n - $(date -u +%s) + 4 ))
expect_eq "one effect for u.down at $N at the sink" 1 "$(sql "select count(*) from sink_effects where idempotency_key like 'u.down/$N/%'")"

# backfill: from u.down's first instant to a second ago, its upstream's
# instants (u.fan: u.up's, one row per partition)
B0=$(sql "select to_char(min(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from triggers where job_id = 'u.down' and request_id is null")
B1=$(date -u -d "@$(( $(date -u +%s) - 1 ))" +%FT%TZ)
ups="select count(distinct scheduled_at) from triggers where job_id = 'u.up' and request_id is null and scheduled_at between '$B0' and '$B1'"
want=$(sql "$ups")
check "u.up has instants in [$B0, $B1] ($want)" [ "$want" -ge 2 ]
for j in u.down u.chain u.fan; do
	"$PAL" backfill --job $j --from "$B0" --to "$B1" --request-id bf-$j --reason "re-run" >"$NODE_DIR/bf-$j.out" 2>&1
	expect_eq "backfill $j exits 0" 0 "$?"
	expect_match "backfill $j names u.up's $want instants" "$want instants" "$(cat "$NODE_DIR/bf-$j.out")"
done
expect_eq "u.down: a backfill trigger at each of u.up's instants" "$want" "$(sql "select count(*) from triggers where job_id = 'u.down' and source = 'backfill' and scheduled_at in (select scheduled_at from triggers where job_id = 'u.up' and request_id is null)")"
expect_eq "u.chain: the same instants" "$want" "$(sql "select count(*) from triggers where job_id = 'u.chain' and source = 'backfill'")"
expect_eq "u.fan: the same instants, two partitions each" "$((2 * want))" "$(sql "select count(*) from triggers where job_id = 'u.fan' and source = 'backfill'")"
stop_node r1
stop_sink
finish
