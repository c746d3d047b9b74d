#!/usr/bin/env bash
# A job version the executor cannot read for a moment (a connection lost
# in a network partition, a query that failed) says nothing about the
# trigger: it is handed back and claimed again, never failed as a bad spec.
# Found by the random drill (chaos/random.sh, seed 2027): a node cut off
# during its read sent the trigger to `manual` with a `bad_spec` ticket (and
# without an earlier unknown outcome it would have ended `failed`).  The
# drill switch PALISADE_FAULT_SPEC_READ=N fails the node's first N reads as
# the database would.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G3 - a transient failure to read a job version hands the trigger back (pending, retried in a second); only a missing or undecodable version fails it"

fresh_db it_spec_transient
"$PAL" migrate >/dev/null
start_sink || { finish; exit 1; }
SHARDS=2
gen_sink_jobs "$NODE_DIR/jobs.yaml" 1 "*/2 * * * * ?" t1 st
ZK_SESSION=2s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
expect_exit "apply one job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
PALISADE_FAULT_SPEC_READ=3 start_node n1
succeeded() { [ "$(sql "select count(*) from triggers where state = 'succeeded'")" -ge 4 ]; }
wait_until "four triggers succeed" 40 succeeded
stop_node n1
expect_eq "the node's first three reads failed (fault injection)" 3 \
	"$(grep -c '"event":"executor.spec_unavailable"' "$NODE_DIR/n1.log")"
expect_eq "no trigger failed or went manual" 0 \
	"$(sql "select count(*) from triggers where state in ('failed', 'manual')")"
expect_eq "no bad_spec on any trigger or attempt" "0 0" \
	"$(sql "select count(*) from triggers where last_error_class = 'bad_spec'") $(sql "select count(*) from attempt_ledger where error_class = 'bad_spec'")"
expect_eq "the handed-back attempts are recorded as deferred" 3 \
	"$(sql "select count(*) from attempt_ledger where outcome = 'deferred' and error_class = 'spec_unavailable'")"
expect_eq "every trigger that was handed back succeeded later" 0 \
	"$(sql "select count(*) from triggers t where exists (select 1 from attempt_ledger a where a.trigger_id = t.id and a.error_class = 'spec_unavailable') and t.state <> 'succeeded'")"
expect_eq "one effect per succeeded trigger at the sink" 0 \
	"$(sql "select count(*) from (select idempotency_key from sink_ledger group by 1, chunk having count(*) > 1) d")"
finish
