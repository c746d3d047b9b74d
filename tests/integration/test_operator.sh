#!/usr/bin/env bash
# Operator actions against a real PostgreSQL: pause/resume at every scope,
# cancel (and its race with an executor's completion), manual runs,
# backfills, tickets and the trigger listing.  No executor runs here: the
# triggers an executor would have moved are put in place with SQL.
source tests/integration/lib.sh
guarantee "G7: every operator action is a legal edge of the trigger state machine, made by conditional updates that never overwrite an executor's commit, and leaves an audit row with actor, reason, scope and time; G2 for manual runs and backfills (a repeated request id plans nothing new)"

it_db || { echo "  migrate failed"; exit 1; }
export PALISADE_ACTOR=alice@ops
D=$PALISADE_TEST_TMP/operator
mkdir -p "$D"
cat >"$D/jobs.yaml" <<'YAML'
jobs:
  - id: billing.invoices
    tenant: billing
    group: batch
    partitions: 2
    schedule: {cron: "0 0 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/invoices}
  - id: billing.ledger
    tenant: billing
    group: ledger
    schedule: {cron: "0 15 * * * ?"}
    target: {url: http://127.0.0.1:8089/effects/ledger}
  - id: ops.heartbeat
    tenant: ops
    schedule: {cron: "*/5 * * * *"}
    target: {url: http://127.0.0.1:8089/effects/heartbeat}
YAML
"$PAL" apply --reason setup "$D/jobs.yaml" >/dev/null || { echo "  apply failed"; exit 1; }

# mk JOB STATE [LEASE_SECONDS]: insert a scheduled trigger of JOB directly in
# STATE (at a fresh instant), as an executor would have left it; prints its
# id.  Live states get a fence from the real sequence and a lease.
sql "CREATE SEQUENCE it_instant" >/dev/null   # test-only: a fresh instant per mk (mk runs in $(...))
mk() {
	local job=$1 state=$2 lease=${3:-300}
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant,
	       resource_group, state, due_at, shard, fence, lease_owner, lease_until, finished_at)
	     SELECT j.job_id, j.latest_version, a.t, 0, 'schedule', j.tenant, j.resource_group, '$state',
	       a.t, j.shard,
	       CASE WHEN '$state' IN ('running', 'pausing', 'cancelling', 'unknown') THEN nextval('palisade_fence') END,
	       CASE WHEN '$state' IN ('running', 'pausing', 'cancelling') THEN 'node-a' END,
	       CASE WHEN '$state' IN ('running', 'pausing', 'cancelling') THEN clock_timestamp() + $lease * interval '1 second' END,
	       CASE WHEN '$state' IN ('succeeded', 'failed', 'cancelled', 'skipped') THEN clock_timestamp() END
	     FROM jobs j, (SELECT timestamptz '2025-06-01 00:00Z' + nextval('it_instant') * interval '1 minute' AS t) a
	     WHERE j.job_id = '$job' RETURNING id"
}
state() { sql "SELECT state FROM triggers WHERE id = $1"; }
audits() { sql "SELECT count(*) FROM audit_log WHERE action = '$1'"; }
# an executor at its safe point: pausing -> paused (conditional on its token)
safe_point() { sql "UPDATE triggers SET state = 'paused', lease_owner = NULL, lease_until = NULL WHERE state = 'pausing'" >/dev/null; }

echo "  -- usage"
expect_exit "pause without --reason is a usage error" 64 "$PAL" pause --job billing.invoices
expect_exit "pause with two scopes is a usage error" 64 "$PAL" pause --job billing.invoices --all --reason x
expect_exit "pause --help" 0 "$PAL" pause --help
expect_exit "cancel without --reason is a usage error" 64 "$PAL" cancel --trigger 1
expect_exit "trigger without --reason is a usage error" 64 "$PAL" trigger --job billing.invoices
expect_exit "backfill without --to is a usage error" 64 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --reason x
expect_exit "an unreachable database exits 69" 69 "$PAL" pause --all --reason x --pg "host=127.0.0.1 port=1 dbname=none connect_timeout=2"

echo "  -- pause: job scope (G7)"
R1=$(mk billing.invoices running)
P1=$(mk billing.invoices pending)
W1=$(mk billing.invoices retry_wait)
X1=$(mk billing.invoices running -60)   # its executor is gone: lease expired a minute ago
O1=$(mk ops.heartbeat running)
expect_exit "pause --job" 0 "$PAL" pause --job billing.invoices --reason "invoice freeze"
expect_match "says what changed" "paused job:billing.invoices; 2 running triggers asked to pause" "$OUT"
expect_eq "the gate is stored with actor and reason" "t|invoice freeze|alice@ops" "$(sql "SELECT paused, reason, actor FROM gates WHERE scope = 'job:billing.invoices'")"
expect_eq "running -> pausing" "pausing" "$(state "$R1")"
expect_eq "pending stays pending (the claim skips gated scopes)" "pending" "$(state "$P1")"
expect_eq "retry_wait stays retry_wait" "retry_wait" "$(state "$W1")"
expect_eq "another job's running trigger is untouched" "running" "$(state "$O1")"
expect_eq "audit row with actor, scope, reason and counts" "alice@ops|job:billing.invoices|invoice freeze|2" \
	"$(sql "SELECT actor, scope, reason, details->>'running_to_pausing' FROM audit_log WHERE action = 'pause' ORDER BY id DESC LIMIT 1")"
expect_eq "the audit row carries a time" "1" "$(sql "SELECT count(*) FROM audit_log WHERE action = 'pause' AND at > now() - interval '1 minute'")"
expect_exit "pausing a paused scope again" 0 "$PAL" pause --job billing.invoices --reason "freeze extended"
expect_match "says it was already paused and shows the old reason" "already paused .*was: \"invoice freeze\"" "$OUT"
expect_eq "the reason is updated in place (one gate)" "1|freeze extended" "$(sql "SELECT count(*), max(reason) FROM gates WHERE scope LIKE 'job:%'")"
expect_eq "both pauses are audited" "2" "$(audits pause)"
expect_exit "pause of an unknown job" 3 "$PAL" pause --job no.such-job --reason x
expect_eq "creates no gate" "0" "$(sql "SELECT count(*) FROM gates WHERE scope = 'job:no.such-job'")"

echo "  -- pause: group, tenant and global scopes (G7)"
L1=$(mk billing.ledger running)
expect_exit "pause --group" 0 "$PAL" pause --group ledger --reason "ledger migration"
expect_match "one running trigger asked" "paused group:ledger; 1 running trigger asked to pause" "$OUT"
expect_eq "group gate stored" "t|ledger migration|alice@ops" "$(sql "SELECT paused, reason, actor FROM gates WHERE scope = 'group:ledger'")"
expect_eq "group member running -> pausing" "pausing" "$(state "$L1")"
expect_eq "a job outside the group stays running" "running" "$(state "$O1")"
expect_exit "pause --tenant" 0 "$PAL" pause --tenant ops --reason "ops maintenance"
expect_eq "tenant gate stored" "t|ops maintenance" "$(sql "SELECT paused, reason FROM gates WHERE scope = 'tenant:ops'")"
expect_eq "tenant member running -> pausing" "pausing" "$(state "$O1")"
G1=$(mk billing.invoices running)
P2=$(mk ops.heartbeat pending)
expect_exit "pause --all" 0 "$PAL" pause --all --reason "datacenter move"
expect_match "global gate" "paused global; 1 running trigger asked to pause" "$OUT"
expect_eq "global gate stored" "t|datacenter move|alice@ops" "$(sql "SELECT paused, reason, actor FROM gates WHERE scope = 'global'")"
expect_eq "every running trigger -> pausing" "pausing" "$(state "$G1")"
expect_eq "pending triggers stay pending under the global gate" "pending|pending" "$(state "$P1")|$(state "$P2")"
expect_eq "one audit row per pause, each with scope" "job:billing.invoices job:billing.invoices group:ledger tenant:ops global" \
	"$(sql "SELECT string_agg(scope, ' ' ORDER BY id) FROM audit_log WHERE action = 'pause'")"
expect_eq "no trigger left running anywhere" "0" "$(sql "SELECT count(*) FROM triggers WHERE state = 'running'")"

echo "  -- resume: only when no other gate covers (G7)"
safe_point   # the executors stop the pausing ones at a safe point
expect_eq "after the safe point R1 is paused" "paused" "$(state "$R1")"
expect_exit "resume --job while the global gate stays" 0 "$PAL" resume --job billing.invoices --reason "freeze over"
expect_match "reports the covering gate" "stay paused: another gate still covers them" "$OUT"
expect_eq "the job gate is deleted" "0" "$(sql "SELECT count(*) FROM gates WHERE scope = 'job:billing.invoices'")"
expect_eq "R1 stays paused: the global gate covers it" "paused" "$(state "$R1")"
expect_exit "resume --all" 0 "$PAL" resume --all --reason "move done"
expect_eq "R1 and G1 (no gate left over them) -> pending" "pending|pending" "$(state "$R1")|$(state "$G1")"
expect_eq "L1 stays paused (group:ledger)" "paused" "$(state "$L1")"
expect_eq "O1 stays paused (tenant:ops)" "paused" "$(state "$O1")"
expect_eq "the checkpoint-carrying trigger keeps its last token until the next claim" "1" "$(sql "SELECT count(*) FROM triggers WHERE id = $R1 AND fence IS NOT NULL AND lease_owner IS NULL")"
expect_exit "resume --group" 0 "$PAL" resume --group ledger --reason "migrated"
expect_eq "L1 -> pending" "pending" "$(state "$L1")"
expect_exit "resume --tenant" 0 "$PAL" resume --tenant ops --reason "maintenance over"
expect_eq "O1 -> pending" "pending" "$(state "$O1")"
expect_eq "no gate left" "0" "$(sql "SELECT count(*) FROM gates")"
expect_eq "four audited resumes with actor and reason" "4" "$(sql "SELECT count(*) FROM audit_log WHERE action = 'resume' AND actor = 'alice@ops' AND reason <> ''")"
expect_exit "resume of an unpaused scope is not an error" 0 "$PAL" resume --tenant ops
expect_match "and says so" "tenant:ops was not paused" "$OUT"

# A trigger whose executor died while pausing: resume finishes the step for it.
X2=$(mk billing.ledger running -60)
"$PAL" pause --job billing.ledger --reason "dead node" >/dev/null
expect_eq "expired running -> pausing" "pausing" "$(state "$X2")"
expect_exit "resume with an expired pausing trigger" 0 "$PAL" resume --job billing.ledger --reason "node gone"
expect_eq "pausing (lease expired) -> paused -> pending" "pending" "$(state "$X2")"
expect_match "and reports it" "lost their executor" "$OUT"
# A resume that arrives while a live trigger is still pausing (its executor
# has not reached a safe point yet): one resume is enough.  The trigger goes
# back to running under the same lease and token, so its executor's next
# checkpoint or result commits as if the pause had never been asked.
X3=$(mk billing.ledger running)
f3=$(sql "SELECT fence FROM triggers WHERE id = $X3")
"$PAL" pause --job billing.ledger --reason "again" >/dev/null
expect_eq "pause: the live trigger is pausing" "pausing" "$(state "$X3")"
expect_exit "resume while it is still pausing" 0 "$PAL" resume --job billing.ledger --reason "again over"
expect_eq "pausing -> running: same token, lease kept for its executor" "running|$f3|node-a|t" \
	"$(sql "SELECT state, fence, lease_owner, lease_until > clock_timestamp() FROM triggers WHERE id = $X3")"
expect_eq "audited as pausing_to_running (paused_to_pending and still_pausing unchanged in meaning)" "1|0|0" \
	"$(sql "SELECT details->>'pausing_to_running', details->>'paused_to_pending', details->>'still_pausing' FROM audit_log WHERE action = 'resume' ORDER BY id DESC LIMIT 1")"
expect_eq "its executor's safe point (conditional on its token) then keeps it running" "running" \
	"$(sql "UPDATE triggers SET state = CASE state WHEN 'pausing' THEN 'paused' ELSE state END WHERE id = $X3 AND fence = $f3 AND state IN ('running', 'pausing', 'cancelling') RETURNING state")"
expect_eq "and its result commits: no second resume needed" "succeeded" \
	"$(sql "UPDATE triggers SET state = 'succeeded', lease_owner = NULL, lease_until = NULL, finished_at = clock_timestamp() WHERE id = $X3 AND fence = $f3 AND state IN ('running', 'pausing', 'cancelling') RETURNING state")"
# ... but not while another gate still covers it: then it stops at its safe
# point and stays paused until that gate is resumed.
X4=$(mk billing.ledger running)
"$PAL" pause --group ledger --reason "ledger freeze" >/dev/null
"$PAL" pause --job billing.ledger --reason "job freeze" >/dev/null
expect_exit "resume the job while its group stays paused" 0 "$PAL" resume --job billing.ledger --reason "job ok"
expect_eq "a pausing trigger another gate covers stays pausing" "pausing" "$(state "$X4")"
expect_match "and is reported as still pausing" "1 pausing trigger" "$OUT"
safe_point
expect_eq "it stops at its safe point" "paused" "$(state "$X4")"
"$PAL" resume --group ledger --reason "group ok" >/dev/null
expect_eq "resuming the covering gate releases it" "pending" "$(state "$X4")"
X5=$(mk ops.heartbeat paused)
expect_exit "the guard still refuses paused -> running (G7): only pausing may go back" 1 sql_try "UPDATE triggers SET state = 'running' WHERE id = $X5"

echo "  -- cancel (G7)"
C1=$(mk ops.heartbeat pending)
expect_exit "cancel a pending trigger" 0 "$PAL" cancel --trigger "$C1" --reason "not needed"
expect_match "pending -> cancelled" "trigger $C1: pending -> cancelled" "$OUT"
expect_eq "it is cancelled with finished_at" "cancelled|t" "$(sql "SELECT state, finished_at IS NOT NULL FROM triggers WHERE id = $C1")"
expect_eq "audit row" "alice@ops|job:ops.heartbeat|not needed|pending" \
	"$(sql "SELECT actor, scope, reason, details->>'from_state' FROM audit_log WHERE action = 'cancel' ORDER BY id DESC LIMIT 1")"
C2=$(mk ops.heartbeat running)
expect_exit "cancel a running trigger" 0 "$PAL" cancel --trigger "$C2" --reason "wrong day"
expect_match "running -> cancelling" "running -> cancelling" "$OUT"
expect_eq "it is cancelling, lease kept for its executor" "cancelling|node-a" "$(sql "SELECT state, lease_owner FROM triggers WHERE id = $C2")"
expect_exit "cancel a cancelling trigger again" 0 "$PAL" cancel --trigger "$C2" --reason "again"
expect_match "already cancelling" "already cancelling" "$OUT"
C3=$(mk ops.heartbeat retry_wait)
C4=$(mk ops.heartbeat paused)
"$PAL" cancel --trigger "$C3" --reason r >/dev/null
"$PAL" cancel --trigger "$C4" --reason r >/dev/null
expect_eq "retry_wait and paused -> cancelled" "cancelled|cancelled" "$(state "$C3")|$(state "$C4")"
S1=$(mk ops.heartbeat succeeded)
n_audit=$(audits cancel)
expect_exit "cancel of a succeeded trigger is refused" 4 "$PAL" cancel --trigger "$S1" --reason "too late"
expect_match "naming its state" "already finished \(succeeded\)" "$OUT"
expect_eq "it stays succeeded" "succeeded" "$(state "$S1")"
expect_eq "a refused cancel writes no audit row" "$n_audit" "$(audits cancel)"
expect_exit "cancel of a cancelled trigger is refused" 4 "$PAL" cancel --trigger "$C1" --reason again
expect_match "naming its state" "already finished \(cancelled\)" "$OUT"
U1=$(mk ops.heartbeat unknown)
expect_exit "cancel of an unknown trigger is refused" 4 "$PAL" cancel --trigger "$U1" --reason r
expect_match "naming its state" "is unknown" "$OUT"
expect_exit "cancel of a missing trigger" 3 "$PAL" cancel --trigger 99999999 --reason r
expect_exit "cancel of a missing job" 3 "$PAL" cancel --job no.such-job --reason r
expect_exit "the guard refuses re-opening a cancelled trigger (G7)" 1 sql_try "UPDATE triggers SET state = 'pending' WHERE id = $C1"
expect_exit "the guard refuses cancelling -> running (G7)" 1 sql_try "UPDATE triggers SET state = 'running' WHERE id = $C2"

# --job: all non-terminal triggers of the job, reported per state.
fresh_job_triggers=$(sql "SELECT count(*) FROM trigger_jobs WHERE job_id = 'billing.ledger' AND state NOT IN ('succeeded','failed','cancelled','skipped')")
J1=$(mk billing.ledger pending); J2=$(mk billing.ledger retry_wait); J3=$(mk billing.ledger running)
J4=$(mk billing.ledger unknown); J5=$(mk billing.ledger succeeded)
expect_exit "cancel --job" 0 "$PAL" cancel --job billing.ledger --reason "decommission" --output json
expect_eq "pending moved" "$((fresh_job_triggers + 1))" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pending_to_cancelled"])')"
expect_eq "running -> cancelling counted" "1" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["running_to_cancelling"])')"
expect_eq "unknown reported as not cancellable" "1" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["not_cancellable"].get("unknown"))')"
expect_eq "states after cancel --job" "cancelled cancelled cancelling unknown succeeded" "$(state "$J1") $(state "$J2") $(state "$J3") $(state "$J4") $(state "$J5")"
expect_eq "audited with per-state counts" "decommission|1" "$(sql "SELECT reason, details->>'running_to_cancelling' FROM audit_log WHERE action = 'cancel' ORDER BY id DESC LIMIT 1")"

echo "  -- race: cancel vs an executor's completion, 50 rounds (G7, G4)"
cancel_wins=0 exec_wins=0 bad=0
audit_before=$(audits cancel)
for i in $(seq 1 50); do
	id=$(mk ops.heartbeat running)
	fence=$(sql "SELECT fence FROM triggers WHERE id = $id")
	# psql starts ~25 ms slower than the CLI: a random 0-50 ms head start for
	# the executor side makes both orders common.
	(sleep "0.0$((RANDOM % 6))"; "$PAL" cancel --trigger "$id" --reason race >"$D/c.out" 2>&1; echo $? >"$D/c.rc") &
	(psql "$PALISADE_PG" -XAtq -c "UPDATE triggers SET state = 'succeeded', finished_at = clock_timestamp() WHERE id = $id AND fence = $fence AND state = 'running' RETURNING id" >"$D/e.out" 2>&1) &
	wait
	crc=$(cat "$D/c.rc"); final=$(state "$id")
	c_won=0; e_won=0
	[ "$crc" = 0 ] && grep -q "running -> cancelling" "$D/c.out" && c_won=1
	[ "$(cat "$D/e.out")" = "$id" ] && e_won=1
	if [ $((c_won + e_won)) -ne 1 ]; then
		bad=$((bad + 1)); echo "    round $i: cancel rc=$crc won=$c_won, executor won=$e_won, final=$final: $(cat "$D/c.out" "$D/e.out")"
	elif [ $c_won = 1 ] && [ "$final" != cancelling ]; then
		bad=$((bad + 1)); echo "    round $i: cancel won but final state $final"
	elif [ $e_won = 1 ] && { [ "$final" != succeeded ] || [ "$crc" != 4 ] || ! grep -q "already finished (succeeded)" "$D/c.out"; }; then
		bad=$((bad + 1)); echo "    round $i: executor won but final $final, cancel rc=$crc: $(cat "$D/c.out")"
	fi
	cancel_wins=$((cancel_wins + c_won)); exec_wins=$((exec_wins + e_won))
done
echo "    (cancel won $cancel_wins, executor won $exec_wins)"
expect_eq "each of 50 rounds has exactly one winner and a final state matching it" "0" "$bad"
expect_eq "one audit row per cancel that won, none for the refused ones" "$((audit_before + cancel_wins))" "$(audits cancel)"
# The loser's later write is conditional too: an executor completing a
# cancelled-by-operator trigger with WHERE state = 'running' changes nothing.
last=$(sql "SELECT id FROM triggers WHERE state = 'cancelling' ORDER BY id DESC LIMIT 1")
if [ -n "$last" ]; then
	expect_eq "a late executor write conditional on 'running' matches nothing" "" \
		"$(sql "UPDATE triggers SET state = 'succeeded' WHERE id = $last AND state = 'running' RETURNING id")"
	expect_eq "its safe point ends it: cancelling -> cancelled is a legal edge" "cancelled" \
		"$(sql "UPDATE triggers SET state = 'cancelled', finished_at = clock_timestamp() WHERE id = $last AND state = 'cancelling' RETURNING state")"
fi

echo "  -- manual runs (G2, G7)"
expect_exit "trigger --job" 0 "$PAL" trigger --job billing.invoices --reason "customer asked" --output json
RID=$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["request_id"])')
expect_match "a generated request id is a UUID v4" "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$" "$RID"
expect_eq "one manual trigger per partition, pending, latest version, due now" "2|manual|pending|1|t" \
	"$(sql "SELECT count(*), min(source), min(state), min(version), bool_and(due_at = scheduled_at AND scheduled_at > now() - interval '1 minute') FROM triggers WHERE request_id = '$RID'")"
expect_eq "tenant and group copied from the job" "billing|batch" "$(sql "SELECT DISTINCT tenant || '|' || resource_group FROM trigger_jobs WHERE request_id = '$RID'")"
expect_eq "audited with the request id" "alice@ops|customer asked|$RID" "$(sql "SELECT actor, reason, details->>'request_id' FROM audit_log WHERE action = 'trigger' ORDER BY id DESC LIMIT 1")"
expect_exit "trigger with --request-id and --at" 0 "$PAL" trigger --job billing.invoices --request-id rerun-42 --at 2026-03-01T00:00:00Z --reason "rerun"
expect_match "prints the trigger ids" "triggers: [0-9]+ [0-9]+" "$OUT"
n=$(sql "SELECT count(*) FROM triggers")
expect_exit "the same --request-id again" 0 "$PAL" trigger --job billing.invoices --request-id rerun-42 --at 2026-03-01T00:00:00Z --reason "rerun"
expect_match "reports already exists" "already exists" "$OUT"
expect_exit "the same --request-id without --at" 0 "$PAL" trigger --job billing.invoices --request-id rerun-42 --reason "rerun"
expect_eq "creates nothing new" "$n" "$(sql "SELECT count(*) FROM triggers")"
expect_exit "the same --request-id at another instant is refused" 65 "$PAL" trigger --job billing.invoices --request-id rerun-42 --at 2026-03-02T00:00:00Z --reason "rerun"
for k in 1 2 3 4 5; do "$PAL" trigger --job ops.heartbeat --request-id burst-1 --reason burst >/dev/null 2>&1 & done
wait
expect_eq "5 concurrent runs with one request id plan one run" "1" "$(sql "SELECT count(*) FROM triggers WHERE request_id = 'burst-1'")"
sql "UPDATE jobs SET active_version = 1 WHERE job_id = 'ops.heartbeat'" >/dev/null
expect_exit "trigger of an unknown job" 3 "$PAL" trigger --job no.such-job --reason x
expect_exit "a bad request id is a usage error" 64 "$PAL" trigger --job ops.heartbeat --request-id "a b" --reason x
# Re-running an instant whose outcome is unknown could duplicate its effect:
# trigger warns, names the attempts, and wants --new-effect.
U=$(sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, state, due_at, shard, attempt_count)
         SELECT job_id, 1, '2026-02-01 00:00Z', 0, 'schedule', tenant, resource_group, 'retry_wait', '2026-02-01 00:00Z', shard, 1
         FROM jobs WHERE job_id = 'ops.heartbeat' RETURNING id")
add_attempt "$U" "fence, node, outcome, error_class, ended_at" \
	"nextval('palisade_fence'), 'node-a', 'retry_wait', 'timeout_after_send', now()"
n=$(sql "SELECT count(*) FROM triggers")
expect_exit "trigger at an instant with an unknown outcome is refused" 4 "$PAL" trigger --job ops.heartbeat --at 2026-02-01T00:00:00Z --reason again
expect_match "with a warning" "outcome is unknown" "$OUT"
expect_match "naming the trigger and its attempt" "trigger $U \(schedule, state retry_wait\): \[fence [0-9]+ retry_wait timeout_after_send\]" "$OUT"
expect_match "and the way out" "new-effect" "$OUT"
expect_eq "nothing is created" "$n" "$(sql "SELECT count(*) FROM triggers")"
sql "UPDATE triggers SET state = 'manual' WHERE id = $U" >/dev/null
sql "UPDATE attempts SET error_class = 'http_503' WHERE trigger_id = $U" >/dev/null
expect_exit "a trigger in manual counts too" 4 "$PAL" trigger --job ops.heartbeat --at 2026-02-01T00:00:00Z --reason again
expect_exit "with --new-effect it runs" 0 "$PAL" trigger --job ops.heartbeat --at 2026-02-01T00:00:00Z --new-effect --request-id new-eff-1 --reason "second effect wanted"
expect_match "still warning" "outcome is unknown" "$OUT"
expect_eq "one new manual trigger at the instant" "1" "$(sql "SELECT count(*) FROM triggers WHERE request_id = 'new-eff-1' AND scheduled_at = '2026-02-01 00:00Z'")"
expect_exit "an instant without unknown outcomes needs no flag" 0 "$PAL" trigger --job ops.heartbeat --at 2026-02-02T00:00:00Z --reason x

echo "  -- backfill (G2)"
expect_exit "backfill one hour of a 5-minute job" 0 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z --request-id bf-1 --reason "outage 2026-01-01"
expect_eq "13 instants (both ends included), one request id, source backfill" "13|1|backfill" \
	"$(sql "SELECT count(*), count(DISTINCT request_id), min(source) FROM trigger_jobs WHERE job_id = 'ops.heartbeat' AND request_id = 'bf-1'")"
expect_eq "audited with the count" "13|13" "$(sql "SELECT details->>'instants', details->>'inserted' FROM audit_log WHERE action = 'backfill' ORDER BY id DESC LIMIT 1")"
expect_exit "the same backfill again" 0 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z --request-id bf-1 --reason "again"
expect_match "creates nothing new" "0 triggers created, 13 already existed" "$OUT"
expect_exit "backfill with partitions" 0 "$PAL" backfill --job billing.invoices --from 2026-01-01T00:00:00Z --to 2026-01-01T05:00:00Z --reason "reprocess" --output json
expect_eq "6 instants x 2 partitions" "6|12" "$(echo "$OUT" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["instants"], j["inserted"], sep="|")')"
n=$(sql "SELECT count(*) FROM triggers")
expect_exit "more instants than --max is refused" 65 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z --max 5 --reason x
expect_match "and says why" "more than 5 instants" "$OUT"
expect_exit "more than the default 1000 is refused" 65 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --to 2026-01-05T00:00:00Z --reason x
expect_eq "and nothing is written" "$n" "$(sql "SELECT count(*) FROM triggers")"
# Versions: v2 changes the cron; v1 owns (eff1, eff2], v2 after; the latest before eff1.
sed -i 's#cron: "\*/5 \* \* \* \*"#cron: "*/10 * * * *"#' "$D/jobs.yaml"
"$PAL" apply --reason v2 "$D/jobs.yaml" >/dev/null
sql "UPDATE job_versions SET effective_from = CASE version WHEN 1 THEN timestamptz '2025-12-31 00:00Z' ELSE timestamptz '2026-01-02 00:30Z' END WHERE job_id = 'ops.heartbeat'" >/dev/null
expect_exit "backfill across a version change" 0 "$PAL" backfill --job ops.heartbeat --from 2026-01-02T00:00:00Z --to 2026-01-02T01:00:00Z --request-id bf-2 --reason x
expect_eq "v1 (*/5) up to its successor's effective_from, v2 (*/10) after" "1:7 2:3" \
	"$(sql "SELECT string_agg(version || ':' || n, ' ' ORDER BY version) FROM (SELECT version, count(*) n FROM triggers WHERE request_id = 'bf-2' GROUP BY 1) x")"
expect_exit "backfill before any effective_from" 0 "$PAL" backfill --job ops.heartbeat --from 2025-12-30T00:00:00Z --to 2025-12-30T00:30:00Z --request-id bf-3 --reason x
expect_eq "uses the latest version (*/10: 4 instants)" "2:4" "$(sql "SELECT string_agg(version || ':' || n, ' ') FROM (SELECT version, count(*) n FROM triggers WHERE request_id = 'bf-3' GROUP BY 1) x")"
expect_exit "trigger uses the active version over the latest" 0 "$PAL" trigger --job ops.heartbeat --request-id act-1 --reason x
expect_eq "version 1 (active) although v2 is the latest" "1" "$(sql "SELECT version FROM triggers WHERE request_id = 'act-1'")"
expect_exit "a request id of a manual run cannot name a backfill" 65 "$PAL" backfill --job ops.heartbeat --from 2026-01-01T00:00:00Z --to 2026-01-01T00:10:00Z --request-id act-1 --reason x

echo "  -- tickets (G7)"
# ticket STATE [ALLOWED]: a trigger in STATE with an open ticket, as an
# executor opens it; prints the ticket id.
ticket() {
	local tid allowed=${2:-"'retry', 'mark_succeeded', 'abandon'"}
	tid=$(mk ops.heartbeat "$1")
	sql "INSERT INTO tickets (trigger_id, job_id, reason, evidence, allowed_actions)
	     VALUES ($tid, 'ops.heartbeat', 'outcome unknown after 5 attempts',
	             '{\"error_class\": \"timeout\", \"fence\": 7}', ARRAY[$allowed]) RETURNING id"
}
K1=$(ticket manual); T1=$(sql "SELECT trigger_id FROM tickets WHERE id = $K1")
expect_exit "tickets list" 0 "$PAL" tickets list
expect_match "shows the open ticket" "^ *$K1 +open +ops.heartbeat +$T1 +manual" "$OUT"
expect_exit "tickets list --output json" 0 "$PAL" tickets --output json
expect_eq "json holds it" "$K1" "$(echo "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')"
n=$(sql "SELECT count(*) FROM triggers")
expect_exit "resolve with retry" 0 "$PAL" tickets resolve "$K1" --action retry --reason "sink was down, it is back"
expect_eq "the same trigger goes manual -> pending" "pending" "$(state "$T1")"
expect_eq "no new trigger (same idempotency key)" "$n" "$(sql "SELECT count(*) FROM triggers")"
expect_eq "the ticket is resolved with action, actor, time" "resolved|retry|alice@ops|t" "$(sql "SELECT state, resolution, actor, resolved_at IS NOT NULL FROM tickets WHERE id = $K1")"
expect_eq "audited" "alice@ops|sink was down, it is back|retry" "$(sql "SELECT actor, reason, details->>'action' FROM audit_log WHERE action = 'ticket.resolve' ORDER BY id DESC LIMIT 1")"
expect_exit "resolving it again is refused" 4 "$PAL" tickets resolve "$K1" --action retry --reason x
expect_match "already resolved" "already resolved" "$OUT"
K2=$(ticket manual); T2=$(sql "SELECT trigger_id FROM tickets WHERE id = $K2")
expect_exit "resolve with mark_succeeded and evidence" 0 "$PAL" tickets resolve "$K2" --action mark_succeeded --reason "applied per sink ledger" --evidence '{"sink_row": 9912}'
expect_eq "manual -> succeeded with finished_at" "succeeded|t" "$(sql "SELECT state, finished_at IS NOT NULL FROM triggers WHERE id = $T2")"
expect_eq "evidence stored in the ticket, original kept" "9912|timeout" "$(sql "SELECT evidence->'resolution'->'evidence'->>'sink_row', evidence->>'error_class' FROM tickets WHERE id = $K2")"
K3=$(ticket manual); T3=$(sql "SELECT trigger_id FROM tickets WHERE id = $K3")
expect_exit "resolve with abandon" 0 "$PAL" tickets resolve "$K3" --action abandon --reason "superseded"
expect_eq "manual -> failed" "failed" "$(state "$T3")"
K4=$(ticket manual "'retry', 'abandon'"); T4=$(sql "SELECT trigger_id FROM tickets WHERE id = $K4")
expect_exit "an action outside allowed_actions is refused" 65 "$PAL" tickets resolve "$K4" --action mark_succeeded --reason x
expect_match "naming the allowed ones" "allowed: retry, abandon" "$OUT"
expect_eq "ticket stays open, trigger stays manual" "open|manual" "$(sql "SELECT state FROM tickets WHERE id = $K4")|$(state "$T4")"
expect_exit "invalid evidence JSON is refused" 65 "$PAL" tickets resolve "$K4" --action retry --reason x --evidence '{oops'
expect_exit "an unknown action is a usage error" 64 "$PAL" tickets resolve "$K4" --action reboot --reason x
sql "UPDATE triggers SET state = 'pending' WHERE id = $T4" >/dev/null   # someone else moved it meanwhile
expect_exit "retry when the trigger is no longer manual is refused" 4 "$PAL" tickets resolve "$K4" --action retry --reason x
expect_match "naming its state" "is pending, not manual" "$OUT"
expect_eq "and the ticket stays open" "open" "$(sql "SELECT state FROM tickets WHERE id = $K4")"
expect_exit "resolve of a missing ticket" 3 "$PAL" tickets resolve 99999999 --action retry --reason x
# Misfire tickets (job-level), as the controller opens them for policy manual.
M1=$(sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) VALUES ('billing.invoices',
	'misfire: 3 instants missed (policy manual)', jsonb_build_object('version', 1,
	'range_from', timestamptz '2026-02-01 10:00Z', 'range_to', timestamptz '2026-02-01 12:00Z', 'count', 3, 'epoch', 5),
	ARRAY['backfill', 'abandon']) RETURNING id")
expect_exit "retry is not allowed on a misfire ticket" 65 "$PAL" tickets resolve "$M1" --action retry --reason x
expect_exit "resolve a misfire ticket with backfill" 0 "$PAL" tickets resolve "$M1" --action backfill --reason "catch up"
expect_eq "its range is planned: 3 instants x 2 partitions under request ticket-$M1" "6|3|backfill" \
	"$(sql "SELECT count(*), count(DISTINCT scheduled_at), min(source) FROM triggers WHERE request_id = 'ticket-$M1'")"
expect_eq "ticket resolved" "resolved|backfill" "$(sql "SELECT state, resolution FROM tickets WHERE id = $M1")"
M2=$(sql "INSERT INTO tickets (job_id, reason, evidence, allowed_actions) VALUES ('billing.invoices', 'misfire',
	jsonb_build_object('range_from', timestamptz '2026-02-02 10:00Z', 'range_to', timestamptz '2026-02-02 11:00Z', 'count', 2),
	ARRAY['backfill', 'abandon']) RETURNING id")
n=$(sql "SELECT count(*) FROM triggers")
expect_exit "abandon a misfire ticket" 0 "$PAL" tickets resolve "$M2" --action abandon --reason "not worth it"
expect_eq "resolved, nothing planned" "resolved|$n" "$(sql "SELECT state FROM tickets WHERE id = $M2")|$(sql "SELECT count(*) FROM triggers")"
expect_exit "tickets show" 0 "$PAL" tickets show "$M2"
expect_match "shows the resolution" "resolved: +abandon by alice@ops" "$OUT"
expect_exit "tickets list hides resolved ones" 0 "$PAL" tickets list
expect_eq "only the open one is listed" "1" "$(echo "$OUT" | grep -cE '^ *[0-9]+ +open ')"

echo "  -- triggers listing"
expect_exit "triggers --job --limit 3 --output json" 0 "$PAL" triggers --job billing.invoices --limit 3 --output json
expect_eq "3 rows, newest first" "3|True" "$(echo "$OUT" | python3 -c 'import json,sys; j=json.load(sys.stdin); s=[x["scheduled_at"] for x in j]; print(len(j), s==sorted(s, reverse=True), sep="|")')"
expect_eq "with the documented fields" "attempt_count fence id job_id last_error_class lease_owner lease_until partition request_id scheduled_at source state trace_id version" \
	"$(echo "$OUT" | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin)[0].keys())))')"
expect_exit "triggers --state cancelling" 0 "$PAL" triggers --job ops.heartbeat --state cancelling --limit 1000 --output json
expect_eq "only cancelling ones" "$(sql "SELECT count(*) FROM trigger_jobs WHERE job_id = 'ops.heartbeat' AND state = 'cancelling'")|cancelling" \
	"$(echo "$OUT" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j), "|".join(sorted({x["state"] for x in j})), sep="|")')"
expect_exit "triggers --since" 0 "$PAL" triggers --job ops.heartbeat --since 2026-01-01T00:30:00Z --limit 1000 --output json
expect_eq "only instants at or after --since" "True" "$(echo "$OUT" | python3 -c 'import json,sys; print(all(x["scheduled_at"] >= "2026-01-01T00:30:00Z" for x in json.load(sys.stdin)))')"
expect_exit "table output" 0 "$PAL" triggers --job billing.invoices
expect_match "has a header" "SCHEDULED_AT +PART +SOURCE +STATE +FENCE" "$OUT"
expect_exit "an unknown --state is a usage error" 64 "$PAL" triggers --state bogus
expect_exit "an unknown job" 3 "$PAL" triggers --job no.such-job

echo "  -- audit trail (G7)"
expect_eq "every operator audit row names actor and reason" "0" \
	"$(sql "SELECT count(*) FROM audit_log WHERE action IN ('pause', 'resume', 'cancel', 'trigger', 'backfill', 'ticket.resolve') AND (actor <> 'alice@ops' OR coalesce(reason, '') = '') AND NOT (action = 'resume' AND reason = '')")"
expect_eq "and a scope" "0" "$(sql "SELECT count(*) FROM audit_log WHERE action IN ('pause', 'resume', 'cancel', 'trigger', 'backfill', 'ticket.resolve') AND scope IS NULL")"
finish
