#!/usr/bin/env bash
# A misfire ticket's backfill runs only the (instant, partition) pairs that
# neither ran nor are to run.  A 2-partition job, misfire policy manual,
# paused 12 s (threshold 3 s).  Inside the range its resume skips:
#   T   partition 0 was running and stopped at its safe point (paused,
#       attempted): the resume runs it, it skips partition 1;
#   T2  partition 1 had an attempt and waits for its retry (retry_wait):
#       released, not skipped;
#   T3  an operator ran the whole instant by hand before the resume.
# The ticket's range covers all three; resolving it with backfill must run
# T/1, T2/0 and every other skipped pair once, and leave T/0, T2/1 and T3
# out: one effect per instant and partition.  (The partial instants are
# made as test_resume_misfire.sh makes its paused trigger: by moving the
# rows as an executor would.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a misfire ticket's backfill runs only what neither ran nor is to run: no instant and partition with two effects"

it_db
sink_up
misfire_cluster n1 "lease: 5s, heartbeat: 1s" <<YAML
jobs:
  - {id: pp.man, tenant: pp, partitions: 2, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: manual}, target: {url: "http://$SINK_ADDR/effects/pp"}}
YAML
ran() { has "select count(*) from trigger_jobs where job_id = 'pp.man' and state = 'succeeded'"; }
wait_until "the job runs" 20 ran
expect_exit "pause" 0 "$PAL" pause --job pp.man --reason test
P0=$(sql "select extract(epoch from since)::bigint from gates where scope = 'job:pp.man'")
sleep 12
held_at() { sql "select scheduled_at from trigger_jobs where job_id = 'pp.man' and state = 'pending' and source = 'schedule' and scheduled_at > to_timestamp($P0 + 1) order by scheduled_at offset $1 limit 1"; }
T=$(held_at 0)
T2=$(held_at 2)   # (offset in rows: 2 rows an instant, so T2 = T + 2 s)
T3=$(held_at 4)
id_of() { sql "select id from trigger_jobs where job_id = 'pp.man' and scheduled_at = '$1' and partition = $2"; }
K=$(id_of "$T" 0)
sql "update triggers set state = 'running', fence = nextval('palisade_fence'), lease_owner = 'gone', lease_until = clock_timestamp() + interval '1 min', attempt_count = 1 where id = $K" >/dev/null
sql "update triggers set state = 'pausing' where id = $K" >/dev/null
sql "update triggers set state = 'paused', lease_owner = NULL, lease_until = NULL where id = $K" >/dev/null
K2=$(id_of "$T2" 1)
sql "update triggers set state = 'running', fence = nextval('palisade_fence'), lease_owner = 'gone', lease_until = clock_timestamp() + interval '1 min', attempt_count = 1 where id = $K2" >/dev/null
sql "update triggers set state = 'retry_wait', lease_owner = NULL, lease_until = NULL, next_attempt_at = clock_timestamp() where id = $K2" >/dev/null
AT3=$(sql "select to_char('$T3'::timestamptz at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
expect_exit "a manual run of T3 before the resume (held: a second effect on purpose, --new-effect)" 0 "$PAL" trigger --job pp.man --at "$AT3" --request-id by-hand --new-effect --reason "deliberate"
out=$("$PAL" resume --job pp.man --reason over --config "$CLUSTER_CONF" --output json)
echo "$out" | jq -c '{released, misfired, tickets}' | sed 's/^/    | /'
TK=$(sql "select id from tickets where job_id = 'pp.man' and state = 'open'")
echo "    ticket $TK evidence: $(sql "select evidence::text from tickets where id = $TK")"
check "the ticket's range covers T, T2 and T3" \
	has "select count(*) from tickets where id = $TK and (evidence->>'range_from')::timestamptz <= '$T' and (evidence->>'range_to')::timestamptz >= '$T3'"
done_all() { [ "$(sql "select count(*) from triggers where id in ($K, $K2) and state = 'succeeded'")" -eq 2 ] &&
	[ "$(sql "select count(*) from trigger_jobs where job_id = 'pp.man' and source = 'manual' and state = 'succeeded'")" -eq 2 ]; }
wait_until "T/0 (paused at its safe point), T2/1 (retry) and the manual T3 run after the resume" 15 done_all
SK=$(sql "select count(*) from trigger_jobs where job_id = 'pp.man' and source = 'schedule' and state = 'skipped'")
RANGE="scheduled_at between (select (evidence->>'range_from')::timestamptz from tickets where id = $TK) and (select (evidence->>'range_to')::timestamptz from tickets where id = $TK)"
PAIRS=$(sql "select count(*) from trigger_jobs where job_id = 'pp.man' and source = 'schedule' and $RANGE")
echo "    figure: $SK pairs skipped by the resume, $PAIRS pairs in the ticket's range"
res=$("$PAL" tickets resolve "$TK" --action backfill --reason "run what was missed")
echo "    | $res"
expect_match "the resolve counts what it left out (T/0, T2/1, T3/0, T3/1)" "4 left out" "$res"
# the skipped pairs but T3's two, which the manual run ran
expect_eq "the ticket's backfill creates exactly the skipped pairs nothing else ran" $((SK - 2)) \
	"$(sql "select count(*) from trigger_jobs where job_id = 'pp.man' and request_id = 'ticket-$TK'")"
expect_eq "audit: backfill_ran" 4 "$(sql "select details->>'backfill_ran' from audit_log where action = 'ticket.resolve' order by id desc limit 1")"
all_ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'pp.man' and request_id = 'ticket-$TK' and state = 'succeeded'")" -eq $((SK - 2)) ]; }
wait_until "the ticket's backfill runs" 15 all_ran
key() { sql "select to_char('$1'::timestamptz at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"; }
effects() { sql "select count(*) from sink_effects where idempotency_key like 'pp.man/$(key "$1")/$2%'"; }
sql "select idempotency_key from sink_effects where idempotency_key like 'pp.man/$(key "$T")/%' or idempotency_key like 'pp.man/$(key "$T2")/%' or idempotency_key like 'pp.man/$(key "$T3")/%' order by 1" | sed 's/^/    | /'
expect_eq "T partition 0 (resumed): one effect" 1 "$(effects "$T" 0)"
expect_eq "T partition 1 (skipped, then backfilled): one effect" 1 "$(effects "$T" 1)"
expect_eq "T2 partition 0 (skipped, then backfilled): one effect" 1 "$(effects "$T2" 0)"
expect_eq "T2 partition 1 (retried): one effect" 1 "$(effects "$T2" 1)"
expect_eq "T3 partition 0 (run by hand): one effect" 1 "$(effects "$T3" 0)"
expect_eq "T3 partition 1 (run by hand): one effect" 1 "$(effects "$T3" 1)"
expect_eq "no instant and partition of the job with two effects" 0 \
	"$(sql "select count(*) from (select split_part(idempotency_key, '/', 2), split_part(idempotency_key, '/', 3) from sink_effects where idempotency_key like 'pp.man/%' group by 1, 2 having count(*) > 1) x")"
finish
