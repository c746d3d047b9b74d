#!/usr/bin/env bash
# Honest outcomes: an effect whose outcome is unknown never ends
# `failed` - when the retry budget runs out the trigger goes `manual` with a
# ticket naming the key, the attempts and the status query answers - and a
# secret missing on one node hands the trigger to a node that has it, while
# a trigger that no live node can render opens a ticket.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an unknown outcome never becomes failed (manual + ticket with key, attempts, query answers); a missing secret defers to another node, that node skips the job, and a ticket opens when no node can render it"

it_db honest
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 1s}"
never='schedule: {cron: "0 0 0 1 1 ? 2099"}'
key='idempotency_key: "{job}/{scheduled_at}/{trigger}"'
retry='retry: {max_attempts: 2, backoff: {initial: 100ms, max: 200ms}}'
{
	echo "jobs:"
	# The sink holds each apply transaction 8 s, the call times out after
	# 1 s: the effect commits, but neither attempt can know it.
	echo "  - {id: honest.query, $never, $key, target: {url: \"http://$SINK_ADDR/effects/q\", timeout: 1s, status_url: \"http://$SINK_ADDR/effects/{idempotency_key}\"}, $retry}"
	echo "  - {id: honest.nourl, $never, $key, target: {url: \"http://$SINK_ADDR/effects/n\", timeout: 1s}, $retry}"
	# Only node h2 has HONEST_TOKEN; nobody has HONEST_NONE.
	echo "  - {id: honest.secret, $never, $key, target: {url: \"http://$SINK_ADDR/effects/s\", headers: {Authorization: \"Bearer \${HONEST_TOKEN}\"}}, $retry}"
	echo "  - {id: honest.nowhere, $never, $key, target: {url: \"http://$SINK_ADDR/effects/w\", headers: {Authorization: \"Bearer \${HONEST_NONE}\"}}, $retry}"
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
unset HONEST_TOKEN HONEST_NONE
start_node h1
HONEST_TOKEN=s3cret start_node h2
wait_until "shards led" 20 all_shards_led
live() { [ "$(sql "select count(*) from executor_nodes where node in ('h1', 'h2') and seen_at > clock_timestamp() - interval '30 s'")" = 2 ]; }
wait_until "both nodes claim (executor_nodes)" 20 live

# ---- 1. unknown outcome, budget spent -----------------------------------------
sink_faults '{"delay_ms": 8000}'
"$PAL" trigger --job honest.query --reason "honest outcome test" >/dev/null
"$PAL" trigger --job honest.nourl --reason "honest outcome test" >/dev/null
st() { sql "select state || ' ' || coalesce(last_error_class, '') from trigger_jobs where job_id = '$1'"; }
ended() { [ "$(sql "select count(*) from trigger_jobs where job_id in ('honest.query', 'honest.nourl') and state in ('succeeded', 'failed', 'manual')")" = 2 ]; }
wait_until "both unknown-outcome triggers end" 20 ended
for j in query nourl; do
	echo "    $j: $(st honest.$j); attempts: $(sql "select string_agg(coalesce(outcome, '-') || '/' || coalesce(error_class, '-') || '/' || coalesce(status_queries::text, '-'), ' ' order by a.fence) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'honest.$j'")"
	expect_match "honest.$j: the budget ran out with the outcome unknown: manual, never failed" "^manual " "$(st honest.$j)"
	tk=$(sql "select evidence::text from tickets k join trigger_jobs t on t.id = k.trigger_id where t.job_id = 'honest.$j'")
	check "honest.$j: a ticket was opened" [ -n "$tk" ]
	ikey=$(sql "select distinct a.idempotency_key from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'honest.$j' and a.idempotency_key is not null")
	expect_eq "honest.$j: its evidence names the key" "$ikey" "$(jq -r .idempotency_key <<<"$tk")"
	expect_eq "honest.$j: ... and both attempts" 2 "$(jq '.attempts | length' <<<"$tk")"
	expect_eq "honest.$j: allowed actions keep the key (retry = same trigger), no new key" \
		"{retry,mark_succeeded,abandon}" \
		"$(sql "select allowed_actions from tickets k join trigger_jobs t on t.id = k.trigger_id where t.job_id = 'honest.$j'")"
done
tq=$(sql "select evidence::text from tickets k join trigger_jobs t on t.id = k.trigger_id where t.job_id = 'honest.query'")
# The sink answered the status queries "in progress" (409) while the first
# transaction was open: that is "unknown", not "not applied".
check "honest.query: the evidence holds the status queries' answers (409 in_progress)" \
	grep -q 409 <<<"$(jq -c '[.attempts[].status_queries]' <<<"$tq")"
applied() { [ "$(sql "select count(*) from sink_ledger where idempotency_key in (select idempotency_key from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id in ('honest.query', 'honest.nourl'))")" -ge 2 ]; }
wait_until "the sink commits both effects (so 'failed' would have been a lie)" 15 applied
check "the status query answered 409 in_progress while the apply was open" \
	[ "$(sink_stat query_in_progress)" -ge 1 ]
sink_faults '{"delay_ms": 0}'

# ---- 2. a secret missing on one node -----------------------------------------
# h2 is stopped (still live: it claimed within the minute), so h1 claims
# and cannot render: the trigger goes back without spending its attempt.
pause_node h2
"$PAL" trigger --job honest.secret --reason "honest outcome test" >/dev/null
skipped() { grep -q '"event":"executor.render_skip".*honest.secret' "$NODE_DIR/h1.log"; }
wait_until "h1 hands honest.secret back (render_skip)" 15 skipped
expect_eq "... not failed: pending again, its attempt given back" "pending render_secret 0" \
	"$(sql "select state || ' ' || last_error_class || ' ' || attempt_count from trigger_jobs where job_id = 'honest.secret'")"
check "... and h1 skips the job for a while" [ "$(sql "select count(*) from render_skips where node = 'h1' and job_id = 'honest.secret' and until > clock_timestamp()")" = 1 ]
check "... counted (palisade_executor_render_skips_total)" [ "$(metric h1 palisade_executor_render_skips_total | cut -d. -f1)" -ge 1 ]
resume_node h2
"$PAL" trigger --job honest.secret --reason "honest outcome test" >/dev/null
done2() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'honest.secret' and state = 'succeeded'")" = 2 ]; }
wait_until "h2, which has the secret, runs both" 30 done2
expect_eq "h1 never called for honest.secret; h2 did, one attempt each" "h2 h2" \
	"$(sql "select string_agg(a.node, ' ' order by a.fence) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'honest.secret' and a.outcome = 'succeeded'")"
expect_eq "h1 claimed honest.secret once (then skipped it)" 1 \
	"$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'honest.secret' and a.node = 'h1'")"

# ---- 3. no node can render ---------------------------------------------------
"$PAL" trigger --job honest.nowhere --reason "honest outcome test" >/dev/null
manual() { [ "$(sql "select state from trigger_jobs where job_id = 'honest.nowhere'")" = manual ]; }
wait_until "a trigger no live node can render goes manual" 20 manual
tw=$(sql "select reason || ' | ' || evidence::text from tickets k join trigger_jobs t on t.id = k.trigger_id where t.job_id = 'honest.nowhere'")
echo "    ticket: $tw"
expect_match "... with a ticket naming the missing variable" "HONEST_NONE" "$tw"
expect_eq "... and both nodes as unable to render" '["h1","h2"]' "$(jq -c .nodes_that_cannot_render <<<"${tw#* | }")"
expect_eq "... without spending an attempt" 0 "$(sql "select attempt_count from trigger_jobs where job_id = 'honest.nowhere'")"
check "the nodes are alive" node_alive h1
check "..." node_alive h2
finish
