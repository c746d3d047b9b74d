#!/usr/bin/env bash
# A dependent instant carries its upstream's nominal instant
# (docs/migrating.md, "Spread and jitter at a boundary"; docs/jobs.md
# "after"): an.head runs every 20 s with spread (offset 9 s: the model
# below), an.dep after it.  The old system runs an.head's nominal instant n
# and an.dep after it; palisade runs both at n + 9 s.  A `shadow` at S a
# second or so after n (S < n + 9) leaves n palisade's (n < S): an.head's
# trigger at n + 9 stays live and is called, and an.dep's trigger, planned
# once it succeeded, is judged on n too (its nominal_at), so it is live and
# called: the instant runs in exactly one system, not in neither.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a dependent instant (after:) of a spread upstream carries its nominal instant: a shadow boundary between the nominal and the moved instant judges it in exactly one system"
T_START=$(date +%s)

it_db
sink_up
SHARDS=1 LOOKAHEAD=30s
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
apply_jobs apply <<YAML || { finish; exit 1; }
jobs:
  - {id: an.head, group: an, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://$SINK_ADDR/effects/head", timeout: 2s}}
  - {id: an.dep, group: an, after: [{job: an.head}], target: {url: "http://$SINK_ADDR/effects/dep", timeout: 2s}}
YAML
O=$(python3 -c 'import hashlib; print(int.from_bytes(hashlib.sha256(b"spread:an.head:0").digest()[:8], "big") % 19)')
expect_eq "an.head's spread offset (the model)" 9 "$O"
lead_shards 20 n1 || { finish; exit 1; }

# S: a second after the next nominal instant n at least 3 s away
N=$((($(date +%s) + 3 + 19) / 20 * 20))
sleep "$(python3 -c "import time; print(max(0, $N + 1.2 - time.time()))")"
SH=$("$PAL" shadow --config "$CLUSTER_CONF" --group an --reason "back" --output json)
expect_eq "shadow --group an: exit 0" 0 $?
S=$(date -d "$(jq -r .since <<<"$SH")" +%s)
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
echo "    nominal $(iso "$N"), fired $(iso $((N + O))), shadow since $(iso "$S")"
check "S lies after n, before n + $O" test "$N" -lt "$S" -a "$S" -le $((N + O))

wait_until "an.head's instant n + $O succeeded" 30 \
	has "select count(*) from triggers where job_id = 'an.head' and scheduled_at = to_timestamp($((N + O))) and state = 'succeeded'"
wait_until "an.dep's instant planned and ended" 20 \
	has "select count(*) from triggers where job_id = 'an.dep' and scheduled_at = to_timestamp($((N + O)))
	      and state in ('succeeded', 'failed', 'shadow')"
dep() { sql "select $1 from triggers where job_id = 'an.dep' and scheduled_at = to_timestamp($((N + O)))"; }
expect_eq "an.dep at n + $O carries an.head's nominal instant n" "$N" "$(dep "extract(epoch FROM nominal_at)::bigint")"
expect_eq "an.dep at n + $O is palisade's (n < S): called, not shadow" "succeeded" "$(dep state)"
expect_eq "an.dep at n + $O: one call" 1 \
	"$(sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id
	         where t.job_id = 'an.dep' and t.scheduled_at = to_timestamp($((N + O)))")"
expect_eq "an.head's upstream rows keep their nominal_at (n + $O: n)" "$N" \
	"$(sql "select extract(epoch FROM nominal_at)::bigint from triggers where job_id = 'an.head' and scheduled_at = to_timestamp($((N + O)))")"
echo "  took $(($(date +%s) - T_START)) s"
finish
