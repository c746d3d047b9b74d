#!/usr/bin/env bash
# Bounded storage: triggers and attempts are partitioned by scheduled_at;
# `palisade retention` creates ranges ahead and drops old ranges whose
# triggers are all terminal, and keeps (and reports) a range that still
# holds a live trigger.
source tests/integration/lib.sh
guarantee "retention - ranges are created ahead; an old range of terminal triggers is dropped with its attempts (DROP, not DELETE); an old range holding a live trigger is kept and reported; G2 holds across partitions"

fresh_db it_retention
expect_exit "migrate" 0 "$PAL" migrate
expect_eq "triggers is partitioned by range" "p|r" \
	"$(sql "select c.relkind::text || '|' || p.partstrat::text from pg_class c join pg_partitioned_table p on p.partrelid = c.oid where c.relname = 'triggers'")"
expect_eq "attempts too" "p" "$(sql "select relkind from pg_class where relname = 'attempts'")"
expect_eq "the migration made history, today and tomorrow" "3" "$(sql "select count(*) from palisade_partitions")"

# -- created ahead
expect_exit "a round with hourly ranges 3 days ahead" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1h
expect_match "creates ranges" "^created triggers_p[0-9]{8}_[0-9]{6} " "$OUT"
expect_match "after reshaping the migration's empty daily ranges of today and tomorrow" \
	"reshaped triggers_p[0-9]{8}_000000 .*empty, another interval" "$OUT"
expect_eq "no daily range is left" "0" "$(sql "select count(*) from palisade_partitions where range_to - range_from = interval '1 day'")"
expect_eq "no gap between ranges" "0" "$(sql "select count(*) from (select range_from, lag(range_to) over (order by range_from) p from palisade_partitions) x where p is not null and p <> range_from")"
n=$(sql "select count(*) from palisade_partitions where range_to - range_from = interval '1 hour'")
check "hourly ranges exist up to now + 3 days ($n)" [ "$n" -ge 20 ]
expect_eq "each range has its attempts partition attached" "0" \
	"$(sql "select count(*) from palisade_partitions p where not exists (select 1 from pg_inherits i where i.inhrelid = p.attempts_part::regclass and i.inhparent = 'attempts'::regclass)")"
expect_eq "the history range was empty and ended more than an hour ago: dropped" "0" \
	"$(sql "select count(*) from palisade_partitions where range_from = '-infinity'")"
expect_match "and said so" "dropped triggers_phistory" "$OUT"
expect_exit "a second round" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1h
expect_match "has nothing to create" "0 created" "$OUT"

# -- two old ranges (set up by hand: they are in the past)
D=$(sql "select to_char(date_trunc('day', now() at time zone 'UTC'), 'YYYY-MM-DD')")
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '3 days', '${D}T00:00Z'::timestamptz - interval '2 days')" >/dev/null
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '2 days', '${D}T00:00Z'::timestamptz - interval '1 day')" >/dev/null
cat >"$PALISADE_TEST_TMP/ret.yaml" <<'YAML'
jobs:
  - id: ret.job
    tenant: t
    group: g
    schedule: {cron: "0 0 0 1 1 ?"}
    target: {url: http://127.0.0.1:9/x}
YAML
expect_exit "apply a job" 0 "$PAL" apply "$PALISADE_TEST_TMP/ret.yaml"
ins() { # ins AT STATE: one trigger at AT in STATE, with one attempt
	sql "with t as (insert into triggers (job_id, version, scheduled_at, source, tenant, resource_group, state, due_at, shard, finished_at)
	       select job_id, 1, '$1', 'schedule', tenant, resource_group, '$2', '$1', shard, now() from jobs where job_id = 'ret.job' returning id, scheduled_at)
	     insert into attempts (trigger_id, fence, node, scheduled_at, outcome) select id, nextval('palisade_fence'), 'n', scheduled_at, 'x' from t" >/dev/null
}
old1=$(sql "select to_char(('${D}T00:00Z'::timestamptz - interval '3 days') at time zone 'UTC', 'YYYYMMDD')")
old2=$(sql "select to_char(('${D}T00:00Z'::timestamptz - interval '2 days') at time zone 'UTC', 'YYYYMMDD')")
for h in 01 02 03; do ins "$(sql "select '${D}T${h}:00Z'::timestamptz - interval '3 days'")" succeeded; done
ins "$(sql "select '${D}T04:00Z'::timestamptz - interval '3 days'")" skipped
ins "$(sql "select '${D}T01:00Z'::timestamptz - interval '2 days'")" failed
ins "$(sql "select '${D}T02:00Z'::timestamptz - interval '2 days'")" retry_wait
expect_eq "the rows sit in their ranges" "triggers_p${old1}_000000=4 triggers_p${old2}_000000=2" \
	"$(sql "select string_agg(p || '=' || n, ' ' order by p) from (select tableoid::regclass::text p, count(*) n from triggers group by 1) x")"
expect_eq "attempts beside them" "attempts_p${old1}_000000=4 attempts_p${old2}_000000=2" \
	"$(sql "select string_agg(p || '=' || n, ' ' order by p) from (select tableoid::regclass::text p, count(*) n from attempts group by 1) x")"
expect_exit "G2 across partitions: a second trigger for a plan key is refused" 1 \
	psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "insert into triggers (job_id, version, scheduled_at, source, tenant, resource_group, due_at, shard) select job_id, 1, '${D}T01:00Z'::timestamptz - interval '2 days', 'schedule', tenant, resource_group, now(), shard from jobs"
expect_match "by the plan key" "triggers_p${old2}_000000_job_id_scheduled_at_partition_idx|triggers_plan_key|duplicate key" "$OUT"

expect_exit "a round with a day's retention" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1d
expect_match "drops the all-terminal range" "dropped triggers_p${old1}_000000 " "$OUT"
expect_match "keeps the one with a live trigger" "kept triggers_p${old2}_000000 .*: 1 live triggers" "$OUT"
expect_match "and counts it" "1 kept \(1 live triggers\)" "$OUT"
expect_eq "the dropped range's tables are gone" "" "$(sql "select to_regclass('triggers_p${old1}_000000'), to_regclass('attempts_p${old1}_000000')" | tr -d '|')"
expect_eq "the live trigger and its range's history stay" "retry_wait,failed" \
	"$(sql "select string_agg(state, ',' order by state desc) from triggers")"
expect_eq "their attempts too" "2" "$(sql "select count(*) from attempts")"
expect_eq "the horizon is the oldest range left" \
	"$(sql "select to_char(('${D}T00:00Z'::timestamptz - interval '2 days') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")" \
	"$("$PAL" retention --horizon)"

H=$("$PAL" retention --horizon)
expect_exit "verify refuses a range that starts before the horizon" 4 \
	"$PAL" verify --from "$(date -u -d "$H - 1 hour" +%Y-%m-%dT%H:%M:%SZ)" --to "$H"
expect_match "with a clear message" "is before the retention horizon $H: the triggers of earlier instants may have been dropped" "$OUT"
"$PAL" verify --from "$H" --to "$(date -u -d "$H + 1 hour" +%Y-%m-%dT%H:%M:%SZ)" >"$PALISADE_TEST_TMP/v.out" 2>&1
check "verify from the horizon on is not refused" bash -c "! grep -q 'retention horizon' '$PALISADE_TEST_TMP/v.out' && grep -q '^verify: ' '$PALISADE_TEST_TMP/v.out'"

# -- once the live trigger is terminal, the next round drops its range
sql "update triggers set state = 'failed' where state = 'retry_wait'" >/dev/null
expect_exit "a round after the live trigger ended" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1d
expect_match "drops that range" "dropped triggers_p${old2}_000000 " "$OUT"
expect_eq "nothing is left of the old history" "0|0" "$(sql "select (select count(*) from triggers), (select count(*) from attempts)")"

# -- an instant beyond every range waits in the default partition and moves
far=$(sql "select max(range_to) + interval '30 minutes' from palisade_partitions")
sql "with t as (insert into triggers (job_id, version, scheduled_at, source, tenant, resource_group, due_at, shard, request_id)
       select job_id, 1, '$far', 'manual', tenant, resource_group, '$far', shard, 'far' from jobs returning id)
     insert into attempts (trigger_id, fence, node) select id, nextval('palisade_fence'), 'n' from t" >/dev/null
expect_eq "a far instant lands in the default partition" "triggers_pdefault|attempts_pdefault" \
	"$(sql "select (select tableoid::regclass from triggers), (select tableoid::regclass from attempts)")"
expect_exit "a round reaching further ahead" 0 "$PAL" retention --interval 1h --ahead 4d --keep 1d
expect_eq "moves the trigger and its attempt into the new range" "$(sql "select 'triggers_p' || to_char(date_trunc('hour', '$far'::timestamptz at time zone 'UTC'), 'YYYYMMDD_HH24MISS')")" \
	"$(sql "select (select tableoid::regclass from triggers)")"
expect_eq "with the same id and foreign key" "1" "$(sql "select count(*) from attempts a join triggers t on t.id = a.trigger_id and t.scheduled_at = a.scheduled_at where a.tableoid::regclass::text like 'attempts_p2%'")"

expect_exit "an interval longer than the retention is refused" 64 "$PAL" retention --interval 2d --keep 1d
expect_match "with the reason" "must be at least retention.partition_interval" "$OUT"
finish
