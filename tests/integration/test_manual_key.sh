#!/usr/bin/env bash
# A deliberate re-run reaches the service as a new effect: with the default
# key template ({job}/{scheduled_at}/{partition}, no {request_id}) a manual
# run's and a backfill's key is the template's followed by "/" and the
# request id, so `trigger --at` an instant that already ran and a backfill
# over instants that ran are applied by the reference sink, not answered as
# replays of the scheduled runs.  The same request id plans nothing new; a
# run whose reply is lost asks for its own key in its status query; a run
# whose node dies mid-call is taken over by another node under the same key,
# so the dead node's applied request stays its one effect.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 and G2 for deliberate runs: a manual run or backfill has its own idempotency key, distinct from every scheduled run's and every other request id's, the same across its attempts, status queries and takeovers; a repeated request id creates nothing"

it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
J=key.rerun
apply_jobs "apply a job with the default key template" <<YAML
jobs:
  - id: $J
    schedule: {cron: "* * * * * ?"}
    target:
      url: http://$SINK_ADDR/effects/rerun
      body: '{"at": "{scheduled_at}"}'
      timeout: 2s
      status_url: http://$SINK_ADDR/effects/{idempotency_key}
    retry: {max_attempts: 5, backoff: {initial: 200ms, max: 1s}}
YAML
lead_shards 20 m1

# T1: the first of three consecutive scheduled instants that succeeded.
first_of_three() {
	sql "SELECT to_char(t.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM trigger_jobs t
	     WHERE t.job_id = '$J' AND t.source = 'schedule' AND t.state = 'succeeded'
	       AND (SELECT count(*) FROM trigger_jobs u WHERE u.job_id = '$J' AND u.source = 'schedule'
	              AND u.state = 'succeeded' AND u.scheduled_at IN (t.scheduled_at + interval '1 s', t.scheduled_at + interval '2 s')) = 2
	     ORDER BY t.scheduled_at LIMIT 1"
}
three_ran() { [ -n "$(first_of_three)" ]; }
wait_until "three consecutive scheduled instants ran" 30 three_ran
T1=$(first_of_three)
T2=$(date -u -d "$T1 + 1 second" +%Y-%m-%dT%H:%M:%SZ)
T3=$(date -u -d "$T1 + 2 seconds" +%Y-%m-%dT%H:%M:%SZ)
# keys_at T: the keys the sink applied for instant T, sorted.
keys_at() { sql "SELECT string_agg(idempotency_key, ' ' ORDER BY idempotency_key) FROM sink_effects WHERE idempotency_key LIKE '$J/$1/%'"; }
expect_eq "the scheduled run of $T1 reached the sink under the default key" "$J/$T1/0" "$(keys_at "$T1")"

echo "  -- trigger --at an instant that ran, with --new-effect"
expect_exit "trigger --at $T1 --new-effect --request-id RERUN-1" 0 \
	"$PAL" trigger --job "$J" --at "$T1" --new-effect --request-id RERUN-1 --reason "re-run" --config "$CLUSTER_CONF"
# done_rid RID: request RID planned triggers and every one of them succeeded.
done_rid() { [ "$(sql "SELECT count(*) > 0 AND bool_and(state = 'succeeded') FROM trigger_jobs WHERE job_id = '$J' AND request_id = '$1'")" = t ]; }
wait_until "the manual run succeeded" 20 done_rid RERUN-1
expect_eq "the service applied it under a second key (template + / + request id)" \
	"$J/$T1/0 $J/$T1/0/RERUN-1" "$(keys_at "$T1")"
expect_eq "... as a new effect, not a replay: one ledger row per key" "1|1" \
	"$(sql "SELECT string_agg(n::text, '|' ORDER BY k) FROM (SELECT idempotency_key k, count(*) n FROM sink_ledger WHERE idempotency_key LIKE '$J/$T1/%' GROUP BY 1) x")"
expect_eq "the attempt recorded the key it sent" "$J/$T1/0/RERUN-1" \
	"$(sql "SELECT string_agg(DISTINCT a.idempotency_key, ' ') FROM attempt_ledger a JOIN triggers t ON t.id = a.trigger_id WHERE t.request_id = 'RERUN-1'")"

expect_exit "the same command again" 0 \
	"$PAL" trigger --job "$J" --at "$T1" --new-effect --request-id RERUN-1 --reason "re-run" --config "$CLUSTER_CONF"
expect_match "... says the request already exists" "already exists" "$OUT"
expect_eq "... and plans nothing new" 1 "$(sql "SELECT count(*) FROM triggers WHERE request_id = 'RERUN-1'")"
sleep 1
expect_eq "... so the service has no third key" 2 "$(sql "SELECT count(*) FROM sink_effects WHERE idempotency_key LIKE '$J/$T1/%'")"

echo "  -- backfill over instants that ran"
expect_exit "backfill $T1..$T3 --request-id BF-1" 0 \
	"$PAL" backfill --job "$J" --from "$T1" --to "$T3" --request-id BF-1 --reason "re-run a range" --config "$CLUSTER_CONF"
expect_eq "three instants planned" 3 "$(sql "SELECT count(*) FROM triggers WHERE request_id = 'BF-1'")"
wait_until "the backfill's triggers succeeded" 20 done_rid BF-1
expect_eq "$T1: one new key" "$J/$T1/0 $J/$T1/0/BF-1 $J/$T1/0/RERUN-1" "$(keys_at "$T1")"
expect_eq "$T2: one new key" "$J/$T2/0 $J/$T2/0/BF-1" "$(keys_at "$T2")"
expect_eq "$T3: one new key" "$J/$T3/0 $J/$T3/0/BF-1" "$(keys_at "$T3")"
expect_exit "the same backfill again" 0 \
	"$PAL" backfill --job "$J" --from "$T1" --to "$T3" --request-id BF-1 --reason "re-run a range" --config "$CLUSTER_CONF"
expect_eq "... plans nothing new" 3 "$(sql "SELECT count(*) FROM triggers WHERE request_id = 'BF-1'")"

echo "  -- a manual run whose reply is lost: one key for its request and its status query"
sink_faults '{"drop_after_commit_rate": 1.0}'
expect_exit "trigger --request-id LOST-1 (now)" 0 \
	"$PAL" trigger --job "$J" --request-id LOST-1 --reason "lost reply" --config "$CLUSTER_CONF"
wait_until "the manual run succeeded (its reply lost, a status query found it applied)" 20 done_rid LOST-1
sink_faults '{"drop_after_commit_rate": 0}'
check "a status query was made" [ "$(sql "SELECT count(*) FROM attempt_ledger a JOIN triggers t ON t.id = a.trigger_id WHERE t.request_id = 'LOST-1' AND coalesce(array_length(a.status_queries, 1), 0) > 0")" -ge 1 ]
TL=$(sql "SELECT to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM triggers WHERE request_id = 'LOST-1'")
expect_eq "every attempt sent the run's own key" "$J/$TL/0/LOST-1" \
	"$(sql "SELECT string_agg(DISTINCT a.idempotency_key, ' ') FROM attempt_ledger a JOIN triggers t ON t.id = a.trigger_id WHERE t.request_id = 'LOST-1'")"
TID=$(sql "SELECT id FROM triggers WHERE request_id = 'LOST-1'")
qkeys=$(grep '"event":"executor.status_query"' "$NODE_DIR/m1.log" | grep "\"trigger\":$TID[,}]" | grep -o '"key":"[^"]*"' | sort -u)
expect_eq "its status queries asked for that key" "\"key\":\"$J/$TL/0/LOST-1\"" "$qkeys"
expect_eq "the service holds one effect under it" 1 "$(sql "SELECT count(*) FROM sink_effects WHERE idempotency_key = '$J/$TL/0/LOST-1'")"
echo "  -- a takeover: the node calling a manual run dies, another claims it"
sink_faults '{"paused": true}'
expect_exit "trigger --request-id TAKE-1 (now)" 0 \
	"$PAL" trigger --job "$J" --request-id TAKE-1 --reason "takeover" --config "$CLUSTER_CONF"
TID=$(sql "SELECT id FROM triggers WHERE request_id = 'TAKE-1'")
held() { [ "$(sql "SELECT state FROM triggers WHERE id = $TID")" = running ] && [ "$(sink_stat inflight)" -ge 1 ]; }
wait_until "its request is held by the (paused) sink" 20 held
F1=$(sql "SELECT fence FROM triggers WHERE id = $TID")
kill9_node m1
sink_faults '{"paused": false}'   # the dead node's request is applied now, unanswered
start_node m2
wait_until "another node finished the run after the lease expired" 40 done_rid TAKE-1
TT=$(sql "SELECT to_char(scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM triggers WHERE id = $TID")
check "the run was claimed again with a newer token" [ "$(sql "SELECT fence FROM triggers WHERE id = $TID")" -gt "$F1" ]
# The request the paused sink held is m1's first for the run: its token is
# that attempt's.  F1, read when the hold was seen, is m1's latest claim:
# a loaded m1 may have timed its call out (2 s) and claimed again by then.
FIRST=$(sql "SELECT min(fence) FROM attempt_ledger WHERE trigger_id = $TID AND node = 'm1'")
echo "    figure: m1's first token for the run $FIRST, its token when the hold was seen $F1"
expect_eq "the service holds one effect for the run: the dead node's request (its token), under the run's key" \
	"$J/$TT/0/TAKE-1|$FIRST" "$(sql "SELECT string_agg(idempotency_key || '|' || fence, ' ') FROM sink_effects WHERE trigger_id = $TID")"
expect_eq "the new node's attempt sent or asked for that same key" "$J/$TT/0/TAKE-1" \
	"$(sql "SELECT string_agg(DISTINCT a.idempotency_key, ' ') FROM attempt_ledger a WHERE a.trigger_id = $TID")"
echo "    figure: test took ${SECONDS}s"
finish
