#!/usr/bin/env bash
# After a failover with asynchronous replication the new primary can lack
# the last commits of the old one: a trigger that was claimed and applied
# is pending again, and the `palisade_fence` sequence resumes below tokens
# the sink has already seen.  The re-claim's token is then lower than the
# one the sink holds for the key, and the sink refuses it as stale - and
# so would every later token until other claims pushed the sequence past
# (the random drill saw 60 such refusals).  The executor must hand the
# trigger back with the sink's token, the commit must move the sequence past
# it, and the next attempt must be accepted: the effect replayed once, not
# applied twice.  The failover is simulated in the database: the trigger's
# rows are put back as they were before the claim and the sequence rewound.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G4/G5 - a token sequence rewound by a failover catches up with the sink: the refused trigger is handed back, the sequence moves past the sink's token by nextval, the next attempt is accepted and the effect stays single"

it_db fence_floor
sink_up
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 2s, heartbeat: 500ms}"
apply_jobs apply <<YAML
jobs:
  - id: floor.job
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target:
      url: http://$SINK_ADDR/effects/floor
      body: '{"job": "{job}"}'
    retry: {max_attempts: 20, backoff: {initial: 200ms, max: 1s}}
YAML
state_of() { sql "select state from trigger_jobs where job_id = 'floor.job'"; }
effects() { sql "select count(*) from sink_effects where idempotency_key like 'floor.job/%'"; }
succeeded() { [ "$(state_of)" = succeeded ]; }

# The first run, with tokens around 50,000.
sql "SELECT setval('palisade_fence', 50000)" >/dev/null
start_node ex --roles executor
expect_exit "a manual trigger" 0 "$PAL" trigger --job floor.job --reason "fence floor"
wait_until "the first attempt succeeds" 20 succeeded
f1=$(sql "select fence from trigger_jobs where job_id = 'floor.job'")
expect_eq "the sink applied one effect" 1 "$(effects)"
stop_node ex

# The failover: the claim and the result are lost, the sequence is back at 10.
sql "CREATE TEMP TABLE x AS SELECT * FROM triggers WHERE job_ref = (SELECT ref FROM jobs WHERE job_id = 'floor.job');
     DELETE FROM attempts WHERE trigger_id IN (SELECT id FROM x);
     DELETE FROM triggers WHERE id IN (SELECT id FROM x);
     UPDATE x SET state = 'pending', fence = NULL, lease_owner = NULL, lease_until = NULL,
       attempt_count = 0, finished_at = NULL, last_error_class = NULL, next_attempt_at = NULL,
       first_claimed_at = NULL, first_node = NULL, first_ended_at = NULL, first_outcome = NULL,
       first_error = NULL, first_http = NULL, first_ms = NULL, first_key = NULL, first_queries = NULL;
     INSERT INTO triggers OVERRIDING SYSTEM VALUE SELECT * FROM x;
     SELECT setval('palisade_fence', 10)" >/dev/null
expect_eq "the trigger is pending again" pending "$(state_of)"
stale0=$(sink_stat stale)
start_node ex --roles executor
wait_until "the trigger succeeds again" 30 succeeded
check "the sink refused a rewound token at least once" [ "$(sink_stat stale)" -gt "$stale0" ]
f2=$(sql "select fence from trigger_jobs where job_id = 'floor.job'")
check "the accepted attempt's token ($f2) is past the sink's ($f1)" [ "$f2" -gt "$f1" ]
expect_eq "the refused attempt was handed back (stale_token, deferred)" 1 \
	"$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id
	        where t.job_id = 'floor.job' and a.error_class = 'stale_token' and a.outcome = 'deferred'" |
		awk '{print ($1 >= 1)}')"
expect_eq "still one effect at the sink (replayed, not applied again)" 1 "$(effects)"
expect_eq "the sequence stayed monotonic: no token of the triggers table repeats" 0 \
	"$(sql "select count(*) from (select fence from attempt_ledger group by fence having count(*) > 1) d")"
finish
