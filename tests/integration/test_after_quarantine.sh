#!/usr/bin/env bash
# A dependent job around a quarantined upstream: every upstream instant ends
# as exactly one of a trigger of the dependent job or a misfire row of it.
#
# q.up runs every second, q.down after it (and q.down2, two partitions:
# each decided on its own); the node is restarted twice
# with q.up's planning failing (PALISADE_FAULT_PLAN_JOB), so q.up is
# quarantined when loaded and re-records its instants from below its
# shard's watermark up to the horizon: ranges over instants that ran
# (triggers) and over its own earlier ranges, next to one-instant ranges
# of the ticks between.  Then `verify --job q.down` must pass, and fail
# naming the instants of a misfire row of q.down deleted by hand.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - no instant silently lost: each instant of a quarantined upstream (run or recorded as a misfire, in mixed and overlapping ranges) is a trigger or a misfire row of its dependent job, never both, and verify names one that is neither"

fresh_db it_after_quarantine
"$PAL" migrate >/dev/null
start_sink || exit 1
SHARDS=1 write_conf "$CLUSTER_CONF"
SHARDS=1
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: q.up, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/up", timeout: 2s}}
  - {id: q.down, after: [{job: q.up}], target: {url: "http://$SINK_ADDR/effects/down", timeout: 2s}}
  - {id: q.down2, partitions: 2, after: [{job: q.up}], target: {url: "http://$SINK_ADDR/effects/down2", timeout: 2s}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" || { finish; exit 1; }
FROM=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_node n1
wait_until "shards led" 20 all_shards_led || { finish; exit 1; }
wait_until "q.down has a trigger" 20 has "select count(*) from triggers where job_id = 'q.down'" ||
	{ finish; exit 1; }
sleep 1
stop_node n1
PALISADE_FAULT_PLAN_JOB=q.up start_node n1
wait_until "q.up quarantined" 20 has "select count(*) from misfires where job_id = 'q.up' and reason = 'quarantined'" ||
	{ finish; exit 1; }
sleep 5
stop_node n1
PALISADE_FAULT_PLAN_JOB=q.up start_node n1
sleep 7
stop_node n1

# q.up's instants (every second) after each dependent job's activation up
# to its watermark, per partition, with what each got
INST="with d as (select v.job_id, v.partitions, v.effective_from as eff, w.watermark from job_versions v
                 join after_watermarks w on w.job_id = v.job_id where v.job_id in ('q.down', 'q.down2')),
  inst as (select d.job_id, p, generate_series(date_trunc('second', d.eff) + interval '1 s', d.watermark, interval '1 s') as t
             from d, generate_series(0, d.partitions - 1) p),
  g as (select job_id, p, t,
         exists (select 1 from triggers x where x.job_id = 'q.up' and x.scheduled_at = inst.t) as up_t,
         exists (select 1 from misfires m where m.job_id = 'q.up' and m.reason <> 'excluded'
                  and inst.t between m.range_from and m.range_to) as up_m,
         (select count(*) from triggers x where x.job_id = inst.job_id and x.partition = inst.p
                  and x.scheduled_at = inst.t) as dn_t,
         (select count(*) from misfires m where m.job_id = inst.job_id and coalesce(m.partition, inst.p) = inst.p
                  and inst.t between m.range_from and m.range_to) as dn_m
        from inst)"
check "q.up has misfire ranges over instants that ran (mixed) and over each other (overlapping)" \
	has "select count(*) from misfires a where a.job_id = 'q.up' and a.reason = 'quarantined'
	      and exists (select 1 from triggers t where t.job_id = 'q.up' and t.scheduled_at between a.range_from and a.range_to)
	      and exists (select 1 from misfires b where b.job_id = 'q.up' and b.id <> a.id
	                   and b.range_from <= a.range_to and b.range_to >= a.range_from)"
echo "    q.up misfire rows: $(sql "select string_agg(to_char(range_from, 'MI:SS') || '-' || to_char(range_to, 'MI:SS') || '/' || count, ' ' order by id) from misfires where job_id = 'q.up'")"
echo "    q.down misfire rows: $(sql "select string_agg(to_char(range_from, 'MI:SS') || '-' || to_char(range_to, 'MI:SS') || '/' || count, ' ' order by id) from misfires where job_id = 'q.down'")"
check "q.down and q.down2 decided q.up's misfired instants (their watermarks passed at least 5 of them each)" \
	has "$INST select min(n) - 4 from (select job_id, p, count(*) filter (where up_m and not up_t) as n from g group by 1, 2) x having count(*) = 3"
expect_eq "q.up instants with neither a trigger nor a misfire row of a dependent job (job/partition instant)" "" \
	"$(sql "$INST select string_agg(job_id || '/' || p || ' ' || to_char(t, 'HH24:MI:SS'), ',' order by job_id, p, t) from g where (up_t or up_m) and dn_t + dn_m = 0")"
expect_eq "q.up instants with more than one decision of a dependent job (a trigger and a misfire, or two misfire rows)" "" \
	"$(sql "$INST select string_agg(job_id || '/' || p || ' ' || to_char(t, 'HH24:MI:SS'), ',' order by job_id, p, t) from g where dn_t + dn_m > 1")"
expect_eq "q.down's misfire counts add up to the instants they cover" \
	"$(sql "$INST select count(*) from g where job_id = 'q.down' and dn_m > 0")" \
	"$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'q.down'")"
expect_eq "q.down2's rows over q.up's misfire ranges are one row for both partitions" "" \
	"$(sql "select string_agg(id::text, ',') from misfires where job_id = 'q.down2' and upstream_trigger is null and partition is not null")"
TO=$(sql "select to_char(watermark at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from after_watermarks where job_id = 'q.down'")
expect_exit "verify --job q.down passes" 0 "$PAL" verify --job q.down --from "$FROM" --to "$TO"
expect_exit "verify --job q.down2 passes" 0 "$PAL" verify --job q.down2 --from "$FROM" --to "$TO"

# delete q.down's widest misfire row over instants q.up has no trigger for
ROW=$(sql "select m.id || ' ' || extract(epoch from m.range_from)::bigint || ' ' || extract(epoch from m.range_to)::bigint
             from misfires m where m.job_id = 'q.down' and m.upstream_trigger is null
            order by m.range_to - m.range_from desc, m.id limit 1")
read -r ID RF RT <<<"$ROW"
check "q.down has a misfire row of q.up's misfired instants" [ -n "$ID" ] || { finish; exit 1; }
sql "delete from misfires where id = $ID" >/dev/null
OUT=$("$PAL" verify --job q.down --from "$FROM" --to "$TO" 2>&1); RC=$?
echo "$OUT" | head -6 | sed 's/^/    | /'
check "verify fails once that row is gone (exit $RC)" [ "$RC" -ne 0 ]
expect_eq "verify counts its instants missing" "missing=$((RT - RF + 1))" "$(echo "$OUT" | grep -o 'missing=[0-9]*' | head -1)"
for t in $(seq "$RF" "$RT"); do
	expect_match "verify names $(date -u -d "@$t" +%H:%M:%S)" "$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%S)" "$OUT"
done

# A range of q.up that ends above its shard's watermark (a tick cut short
# by its row cap records a quarantined job's range up to the horizon and
# moves the watermark less): q.down's watermark moves into it first, and
# the range is decided whole once the watermark passes its end.
E=$(sql "select epoch from shards where shard_id = 0")
W=$(sql "select extract(epoch from watermark)::bigint from shards where shard_id = 0")
sql "insert into misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
     values ('q.up', 1, to_timestamp($W + 1), to_timestamp($W + 10), 10, 'fire_once', 'quarantined', 0, $E)" >/dev/null
sql "update shards set watermark = to_timestamp($W + 5) where shard_id = 0" >/dev/null
sql "select palisade_plan_after(0, $E)" >/dev/null
expect_eq "q.down's watermark moved into the range" "$((W + 5))" \
	"$(sql "select floor(extract(epoch from watermark))::bigint from after_watermarks where job_id = 'q.down'")"
sql "update shards set watermark = to_timestamp($W + 20) where shard_id = 0" >/dev/null
sql "select palisade_plan_after(0, $E)" >/dev/null
expect_eq "each instant of that range is one row of q.down (instants covered once, rows, sum of counts)" "10 1 10" \
	"$(sql "select count(*) filter (where n = 1) || ' ' || (select count(*) from misfires where job_id = 'q.down' and range_to > to_timestamp($W))
	        || ' ' || (select sum(count) from misfires where job_id = 'q.down' and range_to > to_timestamp($W))
	          from (select t, (select count(*) from misfires m where m.job_id = 'q.down' and t between m.range_from and m.range_to) as n
	                  from generate_series(to_timestamp($W + 1), to_timestamp($W + 10), interval '1 s') t) x")"
echo "    figure: test took $SECONDS s"
finish
