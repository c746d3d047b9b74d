#!/usr/bin/env bash
# Every node down past the misfire threshold, then restarted: each job does
# exactly what its misfire policy says.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - instants missed through downtime are fired or recorded per policy (fire_all, fire_once, skip, manual; fire_once only inside catchup_window), never silently lost"

fresh_db it_misfire
"$PAL" migrate >/dev/null
SHARDS=4 MISFIRE=3s LOOKAHEAD=1s OVERLAP=2s write_conf "$CLUSTER_CONF"
SHARDS=4
cat >"$NODE_DIR/jobs.yaml" <<'YAML'
jobs:
  - {id: mf.fire-all, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: fire_all, catchup_window: 1h, max_catchup: 100}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mf.fire-all-capped, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: fire_all, catchup_window: 1h, max_catchup: 3}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mf.fire-once, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: fire_once}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mf.fire-once-1s, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: fire_once, catchup_window: 1s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mf.skip, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: skip}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: mf.manual, schedule: {cron: "*/2 * * * * ?"}, misfire: {policy: manual}, target: {url: "http://127.0.0.1:9/x"}}
YAML
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
start_node m1
start_node m2
wait_until "shards led" 20 all_shards_led
sleep 4
stop_node m1
stop_node m2
down_at=$(date +%s)
sleep 20
start_node m1
# led and planned past now: each shard's first tick, which decided every
# missed instant (catch-up or misfire record), committed
wait_until "shards led again" 20 all_shards_led
catchup() { sql "select count(*) from trigger_jobs where job_id = '$1' and source = 'catchup'"; }
missed() { sql "select coalesce(sum(count), 0) from misfires where job_id = '$1' and reason <> 'excluded'"; }
# Each job's shard stopped and resumed planning at its own moment (the two
# nodes stopped one after the other), so jobs on different shards can miss
# one instant more or less: each policy is checked against its own job's
# count, and the counts against each other.  verify (below) proves that
# every instant of every job was fired or recorded.
total() { echo $(( $(catchup "$1") + $(missed "$1") )); }
N=$(total mf.fire-all)
echo "    figure: instants missed during ~20 s of downtime per job: $(for j in fire-all fire-all-capped fire-once fire-once-1s skip manual; do printf '%s=%s ' $j "$(total mf.$j)"; done)"
check "the downtime missed at least 5 instants" [ "$N" -ge 5 ]
spread=$(for j in fire-all fire-all-capped fire-once fire-once-1s skip manual; do total mf.$j; done | sort -n | sed -n '1p;$p' | paste -sd' ' | awk '{print $2 - $1}')
check "every job missed the same instants, give or take the one at a shard's stop (spread $spread)" [ "$spread" -le 1 ]
expect_eq "fire_all: every missed instant fired as catch-up" "$N" "$(catchup mf.fire-all)"
expect_eq "fire_all: nothing recorded as misfire" 0 "$(missed mf.fire-all)"
expect_eq "fire_all capped at 3: three catch-ups" 3 "$(catchup mf.fire-all-capped)"
expect_eq "fire_all capped: the rest recorded as over_max_catchup" "$(( $(total mf.fire-all-capped) - 3 ))" "$(sql "select coalesce(sum(count),0) from misfires where job_id = 'mf.fire-all-capped' and reason = 'over_max_catchup'")"
expect_eq "fire_once: one catch-up" 1 "$(catchup mf.fire-once)"
check "fire_once: the catch-up is later than every recorded misfire" [ "$(sql "select (select scheduled_at from trigger_jobs where job_id = 'mf.fire-once' and source = 'catchup') > (select max(range_to) from misfires where job_id = 'mf.fire-once')")" = t ]
check "fire_once: the others recorded (at least 4)" [ "$(missed mf.fire-once)" -ge 4 ]
# a missed instant is at least the threshold (3 s) old: outside a 1 s window
expect_eq "fire_once, catchup_window 1s: no catch-up (every missed instant is older than the window)" 0 "$(catchup mf.fire-once-1s)"
check "fire_once, catchup_window 1s: all recorded as missed (at least 5)" [ "$(sql "select coalesce(sum(count), 0) from misfires where job_id = 'mf.fire-once-1s' and reason = 'missed'")" -ge 5 ]
expect_eq "skip: no catch-up" 0 "$(catchup mf.skip)"
check "skip: all recorded (at least 5)" [ "$(missed mf.skip)" -ge 5 ]
expect_eq "manual: no catch-up" 0 "$(catchup mf.manual)"
check "manual: all recorded (at least 5)" [ "$(missed mf.manual)" -ge 5 ]
expect_eq "manual: one open ticket" 1 "$(sql "select count(*) from tickets where job_id = 'mf.manual' and state = 'open'")"
expect_eq "misfire rows carry the deciding epoch" 0 "$(sql "select count(*) from misfires m where epoch <> (select epoch from shards s where s.shard_id = m.shard)")"
T0=$(sql "select to_char(min(effective_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from job_versions")
expect_exit "verify: every instant fired or recorded" 0 "$PAL" verify --from "$T0" --to "$(rfc3339_ago 3)"
finish
