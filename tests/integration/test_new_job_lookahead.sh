#!/usr/bin/env bash
# A job applied while its shard's controller runs, with a lookahead (30 s)
# longer than the overlap (10 s): the shard's watermark is ~30 s ahead of
# now, and the tick activating the job plans every instant from its
# activation on (not from watermark - overlap, which left the first ~20
# instants without a trigger or a misfire).  Then a restart of the
# controller (a new leader re-scans from watermark - overlap) and a job
# applied under the new leader: no instant is decided twice, none left out,
# and `palisade verify` agrees.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 every instant of a new job from its activation on is planned once (trigger or misfire), lookahead > overlap"
fresh_db it_new_job_lookahead
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1
LOOKAHEAD=30s write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
start_node f1
wait_until "shards led" 40 all_shards_led
wm() { sql "select extract(epoch from watermark)::bigint from shards"; }
wm_ahead() { [ "$(sql "select (watermark > now() + interval '20 s')::int from shards")" = 1 ]; }
wait_until "the watermark is ahead of now by more than the overlap" 20 wm_ahead
gen_sink_jobs "$NODE_DIR/a.yaml" 1 "* * * * * ?" t1 na "mode: shadow"
gen_sink_jobs "$NODE_DIR/b.yaml" 1 "* * * * * ?" t1 nb
gen_sink_jobs "$NODE_DIR/c.yaml" 1 "* * * * * ?" t1 nc
T0=$(date +%s)
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a.yaml" >/dev/null
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml" >/dev/null

# eff J [V]: the activation of version V (default 1) of J (epoch seconds,
# empty until activated)
eff() { sql "select extract(epoch from effective_from)::bigint from job_versions where job_id = '$1' and version = ${2:-1}"; }
activated() { [ -n "$(eff "$@")" ]; }
# cover J [V]: "<instants in (activation of V, watermark] with no trigger
# and no misfire> <instants decided more than once> <first instant after
# the activation - the activation>" (cancelled rows left out: a version
# switch cancels the old version's)
cover() {
	local e; e=$(eff "$1" "${2:-1}")
	sql "with d as (select extract(epoch from scheduled_at)::bigint a from trigger_jobs
	                 where job_id = '$1' and partition = 0 and request_id is null
	                   and state <> 'cancelled'
	                union all
	                select generate_series(extract(epoch from range_from)::bigint,
	                                       extract(epoch from range_to)::bigint)
	                 from misfires where job_id = '$1')
	     select (select count(*) from generate_series($e + 1, $(wm)) g
	              where g not in (select a from d))
	            || ' ' || (select count(*) from (select a from d group by a having count(*) > 1) x)
	            || ' ' || (select min(a) - $e from d where a > $e)"
}
for J in na.job-1 nb.job-1; do
	wait_until "$J activated" 20 activated "$J"
done
sleep 3
W1=$(wm)
for J in na.job-1 nb.job-1; do
	E=$(eff "$J")
	check "$J: activated at its apply ($((E - T0)) s after it)" [ $((E - T0)) -ge 0 -a $((E - T0)) -le 3 ]
	check "$J: planned past the overlap above its activation (watermark $((W1 - E)) s after it)" \
		[ $((W1 - E)) -gt 20 ]
	expect_eq "$J: every instant in (activation, watermark] planned once, the first right after the activation" \
		"0 0 1" "$(cover "$J")"
done
expect_eq "no misfire recorded (nothing was missed)" 0 "$(sql "select count(*) from misfires")"
wait_until "nb.job-1's first instant has its effect" 20 \
	has "select count(*) from sink_effects where idempotency_key = 'nb.job-1/' || to_char(to_timestamp($(eff nb.job-1) + 1) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || '/0'"

# A restart: the new leader re-scans from watermark - overlap (the job is
# active) - nothing twice; a job applied under it is planned from its
# activation too.
stop_node f1
start_node f2
wait_until "shards led again" 40 all_shards_led
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml" >/dev/null
wait_until "nc.job-1 activated" 20 activated nc.job-1
sleep 3
W2=$(wm)
check "the watermark moved on after the restart ($W1 -> $W2)" [ "$W2" -gt "$W1" ]
for J in na.job-1 nb.job-1 nc.job-1; do
	expect_eq "$J after the restart: every instant in (activation, watermark] planned once" \
		"0 0 1" "$(cover "$J")"
done
expect_eq "no trigger row twice at one instant and partition" 0 \
	"$(sql "select count(*) from (select 1 from trigger_jobs where request_id is null group by job_id, scheduled_at, partition having count(*) > 1) x")"
wait_until "nc.job-1's first instant has its effect" 20 \
	has "select count(*) from sink_effects where idempotency_key = 'nc.job-1/' || to_char(to_timestamp($(eff nc.job-1) + 1) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || '/0'"

# A new version of an active job takes over at the watermark (nothing
# lost there); a job deleted and applied again takes over below it, at
# its apply: each instant from the takeover on planned once.
gen_sink_jobs "$NODE_DIR/b2.yaml" 1 "* * * * * ?" t1 nb "priority: 5"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b2.yaml" >/dev/null
wait_until "nb.job-1 version 2 activated" 20 activated nb.job-1 2
expect_exit "delete nc.job-1" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "new job test" nc.job-1
wait_until "nc.job-1's retirement activated" 20 activated nc.job-1 2
sleep 2
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c.yaml" >/dev/null
wait_until "nc.job-1 applied again, activated" 20 activated nc.job-1 3
sleep 3
expect_eq "nb.job-1 from its first activation on, across its version switch: every instant planned once" \
	"0 0 1" "$(cover nb.job-1 1)"
expect_eq "nb.job-1 version 2 took over at the watermark of its apply, above now" 1 \
	"$(sql "select (effective_from > created_at + interval '20 s')::int from job_versions where job_id = 'nb.job-1' and version = 2")"
expect_eq "nc.job-1 applied again: every instant from its takeover on planned once" \
	"0 0 1" "$(cover nc.job-1 3)"

from=$(date -u -d "@$((T0 - 5))" +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d "@$(($(date +%s) - 1))" +%Y-%m-%dT%H:%M:%SZ)
out=$("$PAL" verify --from "$from" --to "$to" 2>&1); rc=$?
expect_eq "verify from before the applies to now: nothing missing, nothing twice" 0 "$rc"
[ "$rc" = 0 ] || echo "$out" | sed 's/^/      /' | head -20
stop_node f2
finish
