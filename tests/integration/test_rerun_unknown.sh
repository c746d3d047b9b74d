#!/usr/bin/env bash
# `palisade trigger --at` refuses (exit 4) an instant whose outcome is
# unknown (docs/operations.md): a re-run has a new key, which the service
# cannot recognise as the effect it may already have applied.  Three ways an
# instant's outcome is unknown that the guard once let through, each with
# the ghost executor's request applied at the reference sink:
#   r.run  its call is running right now;
#   r.pau  paused while its call was in flight, its executor dead, resumed
#          (the stop made for the lost executor keeps the outcome unknown);
#          the service is down, the status URL dead: it ends manual;
#   r.tko  taken over from the dead executor, the retry refused (503):
#          retry_wait with outcome_unknown set.
# Once the service is back, each instant has exactly one effect.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G5 - no duplicated effect: trigger --at refuses an instant whose call is in flight, whose attempt was stopped or taken over from a dead executor, or whose outcome_unknown is set"
T0=$SECONDS
# the claim statements in SQL with jit off, as a node's connections have
# them: compiling them takes seconds
jitoff() { PGOPTIONS="-c jit=off" "$@"; }
fresh_db it_rerun_unknown
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
STATUS=', status_url: "http://127.0.0.1:9/effects/{idempotency_key}"' # answers nothing
for j in "r.run 2 100ms $STATUS" "r.pau 2 100ms $STATUS" "r.tko 20 2s"; do
	read -r id n b status <<<"$j"
	cat <<Y
  - id: $id
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$SINK_ADDR/effects/r", body: '{"at": "{scheduled_at}"}'$status}
    retry: {max_attempts: $n, backoff: {initial: $b, max: $b, jitter: none}}
Y
done | { echo "jobs:"; cat; } >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
AT=$(date -u -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%SZ)
for j in r.run r.pau r.tko; do "$PAL" trigger --job $j --at "$AT" --request-id s1 --reason test >/dev/null; done
# node 'ghost' claims all three (a 2 s lease), its requests reach the sink
# (applied), and it dies
jitoff sql "SELECT id, fence FROM palisade_claim_batch('ghost', 2000, 10, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL" |
	while IFS='|' read -r id fence; do
		job=$(sql "select job_id from trigger_jobs where id = $id")
		code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Idempotency-Key: $job/$AT/0/s1" \
			-H "Palisade-Fencing-Token: $fence" -H "Palisade-Trigger: $id" -H "Palisade-Attempt: 1" \
			--data-binary "{\"at\": \"$AT\"}" "http://$SINK_ADDR/effects/r")
		echo "    ghost's request for $job (token $fence): HTTP $code"
	done
rerun() { "$PAL" trigger --job "$1" --at "$AT" --reason rerun >"$NODE_DIR/$1.out" 2>&1; }
expect_exit "trigger --at r.run while its call is running: refused" 4 rerun r.run
expect_exit "pause r.pau (its call in flight)" 0 "$PAL" pause --job r.pau --reason test
expired() { has "SELECT count(*) FROM triggers WHERE job_id = 'r.pau' AND lease_until < clock_timestamp()"; }
wait_until "the ghost's leases expire" 10 expired
expect_exit "resume r.pau" 0 "$PAL" resume --job r.pau --reason test
sink_faults '{"error_rate": 1}' # the service is down for a while (503, nothing applied)
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
start_node ex
st() { sql "select state || '|' || outcome_unknown::char from trigger_jobs where job_id = '$1' and request_id = 's1'"; }
down() { [ "$(st r.pau)" = "manual|t" ] && [ "$(st r.tko)" = "retry_wait|t" ]; }
wait_until "r.pau ends manual, r.tko waits to retry with its outcome unknown" 30 down
for j in r.pau r.tko; do
	expect_exit "trigger --at $j: refused" 4 rerun $j
	expect_match "... naming the unknown outcome" "outcome unknown" "$(cat "$NODE_DIR/$j.out")"
done
OP=$("$PAL" token create --name ops --role operator | tail -1)
api_rerun() { # JOB: POST /api/v1/jobs/JOB/trigger at the instant: "HTTP-code problem-type"
	curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $OP" -H 'Content-Type: application/json' \
		--data "{\"reason\": \"rerun\", \"at\": \"$AT\"}" "http://${NODE_ADMIN[ex]}/api/v1/jobs/$1/trigger" |
		python3 -c 'import json,sys; b,c=sys.stdin.read().rsplit(" ",1); print(c, json.loads(b).get("type","").rsplit(":",1)[-1])'
}
for j in r.pau r.tko; do
	expect_eq "the API's trigger of $j at the instant: refused" "409 unknown-outcome" "$(api_rerun $j)"
done
expect_eq "the refusals planned nothing" 3 "$(sql "select count(*) from triggers")"
sink_faults '{"error_rate": 0}' # r.tko's retry (same key) is replayed
done_tko() { [ "$(st r.tko)" = "succeeded|f" ]; }
wait_until "r.tko succeeds" 30 done_tko
stop_node ex
for j in r.run r.pau r.tko; do
	expect_eq "$j: one effect at the instant" 1 \
		"$(sql "select count(*) from sink_effects where idempotency_key like '$j/$AT/%'")"
done
echo "    figure: test took $((SECONDS - T0)) s"
finish
