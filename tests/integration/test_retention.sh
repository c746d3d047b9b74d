#!/usr/bin/env bash
# Bounded storage: triggers and attempts are partitioned by scheduled_at;
# `palisade retention` creates ranges ahead and drops old ranges whose
# triggers are all terminal, and keeps (and reports) a range that still
# holds a live trigger.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "retention - ranges are created ahead; an old range of terminal triggers is dropped with its attempts (DROP, not DELETE); an old range holding a live trigger is kept and reported; G2 holds across partitions; misfires and audit_log rows past their retention are deleted in slices (a misfire range reaching past the cutoff is kept whole) and move the verify horizon; apply refuses a job whose key horizon exceeds sink.key_retention; the sink forgets keys past --key-retention (by the database's clock, whatever the sink host's) and never a key whose fence is newer"

fresh_db it_retention
expect_exit "migrate" 0 "$PAL" migrate
expect_eq "triggers is partitioned by range" "p|r" \
	"$(sql "select c.relkind::text || '|' || p.partstrat::text from pg_class c join pg_partitioned_table p on p.partrelid = c.oid where c.relname = 'triggers'")"
expect_eq "attempts too" "p" "$(sql "select relkind from pg_class where relname = 'attempts'")"
expect_eq "the migration made history, today and tomorrow" "3" "$(sql "select count(*) from palisade_partitions")"

# -- created ahead
# The migration's history range ends at today's midnight (UTC): whether this
# round (--keep 1h) may drop it depends on the time of day.  Before 01:00 it
# must keep it; an hour after midnight it must drop it; a round that straddles
# 01:00 may do either.
hist_end=$(sql "select extract(epoch from range_to)::bigint from palisade_partitions where range_from = '-infinity'")
t0=$(sql "select floor(extract(epoch from now()))::bigint")
expect_exit "a round with hourly ranges 3 days ahead" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1h
t1=$(sql "select ceil(extract(epoch from now()))::bigint")
expect_match "creates ranges" "^created triggers_p[0-9]{8}_[0-9]{6} " "$OUT"
expect_match "after reshaping the migration's empty daily ranges of today and tomorrow" \
	"reshaped triggers_p[0-9]{8}_000000 .*empty, another interval" "$OUT"
expect_eq "no daily range is left" "0" "$(sql "select count(*) from palisade_partitions where isfinite(range_from) and range_to - range_from = interval '1 day'")"
expect_eq "no gap between ranges" "0" "$(sql "select count(*) from (select range_from, lag(range_to) over (order by range_from) p from palisade_partitions) x where p is not null and p <> range_from")"
n=$(sql "select count(*) from palisade_partitions where isfinite(range_from) and range_to - range_from = interval '1 hour'")
check "hourly ranges exist up to now + 3 days ($n)" [ "$n" -ge 20 ]
expect_eq "each range has its attempts partition attached" "0" \
	"$(sql "select count(*) from palisade_partitions p where not exists (select 1 from pg_inherits i where i.inhrelid = p.attempts_part::regclass and i.inhparent = 'attempts'::regclass)")"
if [ "$hist_end" -le $((t0 - 3600)) ]; then
	expect_eq "the history range was empty and ended more than an hour ago: dropped" "0" \
		"$(sql "select count(*) from palisade_partitions where range_from = '-infinity'")"
	expect_match "and said so" "dropped triggers_phistory" "$OUT"
elif [ "$hist_end" -gt $((t1 - 3600)) ]; then
	# before 01:00 UTC: the history ended less than --keep ago
	expect_eq "the history range ended less than an hour ago: kept" "1" \
		"$(sql "select count(*) from palisade_partitions where range_from = '-infinity'")"
	if grep -q "dropped triggers_phistory" <<<"$OUT"; then fail "and not dropped: $OUT"; else pass "and not dropped"; fi
	expect_eq "with no keep at all, it goes" "dropped triggers_phistory" \
		"$(sql "select action || ' ' || part from palisade_retention('1 hour', '3 days', '0', 1000) where part = 'triggers_phistory'")"
else
	sql "select 1 from palisade_retention('1 hour', '3 days', '0', 1000)" >/dev/null
	echo "    (the round straddled 01:00 UTC: no check on the history range)"
fi
expect_exit "a second round" 0 "$PAL" retention --interval 1h --ahead 3d --keep 1h
expect_match "has nothing to create" "0 created" "$OUT"

# -- two old ranges (set up by hand: they are in the past), and the day
# after them up to today's midnight, where the rounds' ranges begin: the
# ranges stay contiguous, as the rounds make them (a range missing between
# two others is one a round dropped, and moves the horizon past it)
D=$(sql "select to_char(date_trunc('day', now() at time zone 'UTC'), 'YYYY-MM-DD')")
expect_eq "the rounds' ranges begin at today's midnight" "${D}T00:00:00Z" \
	"$(sql "select to_char(min(range_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from palisade_partitions")"
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '3 days', '${D}T00:00Z'::timestamptz - interval '2 days')" >/dev/null
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '2 days', '${D}T00:00Z'::timestamptz - interval '1 day')" >/dev/null
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '1 day', '${D}T00:00Z')" >/dev/null
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
# -- misfires and audit_log: deleted in slices by the same round
mis() { # mis FROM TO: one misfire record of ret.job over [FROM, TO]
	sql "insert into misfires (job_id, version, range_from, range_to, count, policy, reason, shard, epoch)
	     select job_id, 1, now() - interval '$1', now() - interval '$2', 3, 'skip', 'missed', shard, 1 from jobs where job_id = 'ret.job'" >/dev/null
}
sql "delete from misfires; delete from audit_log" >/dev/null
# an old range kept for a live trigger: the oldest range, before a 1-day
# cutoff, made below the days dropped above (a hole up to yesterday's
# midnight, where the ranges left begin)
sql "select palisade_partition_create('${D}T00:00Z'::timestamptz - interval '10 days', '${D}T00:00Z'::timestamptz - interval '9 days')" >/dev/null
ins "$(sql "select '${D}T05:00Z'::timestamptz - interval '10 days'")" pending
for i in 1 2 3 4 5; do mis "120 days" "100 days"; done
mis "100 days" "80 days"   # reaches past a 90-day cutoff: kept whole
mis "50 hours" "26 hours"
mis "30 hours" "20 hours"  # reaches past a 1-day cutoff: kept whole
sql "insert into audit_log (at, actor, action) values (now() - interval '100 days', 't', 'old'), (now() - interval '89 days', 't', 'young')" >/dev/null
printf 'retention: {delete_slice: 2}\n' >"$PALISADE_TEST_TMP/slice.yaml"
expect_exit "a round with 90 days for misfires and audit rows, slices of 2" 0 \
	"$PAL" retention --config "$PALISADE_TEST_TMP/slice.yaml" --interval 1h --ahead 4d --keep 1d --misfires 90d --audit 90d
expect_match "deletes the five old misfire records (three slices)" "deleted 5 misfires rows before " "$OUT"
expect_match "and the old audit row" "deleted 1 audit_log rows before " "$OUT"
expect_match "and counts both" "5 misfires and 1 audit rows deleted" "$OUT"
expect_eq "the range reaching past the cutoff and the young ones stay, untrimmed (count@hours ago)" \
	"3@1920,3@26,3@20" \
	"$(sql "select string_agg(count || '@' || round(extract(epoch from now() - range_to) / 3600), ',' order by range_to) from misfires")"
expect_eq "the young audit row stays" "young" "$(sql "select string_agg(action, ',') from audit_log")"
PMIN="select to_char(min(range_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from palisade_partitions"
expect_eq "a 90-day cutoff is older than the ranges: the horizon is the end of the hole above the oldest range, not that range's start" \
	"$(sql "select to_char(('${D}T00:00Z'::timestamptz - interval '1 day') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")" \
	"$("$PAL" retention --horizon)"
expect_exit "a round with 1 day for misfires (as long as for triggers)" 0 "$PAL" retention --interval 1h --ahead 4d --keep 1d --misfires 1d --audit 90d
expect_match "deletes the two records that ended before it" "deleted 2 misfires rows before " "$OUT"
expect_eq "keeps the one reaching past it, whole" "3@20" \
	"$(sql "select string_agg(count || '@' || round(extract(epoch from now() - range_to) / 3600), ',') from misfires")"
H1=$("$PAL" retention --horizon)
expect_eq "the horizon moved to that cutoff, past the oldest range (verify needs the misfire record of an instant)" "1" \
	"$(sql "select (('$H1'::timestamptz > ($PMIN)::timestamptz) and '$H1'::timestamptz between now() - interval '1 day 1 minute' and now() - interval '1 day')::int")"
expect_exit "verify refuses a range before it" 4 \
	"$PAL" verify --from "$(date -u -d "$H1 - 1 hour" +%Y-%m-%dT%H:%M:%SZ)" --to "$H1"
expect_exit "misfires kept shorter than triggers is refused" 64 "$PAL" retention --keep 3d --misfires 2d
expect_match "with the reason" "retention.misfires .* must be at least retention.triggers" "$OUT"
printf 'retention: {triggers: 3d, misfires: 2d}\n' >"$PALISADE_TEST_TMP/short.yaml"
expect_exit "and so is such a node config" 65 "$PAL" retention --config "$PALISADE_TEST_TMP/short.yaml"
expect_match "naming the key" "retention.misfires \(2d\) must be at least retention.triggers \(3d\)" "$OUT"

# -- the key horizon: apply and validate refuse a job the sink would forget
cat >"$PALISADE_TEST_TMP/long.yaml" <<'YAML'
jobs:
  - id: ret.long
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:9/x}
    retry: {max_attempts: 1000, backoff: {max: 1h}, max_age: 0}
YAML
cat >"$PALISADE_TEST_TMP/aged.yaml" <<'YAML'
jobs:
  - id: ret.aged
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:9/x, timeout: 10s}
    retry: {max_attempts: 1000, backoff: {max: 1h}, max_age: 10d}
YAML
expect_exit "apply refuses a job retrying for 1000 x (30s + 1h) with sink.key_retention 7d" 65 \
	"$PAL" apply "$PALISADE_TEST_TMP/long.yaml"
expect_match "naming the job, its horizon, the retention and what to change" \
	"long.yaml:[0-9]+:[0-9]+: error: job \"ret.long\" may send the same idempotency key up to .* after its instant \(catch-up 1h \+ retries .*\), longer than sink.key_retention 7d: a retry after the service forgot the key would apply the effect twice; hint: set retry.max_age" "$OUT"
expect_eq "nothing was stored" "0" "$(sql "select count(*) from jobs where job_id = 'ret.long'")"
expect_exit "validate refuses it too" 65 "$PAL" validate "$PALISADE_TEST_TMP/long.yaml"
expect_exit "a job cut by max_age 10d is refused under 7d" 65 "$PAL" validate "$PALISADE_TEST_TMP/aged.yaml"
expect_match "its horizon is max_age + timeout" "up to 10d10s after its instant .*cut to 10d" "$OUT"
printf 'sink: {key_retention: 10d}\n' >"$PALISADE_TEST_TMP/k10.yaml"
expect_exit "and still under a key retention of exactly 10d" 65 "$PAL" validate --config "$PALISADE_TEST_TMP/k10.yaml" "$PALISADE_TEST_TMP/aged.yaml"
printf 'sink: {key_retention: 11d}\n' >"$PALISADE_TEST_TMP/k11.yaml"
expect_exit "validate accepts it with sink.key_retention 11d" 0 "$PAL" validate --config "$PALISADE_TEST_TMP/k11.yaml" "$PALISADE_TEST_TMP/aged.yaml"
expect_exit "and apply stores it" 0 "$PAL" apply --config "$PALISADE_TEST_TMP/k11.yaml" "$PALISADE_TEST_TMP/aged.yaml"

# -- the sink's key retention
SINK=$PALISADE_BIN/palisade-sink
expect_exit "the sink schema" 0 "$SINK" --migrate-only --pg "$PALISADE_PG"
expect_exit "the sink refuses a key retention below its floor" 64 "$SINK" --listen 127.0.0.1:0 --pg "$PALISADE_PG" --key-retention 1h
expect_match "and says why" "key-retention \"1h\": expected a duration of at least 1d" "$OUT"
expect_exit "--help lists the option" 0 "$SINK" --help
expect_match "with its default" "--key-retention DUR .*default 7d" "$(echo "$OUT" | tr -s ' \n' ' ')"
key() { # key NAME REQUEST_AGE EFFECT_AGE LEDGER_ROWS
	sql "with k as (insert into sink_keys (idempotency_key, fence, highest, digest, seen_at, applied_at)
	       values ('$1', 5, 5, '\\x00', now() - interval '$2', now() - interval '$3') returning id)
	     insert into sink_applies (key_id, fence, chunk, applied_at)
	     select k.id, 5, c, now() - interval '$3' from k, generate_series(1, $4) c" >/dev/null
}
old_key() { # old_key NAME AGE: a key of the tables of before sink schema 6, one chunk
	sql "insert into sink_fences_v1 (resource, fence, updated_at) values ('$1', 5, now() - interval '$2');
	     insert into sink_effects_v1 (idempotency_key, fence, payload_digest, status, applied_at, updated_at)
	     values ('$1', 5, 'd', 201, now() - interval '$2', now() - interval '$2');
	     insert into sink_ledger_v1 (idempotency_key, chunk, fence, applied_at) values ('$1', 1, 5, now() - interval '$2')" >/dev/null
}
key old-a "10 days" "10 days" 2
key old-b "9 days" "9 days" 1
old_key old-v1 "8 days"
key stale-lately "1 hour" "10 days" 1   # its effect is old, but a request came an hour ago
key new-c "12 hours" "12 hours" 1
key edge "6 days 23 hours" "6 days 23 hours" 1
old_key young-v1 "1 day"
expect_exit "one pass with 7 days, slices of one key" 0 "$SINK" --retention-once --key-retention 7d --retention-slice 1 --pg "$PALISADE_PG"
expect_match "forgets the three keys older than 7 days, one of them from the old tables" \
	"retention: 3 keys forgotten \(4 ledger rows\), 2 adopted from the old tables" "$OUT"
expect_eq "... which it emptied first" "0 0 0" \
	"$(sql "select (select count(*) from sink_fences_v1), (select count(*) from sink_effects_v1), (select count(*) from sink_ledger_v1)" | tr '|' ' ')"
expect_eq "what is left: the key whose last request is newer, the young ones" "edge,new-c,stale-lately,young-v1" \
	"$(sql "select string_agg(resource, ',' order by resource) from sink_fences")"
expect_eq "their effects" "edge,new-c,stale-lately,young-v1" "$(sql "select string_agg(idempotency_key, ',' order by idempotency_key) from sink_effects")"
expect_eq "their ledger rows" "edge,new-c,stale-lately,young-v1" "$(sql "select string_agg(idempotency_key, ',' order by idempotency_key) from sink_ledger")"
expect_exit "--key-retention 0 keeps every key" 0 "$SINK" --retention-once --key-retention 0 --pg "$PALISADE_PG"
expect_eq "all four still there" "4" "$(sql "select count(*) from sink_fences")"
# the periodic pass of a running sink, and a key forgotten is a new key
start_sink --pg "$PALISADE_PG" --key-retention 1d --retention-interval 1s
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Idempotency-Key: live-k' -H 'Palisade-Fencing-Token: 7' "http://$SINK_ADDR/effects/x")
expect_eq "an effect applied" "201" "$code"
sql "update sink_keys set seen_at = now() - interval '2 days', applied_at = now() - interval '2 days' where idempotency_key = 'live-k'" >/dev/null
wait_until "the running sink forgets it within a pass" 10 bash -c "[ \"\$(psql \"\$PALISADE_PG\" -XAtqc \"select count(*) from sink_ledger where idempotency_key = 'live-k'\")\" = 0 ]"
expect_match "and counts it" 'palisade_sink_retention_deleted_total\{table="sink_keys"\} [1-9]' "$(curl -s "http://$SINK_ADMIN/metrics")"
expect_match "and publishes its retention" 'palisade_sink_key_retention_seconds 86400' "$(curl -s "http://$SINK_ADMIN/metrics")"
expect_eq "keys younger than a day stay, and the one whose last request is newer" "new-c,stale-lately" "$(sql "select string_agg(resource, ',' order by resource) from sink_fences")"
# "older" by the database's clock, which wrote seen_at: a sink host whose
# clock is 8 days ahead forgets no key used a moment ago (a late retry
# would apply its effect twice), one 8 days behind still forgets old keys
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Idempotency-Key: skew-k' -H 'Palisade-Fencing-Token: 7' "http://$SINK_ADDR/effects/x")
expect_eq "an effect applied" "201" "$code"
stop_sink # a pass of its own would hide what the skewed ones do
FT=$(faketime_lib) || fail "libfaketime installed"
LD_PRELOAD=$FT FAKETIME="+8d" "$SINK" --retention-once --key-retention 7d --pg "$PALISADE_PG" >"$PALISADE_TEST_TMP/skew.out" 2>&1
expect_eq "a sink whose clock is 8 days ahead keeps a key used a moment ago" 1 \
	"$(sql "select count(*) from sink_effects where idempotency_key = 'skew-k'")"
start_sink --pg "$PALISADE_PG" --key-retention 0
rep=$(curl -s -o /dev/null -D - -X POST -H 'Idempotency-Key: skew-k' -H 'Palisade-Fencing-Token: 7' "http://$SINK_ADDR/effects/x" | tr -d '\r' | sed -n 's/^Idempotent-Replayed: //Ip')
expect_eq "... so a retry of it is a replay, not a second effect" true "$rep"
expect_eq "... the sink applied nothing" 0 "$(sink_stat applied)"
key skew-old "10 days" "10 days" 1
LD_PRELOAD=$FT FAKETIME="-8d" "$SINK" --retention-once --key-retention 7d --pg "$PALISADE_PG" >"$PALISADE_TEST_TMP/skew.out" 2>&1
expect_eq "a sink whose clock is 8 days behind forgets a key 10 days old" 0 \
	"$(sql "select count(*) from sink_effects where idempotency_key = 'skew-old'")"
stop_sink
finish
