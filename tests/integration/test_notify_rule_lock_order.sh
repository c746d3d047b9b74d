#!/usr/bin/env bash
# Notify rules: every apply takes the rules' lock in its first statement
# (exclusive when its files hold rules, shared otherwise), before the audit
# seal's lock or a job's row lock.  An apply of a calendar alone (shared:
# it re-versions the calendar's followers with the rules) and an apply of a
# notify rule (exclusive) over the same job, side by side, then queue for
# each other instead of deadlocking.  A third session holding the rules'
# lock for 3 s lines the two up in the order in which an apply that took
# the lock late (after its calendar's audit row) deadlocked.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - an apply of a calendar and an apply of a notify rule over the same job both succeed, side by side"
fresh_db it_notify_rule_lock_order
"$PAL" migrate >/dev/null
write_conf "$CLUSTER_CONF"
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
cal() { printf 'calendars:\n  - name: office\n    timezone: UTC\n    exclude:\n      windows: ["%s"]\n' "$1"; }
{
	cal "02:00-03:00"
	cat <<YAML
jobs:
  - id: j1
    tenant: billing
    schedule: {cron: "0 0 * * * ?", calendar: [office]}
    target: {url: "http://127.0.0.1:9/x"}
YAML
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply the calendar and its job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
cal "04:00-05:00" >"$NODE_DIR/cal2.yaml"
cat >"$NODE_DIR/rule.yaml" <<YAML
notify_rules:
  - {tenant: billing, on: [failed], url: "http://127.0.0.1:9/hooks", secret: "\${HOOK_SECRET}"}
YAML
# a session holds the rules' lock for 3 s: the rule's apply queues for it
# first, the calendar's apply locks j1 and queues behind
"$PSQL" "$PALISADE_PG" -XAtq -c "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('palisade.notify_rules', 0)); SELECT pg_sleep(3); COMMIT;" >/dev/null &
H=$!
sleep 0.5
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rule.yaml" >"$NODE_DIR/rule.out" 2>&1 &
R=$!
sleep 0.7
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cal2.yaml" >"$NODE_DIR/cal.out" 2>&1 &
C=$!
wait $R; rr=$?
wait $C; rc=$?
wait $H
sed 's/^/      rule: /' "$NODE_DIR/rule.out" | grep -v datafill
sed 's/^/      cal:  /' "$NODE_DIR/cal.out" | grep -v datafill
expect_eq "the rule's apply succeeded" 0 "$rr"
expect_eq "the calendar's apply succeeded" 0 "$rc"
expect_eq "no deadlock reported" 0 "$(cat "$NODE_DIR/rule.out" "$NODE_DIR/cal.out" | grep -ci deadlock)"
expect_eq "j1's latest version has both the rule and the calendar's new window" "http://127.0.0.1:9/hooks 1" \
	"$(sql "select (v.spec->'notify'->0->>'url') || ' ' || (v.spec::text like '%04:00%')::int from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id = 'j1'")"
finish
