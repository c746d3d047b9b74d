#!/usr/bin/env bash
# Retention must not drop what the dependency planner still reads.  A
# dependent job decides its instant t from its upstream's trigger at t and
# the upstream's misfire ranges, above its own watermark; while it is held
# back (its controller down, its upstream not reached, a long `within`),
# a retention round past retention.triggers must keep every range that
# holds an upstream trigger above that watermark, and every upstream
# misfire row ending above it, or the dependent job's instants there get
# no trigger and no misfire row (lost silently) or a false upstream_failed
# row (a misfire range of the upstream over instants whose triggers were
# dropped).  A range nobody reads any more goes, with or without a
# dependent job elsewhere; once the dependent job decided its instants the
# kept range goes too.
#
# The ranges, from D (today's midnight, UTC): R1 [D-3d, D-2d), R2 [D-2d,
# D-1d), R3 [D-1d, M), then the round's hourly ones from M (this hour).
# ra.up fires hourly and every trigger succeeded; ra.down (after ra.up,
# within 30d) decided up to W = R2 - 30 min, then its controller stopped.
# ra.up's misfire rows in R2: one over 6 instants that have triggers (a
# quarantined re-record), one over 3 instants without.  ra.down2 depends on
# ra.quiet, which has no trigger at all: it holds nothing back.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 across retention: a range or misfire row a dependent job still reads above its watermark is kept (and reported, naming the job) until the job decided its instants; each upstream instant above the watermark then is one trigger or one misfire row of the dependent job, upstream_failed only where the upstream really misfired"

fresh_db it_retention_after
expect_exit "migrate" 0 "$PAL" migrate
old_ranges "3 days"
R1=$F
cat >"$NODE_DIR/j.yaml" <<'YAML'
jobs:
  - {id: ra.up, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/up"}}
  - {id: ra.down, after: [{job: ra.up, within: 30d}], target: {url: "http://127.0.0.1:9/down"}}
  - {id: ra.quiet, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/quiet"}}
  - {id: ra.down2, after: [{job: ra.quiet}], target: {url: "http://127.0.0.1:9/down2"}}
YAML
expect_exit "apply an hourly job and its dependent job" 0 "$PAL" apply "$NODE_DIR/j.yaml"
# activated long ago, as controllers would have; every shard led at epoch 1
sql "update job_versions set activated_at = '$D'::timestamptz - interval '9 days', activated_epoch = 1,
            effective_from = '$D'::timestamptz - interval '9 days' - interval '1 second'" >/dev/null
sql "update jobs set active_version = 1" >/dev/null
sql "insert into shards (shard_id, epoch, watermark) select distinct shard, 1, now() from jobs
     on conflict (shard_id) do update set epoch = 1, watermark = now()" >/dev/null
SHARD=$(sql "select shard from jobs where job_id = 'ra.down'")
SHARD2=$(sql "select shard from jobs where job_id = 'ra.down2'")
# ra.up's triggers, one an hour from R1 up to M, all succeeded but the
# instants R2+10h..R2+12h, which have none (misfired)
sql "insert into triggers (job_id, version, scheduled_at, source, tenant, resource_group, state, due_at, shard, finished_at)
     select job_id, 1, g, 'schedule', tenant, resource_group, 'succeeded', g, shard, g + interval '1 minute'
     from jobs, generate_series('$R1'::timestamptz, '$M'::timestamptz - interval '1 hour', interval '1 hour') g
     where job_id = 'ra.up' and g not between '$R2'::timestamptz + interval '10 hours' and '$R2'::timestamptz + interval '12 hours'" >/dev/null
sql "insert into misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
     select 'ra.up', 1, '$R2'::timestamptz + interval '1 hour', '$R2'::timestamptz + interval '6 hours', 6, 'fire_once', 'quarantined', shard, 1
       from jobs where job_id = 'ra.up'
     union all
     select 'ra.up', 1, '$R2'::timestamptz + interval '10 hours', '$R2'::timestamptz + interval '12 hours', 3, 'fire_once', 'quarantined', shard, 1
       from jobs where job_id = 'ra.up'" >/dev/null
sql "insert into after_watermarks (job_id, watermark, shard, epoch) values
     ('ra.down', '$R2'::timestamptz - interval '30 minutes', $SHARD, 1),
     ('ra.down2', '$R1'::timestamptz - interval '1 hour', $SHARD2, 1)" >/dev/null
W=$(sql "select watermark from after_watermarks where job_id = 'ra.down'")
part() { echo "triggers_p$(date -u -d "$1" +%Y%m%d)_000000"; }

# ra.up's instants above W (from R2 up to M): up_t, it had a trigger there;
# ra.down's decisions
INST="with g as (select t,
         t not between '$R2'::timestamptz + interval '10 hours' and '$R2'::timestamptz + interval '12 hours' as up_t,
         (select count(*) from triggers x where x.job_id = 'ra.down' and x.scheduled_at = t) as dn_t,
         (select count(*) from misfires m where m.job_id = 'ra.down' and t between m.range_from and m.range_to) as dn_m,
         (select count(*) from misfires m where m.job_id = 'ra.down' and m.reason = 'upstream_failed'
                   and t between m.range_from and m.range_to) as dn_f
        from generate_series('$R2'::timestamptz, '$M'::timestamptz - interval '1 hour', interval '1 hour') t)"
# what ra.down's controller would decide now, rolled back: instants lost
# (neither a trigger nor a misfire row), instants with a false
# upstream_failed (ra.up has a trigger there), and real ones
peek() {
	sql_run "peek: palisade_plan_after, rolled back" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "begin" -c "select 1 from palisade_plan_after($SHARD, 1)" \
		-c "$INST select count(*) filter (where dn_t + dn_m = 0) || ' ' || count(*) filter (where dn_f > 0 and up_t)
		           || ' ' || count(*) filter (where dn_f > 0 and not up_t) from g" -c "rollback" | sed -n 2p
}
expect_eq "before any round ra.down would decide every instant: 0 lost, 0 false upstream_failed, 3 real" "0 0 3" "$(peek)"
WS=$(sql "select to_char('$W'::timestamptz at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")

expect_exit "a round keeping two hours of triggers" 0 \
	"$PAL" retention --interval 1h --ahead 1d --keep 2h --misfires 90d --audit 90d
echo "$OUT" | sed 's/^/    | /'
expect_match "drops R1: ra.up's triggers there are below ra.down's watermark, ra.down2's upstream has none" \
	"dropped $(part "$R1") " "$OUT"
expect_match "keeps R2, naming the dependent job that reads it and its watermark" \
	"kept $(part "$R2") \[.*\): 0 live triggers; ra.down decides the instants of ra.up here above its watermark $WS" "$OUT"
expect_match "and counts it" "1 kept \(0 live triggers, 1 read by dependent jobs\)" "$OUT"
expect_eq "ra.up's triggers above ra.down's watermark are all there" \
	"$(sql "select count(*) - 3 from generate_series('$R2'::timestamptz, '$M'::timestamptz - interval '1 hour', interval '1 hour') g")" \
	"$(sql "select count(*) from triggers where job_id = 'ra.up' and scheduled_at > '$W'")"
expect_eq "after the round ra.down would still decide every instant: 0 lost, 0 false upstream_failed, 3 real" "0 0 3" "$(peek)"
OUT=$(sql "select action || ' ' || live from palisade_retention('1 hour', '1 day', '2 hours', 1000) where part = '$(part "$R2")'")
expect_eq "the function reports it as kept with no live trigger (what a 0.3.0 node reads)" "kept 0" "$OUT"

expect_exit "a round keeping two hours of misfires too" 0 \
	"$PAL" retention --interval 1h --ahead 1d --keep 2h --misfires 2h --audit 90d
expect_match "keeps R2 again" "kept $(part "$R2") " "$OUT"
expect_eq "ra.up's misfire rows above the watermark are kept" 2 \
	"$(sql "select count(*) from misfires where job_id = 'ra.up'")"

# ra.down's controller is back: it decides every instant above W
sql "select palisade_plan_after($SHARD, 1)" >/dev/null
expect_eq "ra.down's watermark passed every instant" 1 \
	"$(sql "select count(*) from after_watermarks where job_id = 'ra.down' and watermark >= '$M'::timestamptz - interval '1 hour'")"
expect_eq "ra.up's instants above W with neither a trigger nor a misfire row of ra.down" "" \
	"$(sql "$INST select string_agg(to_char(t, 'DD HH24:MI'), ',' order by t) from g where dn_t + dn_m = 0")"
expect_eq "instants with more than one decision" "" \
	"$(sql "$INST select string_agg(to_char(t, 'DD HH24:MI'), ',' order by t) from g where dn_t + dn_m > 1")"
expect_eq "upstream_failed exactly where ra.up has no trigger (its 3 misfired instants)" \
	"3 0" "$(sql "$INST select count(*) filter (where dn_f > 0 and not up_t) || ' ' || count(*) filter (where dn_f > 0 and up_t) from g")"

# ra.down's triggers ended; nothing reads R2 any more
sql "update triggers set state = 'cancelled', finished_at = now() where job_id = 'ra.down'" >/dev/null
expect_exit "a round after ra.down decided" 0 \
	"$PAL" retention --interval 1h --ahead 1d --keep 2h --misfires 2h --audit 90d
expect_match "drops R2" "dropped $(part "$R2") " "$OUT"
expect_eq "and ra.up's old misfire rows" 0 "$(sql "select count(*) from misfires where job_id = 'ra.up'")"

# A misfire range of ra.up reaching from below ra.down's watermark above
# it is taken whole by the planner (blocked by ra.up's triggers in it), so
# what ra.down reads starts at the range's start
sql "insert into misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
     select 'ra.up', 1, '$R3'::timestamptz, now() + interval '1 hour', 2, 'fire_once', 'quarantined', shard, 1
       from jobs where job_id = 'ra.up'" >/dev/null
expect_eq "ra.down reads ra.up and itself from the start of a range of ra.up across its watermark" \
	"ra.down ra.up true,ra.down ra.down true" \
	"$(sql "select string_agg(reader || ' ' || job_id || ' ' || (lo = '$R3'::timestamptz), ',' order by job_id desc)
	          from palisade_after_readers() where reader = 'ra.down'")"
finish
