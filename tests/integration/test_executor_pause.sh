#!/usr/bin/env bash
# Pause, resume and cancel with a live executor.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G7 - a pause at each scope (job, group, tenant, all) stops new claims within one interval; resume continues from the checkpoint with a new token; a cancel racing a completion has exactly one winner"

fresh_db it_exec_pause
"$PAL" migrate >/dev/null
# debug: the sink logs each request (sink.apply: key, token, chunk, outcome)
start_sink --log-level debug || { fail "sink starts"; finish; exit 1; }
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
     idempotency_key: "{job}/{scheduled_at}/$(head -c 840 /dev/zero | tr '\0' f)",
     target: {url: "http://$SINK_ADDR/effects/longkey"}}
YAML
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node x1
wait_until "shards led" 60 all_shards_led

claims_since() { sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = '$1' and a.claimed_at > '$2'"; }
# claimed_since JOB TIME [N]: JOB has at least N (1) claims later than TIME.
claimed_since() { [ "$(claims_since "$1" "$2")" -ge "${3:-1}" ]; }
t0=$(sql "select clock_timestamp()")
both_claimed() { claimed_since p.alpha "$1" && claimed_since p.beta "$1"; }
wait_until "p.alpha and p.beta are claimed" 60 both_claimed "$t0"
for scope in "--job p.alpha" "--group ga" "--tenant ta" "--all"; do
	expect_exit "pause $scope" 0 "$PAL" pause $scope --reason "test $scope"
	t=$(sql "select clock_timestamp() + interval '1 s'")
	# The window in which p.alpha must not be claimed: until p.beta (not
	# paused) has been claimed twice after its start, however slow the box;
	# under --all nothing runs, so 3 s of wall clock.
	if [ "$scope" != "--all" ]; then
		wait_until "pause $scope: p.beta keeps running (claimed twice since)" 60 claimed_since p.beta "$t" 2
	else
		sleep 3
	fi
	expect_eq "pause $scope: no claim of p.alpha later than one interval after the pause" 0 "$(claims_since p.alpha "$t")"
	expect_exit "resume $scope" 0 "$PAL" resume $scope --reason "test $scope"
	t2=$(sql "select clock_timestamp()")
	wait_until "resume $scope: p.alpha is claimed again" 60 claimed_since p.alpha "$t2"
	expect_eq "pause $scope: audited with actor and reason" 1 "$(sql "select count(*) from audit_log where action = 'pause' and reason = 'test $scope' and actor <> ''")"
done

# The chunked job's calls are held at the sink's door (its "paused" fault:
# a request waits there, nothing applied, until released) while the test
# pauses and resumes, so no check depends on how fast the box is: the call
# is in flight for as long as the test needs it to be.
state_of() { sql "select state from triggers where id = $1"; }
# chunky_held: trigger p.chunky while the sink holds every call; sets tid
# once the trigger is claimed (its first chunk's call at or on its way to
# the sink's door).
chunky_held() {
	sink_faults '{"paused": true}'
	out=$("$PAL" trigger --job p.chunky --reason "$1" 2>&1)
	tid=$(sql "select id from trigger_jobs where job_id = 'p.chunky' order by id desc limit 1")
	wait_until "$1: the chunked trigger is claimed, its call held at the sink" 60 \
		bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = running ]"
}

# Resume continues from the checkpoint with a new token: a 6-chunk effect,
# paused while its first chunk is in flight, stops at the safe point after
# that chunk.
chunky_held "chunk test"
expect_exit "pause the chunked job while its first chunk is in flight" 0 "$PAL" pause --job p.chunky --reason "mid-way"
expect_eq "the trigger is pausing until its call returns" pausing "$(state_of "$tid")"
sink_faults '{"paused": false}'
wait_until "it stops at a safe point: paused" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = paused ]"
cp1=$(sql "select checkpoint from triggers where id = $tid")
fence1=$(sql "select fence from triggers where id = $tid")
expect_eq "paused with the checkpoint of its first chunk" '"1"' "$cp1"
echo "    paused at checkpoint $cp1 (token $fence1)"
expect_exit "resume the chunked job" 0 "$PAL" resume --job p.chunky --reason "go on"
wait_until "the chunked trigger completes after resume" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
check "it continued with a new, larger token" [ "$(sql "select fence from triggers where id = $tid")" -gt "$fence1" ]
key=$(sql "select idempotency_key from attempt_ledger where trigger_id = $tid and idempotency_key is not null limit 1")
expect_eq "each of the 6 chunks was applied exactly once" "6|6" "$(sql "select count(*), count(distinct chunk) from sink_ledger where idempotency_key = '$key'")"
# the sink ledger keeps one row per key and chunk, so a chunk sent again is a
# replay it does not record: the sink's own request log tells
sent=$(python3 - "$NODE_DIR/sink.log" "$key" "$fence1" <<'PY'
import json, sys
log, key, fence1 = sys.argv[1], sys.argv[2], int(sys.argv[3])
chunks = []
for line in open(log, errors="replace"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "sink.apply" and e.get("key") == key and e.get("token", 0) > fence1:
        chunks.append(e["chunk"])
print(" ".join(map(str, sorted(set(chunks)))))
PY
)
expect_eq "the resumed attempt sent chunks 2..6 only (its first request carried the checkpoint)" "2 3 4 5 6" "$sent"

# A resume that arrives before the safe point: the pause is asked while a
# chunk is in flight, the resume lands while the trigger is still pausing.
# One resume is enough: the trigger goes back to running and its executor
# carries on under the same token (no second resume, no new claim).
chunky_held "resume before the safe point"
fence1=$(sql "select fence from triggers where id = $tid")
expect_exit "pause while its chunk is in flight" 0 "$PAL" pause --job p.chunky --reason "brief"
st_paused=$(state_of "$tid")
expect_exit "resume at once" 0 "$PAL" resume --job p.chunky --reason "changed my mind"
expect_eq "the pause was caught before the safe point, and resume put it back to running" "pausing running" \
	"$st_paused $(state_of "$tid")"
sink_faults '{"paused": false}'
wait_until "it completes without a second resume" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
expect_eq "under the same token, in one attempt" "$fence1|1" "$(sql "select t.fence, count(a.*) from triggers t join attempt_ledger a on a.trigger_id = t.id where t.id = $tid group by 1")"
key=$(sql "select idempotency_key from attempt_ledger where trigger_id = $tid and idempotency_key is not null limit 1")
expect_eq "each of the 6 chunks was applied exactly once" "6|6" "$(sql "select count(*), count(distinct chunk) from sink_ledger where idempotency_key = '$key'")"

# Cancel racing completion: a slow sink, cancel every in-flight trigger of a job.
sink_faults '{"delay_ms": 300}'
wait_until "p.beta has a call in flight" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc \"select count(*) from trigger_jobs where job_id = 'p.beta' and state = 'running'\")\" -gt 0 ]"
expect_exit "cancel p.beta while calls are in flight" 0 "$PAL" cancel --job p.beta --reason "race"
sink_faults '{"delay_ms": 0}'
wait_until "every cancel of p.beta is decided (no trigger left cancelling)" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc \"select count(*) from trigger_jobs where job_id = 'p.beta' and state = 'cancelling'\")\" = 0 ]"
expect_eq "no trigger of p.beta is left in cancelling" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'p.beta' and state = 'cancelling' and lease_until < clock_timestamp()")"
echo "    figure: p.beta after the cancel race: $(sql "select string_agg(state || '=' || n, ' ') from (select state, count(*) n from trigger_jobs where job_id = 'p.beta' group by 1) x")"
expect_eq "every cancelled trigger's attempts ended cancelled or without a success commit" 0 \
	"$(sql "select count(*) from trigger_jobs t where t.job_id = 'p.beta' and t.state = 'cancelled' and exists (select 1 from attempt_ledger a where a.trigger_id = t.id and a.outcome = 'succeeded')")"

# Not about pausing (this file has the cheapest live executor and sink): the
# longest key a valid job can expand to (docs/protocol.md: 1000 bytes) goes
# through the executor's header and the sink whole, and applies.  A manual
# run's key is the template's (871 bytes at most: 9 + 1 + 20 + 1 + 840)
# followed by "/" and its request id (128 bytes at most).
out=$("$PAL" trigger --job p.longkey --request-id "$(head -c 128 /dev/zero | tr '\0' r)" --reason "long key" 2>&1)
tid=$(sql "select id from trigger_jobs where job_id = 'p.longkey' order by id desc limit 1")
wait_until "a trigger with a 1000-byte idempotency key succeeds" 60 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select state from triggers where id = $tid')\" = succeeded ]"
expect_eq "the sink stored the key whole: the one the attempt recorded" "1000|1" \
	"$(sql "select length(e.idempotency_key), count(*) from sink_effects e join attempt_ledger a on a.idempotency_key = e.idempotency_key where a.trigger_id = $tid group by 1")"
finish
