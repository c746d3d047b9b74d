#!/usr/bin/env bash
# Pause, resume and cancel with a live executor.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 - a pause at each scope (job, group, tenant, all) stops new claims within one interval; resume continues from the checkpoint with a new token; a cancel racing a completion has exactly one winner"

fresh_db it_exec_pause
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=4 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=4
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: p.alpha, tenant: ta, group: ga, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/alpha"}}
  - {id: p.beta, tenant: tb, group: gb, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/beta"}}
  - {id: p.chunky, tenant: tc, group: gc, schedule: {cron: "0 0 0 1 1 ? 2099"},
     target: {url: "http://$SINK_ADDR/effects/chunky?chunks=6", status_url: "http://$SINK_ADDR/effects/{idempotency_key}"}}
  - {id: p.longkey, tenant: td, group: gd, schedule: {cron: "0 0 0 1 1 ? 2099"},
     idempotency_key: "{job}/{scheduled_at}/$(head -c 969 /dev/zero | tr '\0' f)",
     target: {url: "http://$SINK_ADDR/effects/longkey"}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node x1
wait_until "shards led" 20 all_shards_led
sleep 3

claims_since() { sql "select count(*) from attempts a join triggers t on t.id = a.trigger_id where t.job_id = '$1' and a.claimed_at > '$2'"; }
for scope in "--job p.alpha" "--group ga" "--tenant ta" "--all"; do
	expect_exit "pause $scope" 0 "$PAL" pause $scope --reason "test $scope"
	t=$(sql "select clock_timestamp() + interval '1 s'")
	sleep 3
	expect_eq "pause $scope: no claim of p.alpha later than one interval after the pause" 0 "$(claims_since p.alpha "$t")"
	if [ "$scope" != "--all" ]; then
		check "pause $scope: p.beta keeps running" [ "$(claims_since p.beta "$t")" -gt 0 ]
	fi
	expect_exit "resume $scope" 0 "$PAL" resume $scope --reason "test $scope"
	t2=$(sql "select clock_timestamp()")
	wait_until "resume $scope: p.alpha is claimed again" 10 bash -c "[ \$(psql '$PALISADE_PG' -XAtqc \"select count(*) from attempts a join triggers t on t.id = a.trigger_id where t.job_id = 'p.alpha' and a.claimed_at > '$t2'\") -gt 0 ]"
	expect_eq "pause $scope: audited with actor and reason" 1 "$(sql "select count(*) from audit_log where action = 'pause' and reason = 'test $scope' and actor <> ''")"
done

# Resume continues from the checkpoint with a new token: a 6-chunk effect,
# slowed down, paused after its first chunk.
sink_faults '{"delay_ms": 400}'
out=$("$PAL" trigger --job p.chunky --reason "chunk test" 2>&1)
tid=$(sql "select id from triggers where job_id = 'p.chunky' order by id desc limit 1")
wait_until "the chunked trigger stored a checkpoint" 10 bash -c "[ -n \"\$(psql '$PALISADE_PG' -XAtqc 'select checkpoint from triggers where id = $tid and checkpoint is not null')\" ]"
expect_exit "pause the chunked job" 0 "$PAL" pause --job p.chunky --reason "mid-way"
wait_until "it stops at a safe point: paused with its checkpoint" 10 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = paused ]"
cp1=$(sql "select checkpoint from triggers where id = $tid")
fence1=$(sql "select fence from triggers where id = $tid")
echo "    paused at checkpoint $cp1 (token $fence1)"
sink_faults '{"delay_ms": 0}'
expect_exit "resume the chunked job" 0 "$PAL" resume --job p.chunky --reason "go on"
wait_until "the chunked trigger completes after resume" 20 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
check "it continued with a new, larger token" [ "$(sql "select fence from triggers where id = $tid")" -gt "$fence1" ]
key=$(sql "select idempotency_key from attempts where trigger_id = $tid and idempotency_key is not null limit 1")
expect_eq "each of the 6 chunks was applied exactly once" "6|6" "$(sql "select count(*), count(distinct chunk) from sink_ledger where idempotency_key = '$key'")"
check "the resumed attempt started past chunk 1 (its first request carried the checkpoint)" [ "$(sql "select count(*) from attempts where trigger_id = $tid")" -ge 2 ]

# A resume that arrives before the safe point: the pause is asked while a
# chunk is in flight, the resume lands while the trigger is still pausing.
# One resume is enough: the trigger goes back to running and its executor
# carries on under the same token (no second resume, no new claim).
sink_faults '{"delay_ms": 1500}'
out=$("$PAL" trigger --job p.chunky --reason "resume before the safe point" 2>&1)
tid=$(sql "select id from triggers where job_id = 'p.chunky' order by id desc limit 1")
wait_until "the chunked trigger finished its first chunk" 15 bash -c "[ -n \"\$(psql '$PALISADE_PG' -XAtqc 'select checkpoint from triggers where id = $tid and checkpoint is not null')\" ]"
fence1=$(sql "select fence from triggers where id = $tid")
expect_exit "pause while its next chunk is in flight" 0 "$PAL" pause --job p.chunky --reason "brief"
st_paused=$(sql "select state from triggers where id = $tid")
expect_exit "resume at once" 0 "$PAL" resume --job p.chunky --reason "changed my mind"
expect_eq "the pause was caught before the safe point, and resume put it back to running" "pausing running" \
	"$st_paused $(sql "select state from triggers where id = $tid")"
sink_faults '{"delay_ms": 0}'
wait_until "it completes without a second resume" 20 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
expect_eq "under the same token, in one attempt" "$fence1|1" "$(sql "select t.fence, count(a.*) from triggers t join attempts a on a.trigger_id = t.id where t.id = $tid group by 1")"
key=$(sql "select idempotency_key from attempts where trigger_id = $tid and idempotency_key is not null limit 1")
expect_eq "each of the 6 chunks was applied exactly once" "6|6" "$(sql "select count(*), count(distinct chunk) from sink_ledger where idempotency_key = '$key'")"

# Cancel racing completion: a slow sink, cancel every in-flight trigger of a job.
sink_faults '{"delay_ms": 300}'
sleep 3
expect_exit "cancel p.beta while calls are in flight" 0 "$PAL" cancel --job p.beta --reason "race"
sink_faults '{"delay_ms": 0}'
sleep 3
expect_eq "no trigger of p.beta is left in cancelling" 0 "$(sql "select count(*) from triggers where job_id = 'p.beta' and state = 'cancelling' and lease_until < clock_timestamp()")"
echo "    figure: p.beta after the cancel race: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from triggers where job_id = 'p.beta' group by 1) x")"
expect_eq "every cancelled trigger's attempts ended cancelled or without a success commit" 0 \
	"$(sql "select count(*) from triggers t where t.job_id = 'p.beta' and t.state = 'cancelled' and exists (select 1 from attempts a where a.trigger_id = t.id and a.outcome = 'succeeded')")"

# Not about pausing (this file has the cheapest live executor and sink): the
# longest key a valid job can expand to (docs/protocol.md: 1000 bytes) goes
# through the executor's header and the sink whole, and applies.
out=$("$PAL" trigger --job p.longkey --reason "long key" 2>&1)
tid=$(sql "select id from triggers where job_id = 'p.longkey' order by id desc limit 1")
wait_until "a trigger with a 1000-byte idempotency key succeeds" 15 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
expect_eq "the sink stored the key whole: the one the attempt recorded" "1000|1" \
	"$(sql "select length(e.idempotency_key), count(*) from sink_effects e join attempts a on a.idempotency_key = e.idempotency_key where a.trigger_id = $tid group by 1")"
finish
