#!/usr/bin/env bash
# A stop made for an executor that lost its lease (docs/executor.md, "An
# unknown outcome never becomes failed"): `palisade pause` while a call is
# in flight, the executor dies, `palisade resume` finds the expired pausing
# lease and stops the trigger for it (pausing -> paused -> pending).  Its
# request may have been sent: the door keeps outcome_unknown and ends the
# attempt `unknown` with its key, so the next claim queries the status URL
# first and a spent budget ends `manual` with a ticket, as for the takeover
# of an expired running lease (the control).  An executor's own stop at a
# checkpoint ends its attempt as the stop with the key it sent, its outcome
# known.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - query before retry: an attempt stopped for its lost executor keeps its outcome unknown (queried first, manual not failed, its key in the ledger); a checkpoint's stop records the key it sent"
T0=$SECONDS
# the claim statements in SQL with jit off, as a node's connections have
# them: compiling them takes seconds
jitoff() { PGOPTIONS="-c jit=off" "$@"; }
fresh_db it_stop_unknown
"$PAL" migrate >/dev/null
DEAD=http://127.0.0.1:9/effects
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - id: r.ctl
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "$DEAD/x", status_url: "$DEAD/{idempotency_key}"}
    retry: {max_attempts: 2, backoff: {initial: 100ms, max: 100ms, jitter: none}}
  - id: r.pau
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "$DEAD/x", status_url: "$DEAD/{idempotency_key}"}
    retry: {max_attempts: 2, backoff: {initial: 100ms, max: 100ms, jitter: none}}
  - id: r.chk
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    idempotency_key: "{job}/k-{scheduled_at}-{partition}-{trigger}"
    target: {url: "$DEAD/x"}
  - id: r.key
    schedule: {cron: "0 0 0 1 1 ? 2099", timezone: Pacific/Kiritimati}
    idempotency_key: "{job}@{request_id}:{scheduled_at}#{scheduled_date}"
    target: {url: "$DEAD/x"}
Y
expect_exit "apply" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
# An executor's own stop at its checkpoint: one attempt in its trigger row
# (claim_batch), one in an attempts row (palisade_claim, as 0.2.0 claims),
# a key template of the job's own.
"$PAL" trigger --job r.chk --request-id k1 --reason test >/dev/null
read -r C1 F1 < <(jitoff sql "SELECT id, fence FROM palisade_claim_batch('cp', 60000, 10, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL" | tr '|' ' ')
"$PAL" trigger --job r.chk --request-id k2 --reason test >/dev/null
read -r C2 F2 < <(jitoff sql "SELECT id, fence FROM palisade_claim('cp', 60000, 10, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}') WHERE id IS NOT NULL" | tr '|' ' ')
expect_exit "pause r.chk while its calls are in flight" 0 "$PAL" pause --job r.chk --reason test
expect_eq "both stop at their checkpoint" "paused paused" \
	"$(sql "SELECT palisade_trigger_checkpoint($C1, $F1, '{\"offset\": 100}')") $(sql "SELECT palisade_trigger_checkpoint($C2, $F2, '{\"offset\": 100}')")"
at_of() { sql "SELECT to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM triggers WHERE id = $1"; }
for c in "$C1 k1 t" "$C2 k2 f"; do
	read -r id rid inrow <<<"$c"
	expect_eq "checkpoint stop ($rid, in_row $inrow): paused with the key it sent, outcome known" \
		"f|cp|paused|r.chk/k-$(at_of "$id")-0-$id/$rid|$inrow" \
		"$(sql "SELECT t.outcome_unknown, l.node, l.outcome, l.idempotency_key, l.in_row FROM attempt_ledger l JOIN triggers t ON t.id = l.trigger_id WHERE t.id = $id")"
done

"$PAL" trigger --job r.ctl --request-id c1 --reason test >/dev/null
"$PAL" trigger --job r.pau --request-id p1 --reason test >/dev/null
key_of() { sql "SELECT palisade_default_key(job_id, scheduled_at, partition, request_id) FROM triggers WHERE job_id = '$1'"; }
PKEY=$(key_of r.pau)
# node 'ghost' (an executor of this release: the attempt in its trigger
# row) claims both, sends their requests, dies; a 1 s lease
jitoff sql "SELECT id, fence, prev_state FROM palisade_claim_batch('ghost', 1000, 10, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL" >/dev/null
expect_exit "pause r.pau while its call is in flight" 0 "$PAL" pause --job r.pau --reason test
expired() { has "SELECT count(*) FROM triggers WHERE job_id = 'r.pau' AND lease_until < clock_timestamp()"; }
wait_until "the ghost's lease expires" 10 expired
expect_exit "resume r.pau (stops the attempt for its lost holder)" 0 "$PAL" resume --job r.pau --reason test
expect_eq "resumed: pending, its outcome still unknown" "pending|t" \
	"$(sql "SELECT state, outcome_unknown FROM triggers WHERE job_id = 'r.pau'")"
expect_eq "the ledger: the ghost's attempt ended unknown, its key possibly sent" "ghost|unknown|$PKEY" \
	"$(sql "SELECT l.node, l.outcome, l.idempotency_key FROM attempt_ledger l JOIN triggers t ON t.id = l.trigger_id WHERE t.job_id = 'r.pau'")"

SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
start_node ex
settled() { [ "$(sql "select count(*) from trigger_jobs where job_id IN ('r.ctl', 'r.pau') and state in ('failed', 'manual', 'succeeded')")" -eq 2 ]; }
wait_until "both triggers settle" 30 settled
stop_node ex
sql "SELECT job_id, state, outcome_unknown, last_error_class FROM trigger_jobs WHERE job_id <> 'r.chk' ORDER BY job_id" | sed 's/^/    /'
sql "SELECT t.job_id, l.fence, l.node, coalesce(l.outcome, '(open)'), coalesce(l.error_class, '-'), coalesce(l.status_queries::text, '-') FROM attempt_ledger l JOIN trigger_jobs t ON t.id = l.trigger_id WHERE t.job_id <> 'r.chk' ORDER BY l.fence" | sed 's/^/    /'
# the second attempt asked the status URL first (it answers nothing: the
# outcome stays unknown) and never called the target
second() { sql "SELECT l.node || '|' || coalesce(l.outcome, '-') || '|' || (l.status_queries IS NOT NULL) FROM attempt_ledger l JOIN trigger_jobs t ON t.id = l.trigger_id WHERE t.job_id = '$1' AND l.node = 'ex'"; }
expect_eq "control: the taken-over attempt's unknown outcome ends manual" manual \
	"$(sql "select state from trigger_jobs where job_id = 'r.ctl'")"
expect_eq "control: its second attempt queried the status first" "ex|manual|true" "$(second r.ctl)"
expect_eq "paused and resumed: the same unknown outcome ends manual, not failed" manual \
	"$(sql "select state from trigger_jobs where job_id = 'r.pau'")"
expect_eq "... its second attempt queried the status first" "ex|manual|true" "$(second r.pau)"
expect_eq "... with a ticket that says the outcome is unknown" "true" \
	"$(sql "SELECT k.evidence->>'outcome_unknown' FROM tickets k JOIN trigger_jobs t ON t.id = k.trigger_id WHERE t.job_id = 'r.pau'")"
# the key the ledger records is the one the executor renders: the date in
# the job's zone (UTC+14), the request id where the template puts it
"$PAL" trigger --job r.key --request-id q1 --reason test >/dev/null
read -r KAT KEP < <(sql "SELECT to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), extract(epoch FROM scheduled_at)::bigint FROM triggers WHERE job_id = 'r.key'" | tr '|' ' ')
expect_eq "palisade_trigger_key renders the job's template as the executor does" \
	"r.key@q1:$KAT#$(TZ=Pacific/Kiritimati date -d "@$KEP" +%F)" \
	"$(sql "SELECT palisade_trigger_key(job_id, version, scheduled_at, partition, id, request_id) FROM triggers WHERE job_id = 'r.key'")"
echo "    figure: test took $((SECONDS - T0)) s"
finish
