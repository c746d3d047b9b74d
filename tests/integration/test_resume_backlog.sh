#!/usr/bin/env bash
# A resume decides by misfire policy only what its gate held past the
# threshold, counted from when the gate closed: a backlog of instants that
# were already overdue when the gate closed (no executor ran them, or
# executors were saturated) is released as it was and runs late, as it
# would have without the pause.  Phase 1: a pause of about a second over
# such a backlog decides nothing.  Phase 2: a pause of 8 s (threshold 3 s)
# decides the instants it held past the threshold, among them those due
# shortly before it closed, and still releases the older backlog.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 - a resume decides by misfire policy only what its gate held past the threshold; an older backlog is released as it was"

it_db
sink_up
# a controller only: no executor runs, the instants wait
misfire_cluster c1 <<YAML
jobs:
  - {id: bl.skip, tenant: bl, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/skip"}}
  - {id: bl.once, tenant: bl, schedule: {cron: "* * * * * ?"}, misfire: {policy: fire_once}, target: {url: "http://$SINK_ADDR/effects/once"}}
YAML
backlog() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'bl.skip' and state = 'pending' and scheduled_at < now() - interval '5 s'")" -ge 6 ]; }
wait_until "a backlog of pending instants older than the threshold" 30 backlog

# ---- phase 1: a pause of about a second
N=$(sql "select count(*) from trigger_jobs where job_id like 'bl.%' and state = 'pending' and scheduled_at < now() - interval '4 s'")
echo "    figure: $N backlog instants older than the threshold before the pause"
expect_exit "pause the tenant" 0 "$PAL" pause --tenant bl --reason "one second"
out=$("$PAL" resume --tenant bl --reason "over" --config "$CLUSTER_CONF" --output json)
echo "$out" | jq -c '{released, misfired, tickets}' | sed 's/^/    | /'
expect_eq "short pause: no instant that waited before the gate existed is skipped" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id like 'bl.%' and state = 'skipped'")"
expect_eq "short pause: no misfire recorded with reason paused" 0 \
	"$(sql "select count(*) from misfires where reason = 'paused'")"
expect_eq "short pause: resume json: nothing misfired" "{}" "$(echo "$out" | jq -c '.misfired')"
check "short pause: resume json: the backlog released ($(echo "$out" | jq '[.released[]] | add // 0') >= $N)" \
	[ "$(echo "$out" | jq '[.released[]] | add // 0')" -ge "$N" ]
expect_eq "short pause: audit: the gate's start recorded" 1 \
	"$(sql "select count(*) from audit_log where action = 'resume' and details->>'gate_since' is not null")"

# ---- phase 2: a pause of 8 s over the backlog
expect_exit "pause the tenant again" 0 "$PAL" pause --tenant bl --reason "eight seconds"
G=$(sql "select extract(epoch from since) from gates where scope = 'tenant:bl'")
sleep 8
R0=$(sql "select extract(epoch from now())")
out=$("$PAL" resume --tenant bl --reason "over" --config "$CLUSTER_CONF" --output json)
echo "$out" | jq -c '{released, misfired, tickets}' | sed 's/^/    | /'
# (margins of a second: the pause and the resume each take time)
OLDER="scheduled_at < to_timestamp($G) - interval '4 s'"
BEFORE="scheduled_at > to_timestamp($G) - interval '2.5 s' and scheduled_at < to_timestamp($G)"
INSIDE="scheduled_at > to_timestamp($G) + interval '1 s' and scheduled_at < to_timestamp($R0) - interval '4 s'"
cnt() { sql "select count(*) from trigger_jobs where job_id = '$1' and $2"; }
B=$(cnt bl.skip "$OLDER")
echo "    figure: $B instants of bl.skip overdue past the threshold when the gate closed"
check "long pause: a backlog of at least 6 instants before the gate" [ "$B" -ge 6 ]
expect_eq "long pause: skip: no instant overdue past the threshold before the gate is skipped" 0 \
	"$(cnt bl.skip "$OLDER and state = 'skipped'")"
expect_eq "long pause: fire_once: no instant overdue past the threshold before the gate is skipped" 0 \
	"$(cnt bl.once "$OLDER and state = 'skipped'")"
expect_eq "long pause: skip: the older backlog stays pending (released)" "$B" \
	"$(cnt bl.skip "$OLDER and state = 'pending'")"
I=$(cnt bl.skip "$INSIDE")
check "long pause: the gate held at least 3 instants of bl.skip past the threshold ($I)" [ "$I" -ge 3 ]
expect_eq "long pause: skip: every instant the gate held past the threshold is skipped" "$I" \
	"$(cnt bl.skip "$INSIDE and state = 'skipped'")"
check "long pause: fire_once: all but at most one held past the threshold skipped" \
	[ "$(cnt bl.once "$INSIDE and state = 'skipped'")" -ge $(($(cnt bl.once "$INSIDE") - 1)) ]
J=$(cnt bl.skip "$BEFORE")
check "long pause: instants due in the 2.5 s before the gate closed exist ($J)" [ "$J" -ge 2 ]
expect_eq "long pause: skip: those (not yet past the threshold when the gate closed, held 8 s) are skipped" "$J" \
	"$(cnt bl.skip "$BEFORE and state = 'skipped'")"
expect_eq "long pause: the misfire rows start after the older backlog" 0 \
	"$(sql "select count(*) from misfires where reason = 'paused' and range_from <= to_timestamp($G) - interval '3 s'")"
check "long pause: resume json: skip misfired ($(echo "$out" | jq '.misfired.skip // 0') >= $I)" \
	[ "$(echo "$out" | jq '.misfired.skip // 0')" -ge "$I" ]
finish
