#!/usr/bin/env bash
# `palisade report cost`: what each correct result cost.  Three jobs through
# one node and the reference sink: `steady` fires every second and succeeds
# at once; `flaky`'s manual run is refused by the sink until it succeeds on a
# later attempt; `doomed`'s manual run (tenant t2) fails on both its
# attempts; a job put in shadow, whose never-called instants are not counted.
# The report's counts are checked against the attempts and
# triggers tables read directly, per job, in total, and with its filters.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "report cost - per job and in total, the attempts, retries, calls and stored bytes behind each succeeded trigger, as the ledger records them"
T_START=$(date +%s)

fresh_db it_report
"$PAL" migrate >/dev/null
start_sink --error-rate 1 || { fail "sink starts"; finish; exit 1; }
SHARDS=2
write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
FROM=$(now_rfc3339)
manual_job() { # ID TENANT MAX_ATTEMPTS
	cat <<YAML
  - id: $1
    tenant: $2
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://$SINK_ADDR/effects/$1", timeout: 2s}
    retry: {max_attempts: $3, backoff: {initial: 1s, max: 1s, jitter: none}, max_age: 5m}
YAML
}
{ echo "jobs:"; manual_job flaky t1 6; manual_job doomed t2 2; } >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node r1
wait_until "shards led" 20 all_shards_led
expect_exit "a manual run of flaky" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job flaky --reason "report test"
expect_exit "a manual run of doomed" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job doomed --reason "report test"
doomed_failed() { [ "$(sql "select state from trigger_jobs where job_id = 'doomed'")" = failed ]; }
wait_until "doomed fails on its two attempts" 30 doomed_failed
sink_faults '{"error_rate": 0}'
cat >>"$NODE_DIR/jobs.yaml" <<YAML
  - id: steady
    tenant: t1
    schedule: {cron: "* * * * * ?"}
    target: {url: "http://$SINK_ADDR/effects/steady", timeout: 2s}
YAML
expect_exit "apply steady" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
flaky_ok() { [ "$(sql "select state from trigger_jobs where job_id = 'flaky'")" = succeeded ]; }
wait_until "flaky succeeds" 30 flaky_ok
steady_ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'steady' and state = 'succeeded'")" -ge 3 ]; }
wait_until "steady ran three instants" 30 steady_ran
sleep 2
# up to an instant whose triggers have all finished
TO=$(sql "select to_char(max(scheduled_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = 'steady' and state = 'succeeded'")
TO=$(date -u -d "$TO" +%s); TO=$(date -u -d "@$((TO + 1))" +%Y-%m-%dT%H:%M:%SZ)
# manual runs are planned at the time of the command: inside [FROM, TO)
rep=$("$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" --output json)
expect_eq "report cost exits 0" 0 $?
job() { jq -c ".jobs[] | select(.job_id == \"$1\")" <<<"$rep"; }
raw() { sql "select $1 from trigger_jobs t left join attempt_ledger a on a.trigger_id = t.id where t.scheduled_at >= '$FROM' and t.scheduled_at < '$TO' ${2:+and $2}"; }

fa=$(sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'flaky'")
check "flaky took more than one attempt ($fa)" test "$fa" -ge 2
expect_eq "flaky: one trigger, succeeded, attempts as the ledger has them" "1 1 $fa $((fa - 1)) $fa" \
	"$(job flaky | jq -r '"\(.triggers) \(.succeeded) \(.attempts) \(.retries) \(.calls)"')"
expect_eq "flaky: attempts per success" "$fa" "$(job flaky | jq -r '.per_success.attempts')"
expect_eq "doomed: one failed trigger, 2 attempts, no success (per_success null)" "1 0 1 2 1 null" \
	"$(job doomed | jq -r '"\(.triggers) \(.succeeded) \(.failed) \(.attempts) \(.retries) \(.per_success)"')"
expect_eq "doomed (no success) is listed first" doomed "$(jq -r '.jobs[0].job_id' <<<"$rep")"
st=$(raw "count(distinct t.id)" "t.job_id = 'steady'")
expect_eq "steady: every trigger in the range succeeded on its first attempt" "$st $st $st 0 1" \
	"$(job steady | jq -r '"\(.triggers) \(.succeeded) \(.attempts) \(.retries) \(.per_success.attempts)"')"
expect_eq "total triggers = the triggers table over the range" "$(raw "count(distinct t.id)")" "$(jq -r .total.triggers <<<"$rep")"
expect_eq "total attempts = the attempt ledger over the range" "$(raw "count(a.fence)")" "$(jq -r .total.attempts <<<"$rep")"
# an attempt its trigger row holds is in the row's size; attempts rows add theirs
bytes=$(sql "select (select sum(pg_column_size(t.*)) from triggers t where t.scheduled_at >= '$FROM' and t.scheduled_at < '$TO') + (select coalesce(sum(pg_column_size(a.*)), 0) from attempts a join triggers t on t.id = a.trigger_id where t.scheduled_at >= '$FROM' and t.scheduled_at < '$TO') + (select coalesce(sum(x.b), 0) from (select r.trigger_id, pg_column_size(r.*) b from attempt_responses r offset 0) x join triggers t on t.id = x.trigger_id where t.scheduled_at >= '$FROM' and t.scheduled_at < '$TO')")
expect_eq "stored bytes = the rows' own sizes" "$bytes" "$(jq -r .total.stored_bytes <<<"$rep")"
expect_eq "the sum of the job rows is the total" "$(jq -r .total.attempts <<<"$rep")" "$(jq '[.jobs[].attempts] | add' <<<"$rep")"

t2=$("$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" --tenant t2 --output json)
expect_eq "--tenant t2: doomed only" "doomed 1" "$(jq -r '"\([.jobs[].job_id] | join(",")) \(.total.triggers)"' <<<"$t2")"
one=$("$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" --limit 1 --output json)
expect_eq "--limit 1: the costliest job and truncated" "doomed true" "$(jq -r '"\([.jobs[].job_id] | join(",")) \(.jobs_truncated)"' <<<"$one")"
tbl=$("$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO")
check "the table has a line per job and the total" grep -qE "^total +[0-9]+" <<<"$tbl"
check "... flaky's attempts per success" grep -qE "^flaky +1 +1 +0 +$fa\.000 " <<<"$tbl"
expect_exit "an unknown job: 3" 3 "$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" --job nosuch
expect_exit "no --to: 64" 64 "$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM"
expect_exit "--to before --from: 64" 64 "$PAL" report cost --config "$CLUSTER_CONF" --from "$TO" --to "$FROM"
expect_exit "two scopes: 64" 64 "$PAL" report cost --config "$CLUSTER_CONF" --from "$FROM" --to "$TO" --job flaky --tenant t1

# shadow instants are planned, never called: no work, not counted
expect_exit "steady in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --job steady --reason "report test"
shadowed() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'steady' and state = 'shadow' and scheduled_at < now() - interval '1 second'")" -ge 2 ]; }
wait_until "steady has past shadow instants" 20 shadowed
SF=$(sql "select to_char(min(scheduled_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = 'steady' and state = 'shadow'")
ST=$(date -u -d "@$(( $(date +%s) - 1 ))" +%Y-%m-%dT%H:%M:%SZ)
check "... some in the range" test "$(sql "select count(*) from trigger_jobs where job_id = 'steady' and scheduled_at >= '$SF' and scheduled_at < '$ST' and state = 'shadow'")" -ge 1
sh=$("$PAL" report cost --config "$CLUSTER_CONF" --from "$SF" --to "$ST" --job steady --output json)
expect_eq "a range of shadow instants: the report counts only the others" \
	"$(sql "select count(*) from trigger_jobs where job_id = 'steady' and scheduled_at >= '$SF' and scheduled_at < '$ST' and state <> 'shadow'")" \
	"$(jq -r '.total.triggers' <<<"$sh")"
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
