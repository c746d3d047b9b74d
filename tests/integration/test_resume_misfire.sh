#!/usr/bin/env bash
# A pause that ends releases what it held through each job's misfire
# policy, as downtime does: instants held past the threshold are fired or
# recorded (reason paused, with the gate), never all run at once.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G7 - on resume, instants a pause held past the misfire threshold follow the job's policy (skip: none run, fire_once: one, none when it is older than catchup_window, fire_all: all in the window); each not run is a recorded misfire"
T_START=$(date +%s)

it_db
sink_up
misfire_cluster r1 "lease: 5s, heartbeat: 1s" <<YAML
jobs:
  - {id: rs.skip, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/skip"}}
  - {id: rs.once, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: fire_once}, target: {url: "http://$SINK_ADDR/effects/once"}}
  - {id: rs.once-1s, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: fire_once, catchup_window: 1s}, target: {url: "http://$SINK_ADDR/effects/once-1s"}}
  - {id: rs.all, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: fire_all, catchup_window: 1h, max_catchup: 1000}, target: {url: "http://$SINK_ADDR/effects/all"}}
  - {id: rs.manual, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: manual}, target: {url: "http://$SINK_ADDR/effects/manual"}}
  - {id: rs.kept, tenant: rs, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip}, target: {url: "http://$SINK_ADDR/effects/kept"}}
YAML
ran() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'rs.%' and state = 'succeeded'")" -ge 8 ]; }
wait_until "every job runs before the pause" 20 ran
expect_exit "pause the tenant" 0 "$PAL" pause --tenant rs --reason "resume policy test"
P0=$(sql "select extract(epoch from since)::bigint from gates where scope = 'tenant:rs'")
# Held for 12 s with a threshold of 3 s: about 9 instants per job are held
# past the threshold at the resume, the last 3 or so are younger.
sleep 12
# Two of rs.kept's held-past instants are not the pause's to decide: one
# was running and stopped at its safe point (paused: it had an attempt),
# one is a manual run an operator asked for (with --new-effect: the
# scheduler's trigger for that instant is still pending, so trigger refuses
# a plain run of it).
KEPT=$(sql "select id from trigger_jobs where job_id = 'rs.kept' and state = 'pending' and scheduled_at > to_timestamp($P0 + 1) order by scheduled_at limit 1")
sql "update triggers set state = 'running', fence = nextval('palisade_fence'), lease_owner = 'gone', lease_until = clock_timestamp() + interval '1 min', attempt_count = 1 where id = $KEPT" >/dev/null
sql "update triggers set state = 'pausing' where id = $KEPT" >/dev/null
sql "update triggers set state = 'paused', lease_owner = NULL, lease_until = NULL where id = $KEPT" >/dev/null
AT=$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = 'rs.kept' and state = 'pending' and scheduled_at > to_timestamp($P0 + 1) order by scheduled_at limit 1")
expect_exit "a manual run at a held instant" 0 "$PAL" trigger --job rs.kept --at "$AT" --request-id kept-1 --new-effect --reason "deliberate"
R0=$(sql "select extract(epoch from now())::bigint")
out=$("$PAL" resume --tenant rs --reason "over" --config "$CLUSTER_CONF" --output json)
echo "$out" | sed 's/^/    | /'
R1=$(sql "select extract(epoch from now())::bigint")
sleep 4
# Instants inside the pause, older than the threshold at the resume (a
# second of margin on both sides: the pause and the resume each took time).
OLD="scheduled_at > to_timestamp($((P0 + 1))) and scheduled_at < to_timestamp($((R0 - 3 - 1)))"
held() { sql "select count(*) from trigger_jobs where job_id = '$1' and source = 'schedule' and $OLD"; }
calls() { sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = '$1' and t.source = 'schedule' and t.${OLD//and /and t.}"; }
paused_misfires() { sql "select coalesce(sum(count), 0) from misfires where job_id = '$1' and reason = 'paused' and gate = 'tenant:rs'"; }
N=$(held rs.skip)
echo "    figure: $N instants per job held past the threshold (pause ${P0}..${R0}, threshold 3 s)"
check "the pause held at least 5 instants past the threshold" [ "$N" -ge 5 ]
expect_eq "skip: no call for an instant held past the threshold" 0 "$(calls rs.skip)"
check "skip: each recorded as a misfire, reason paused, gate tenant:rs ($(paused_misfires rs.skip) >= $N)" [ "$(paused_misfires rs.skip)" -ge "$N" ]
expect_eq "skip: every held-past instant is skipped" "$N" "$(sql "select count(*) from trigger_jobs where job_id = 'rs.skip' and state = 'skipped' and $OLD")"
# (from P0 + 1, as OLD: the gate's since is cut to the second, and the
# instant right after it may have been claimed ahead of its time before
# the pause committed)
held_past_calls() { sql "select count(*) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = '$1' and t.source = 'schedule' and t.scheduled_at > to_timestamp($((P0 + 1))) and t.scheduled_at <= (select (details->>'held_before')::timestamptz from audit_log where action = 'resume' order by id desc limit 1)"; }
expect_eq "fire_once: exactly one call for the instants held past the threshold" 1 "$(held_past_calls rs.once)"
check "fire_once: the rest recorded as misfires ($(paused_misfires rs.once) >= $((N - 1)))" [ "$(paused_misfires rs.once)" -ge $((N - 1)) ]
# held past the threshold (3 s) is older than a 1 s window: none runs,
# counted up to the resume's cut (the newest held-past instant, the one
# fire_once would pick, lies beyond OLD's margin)
expect_eq "fire_once, catchup_window 1s: no call for an instant held past the threshold" 0 "$(held_past_calls rs.once-1s)"
check "fire_once, catchup_window 1s: each recorded as a misfire, reason paused ($(paused_misfires rs.once-1s) >= $N)" [ "$(paused_misfires rs.once-1s)" -ge "$N" ]
expect_eq "fire_once, catchup_window 1s: every held-past instant is skipped" "$N" "$(sql "select count(*) from trigger_jobs where job_id = 'rs.once-1s' and state = 'skipped' and $OLD")"
all_done() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rs.all' and $OLD and state = 'succeeded'")" -eq "$N" ]; }
wait_until "fire_all: every instant within the window runs" 10 all_done
expect_eq "fire_all: no misfire recorded" 0 "$(paused_misfires rs.all)"
expect_eq "manual: no call" 0 "$(calls rs.manual)"
expect_eq "manual: one open ticket naming the gate" 1 "$(sql "select count(*) from tickets where job_id = 'rs.manual' and state = 'open' and evidence->>'gate' = 'tenant:rs'")"
kept_ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rs.kept' and state = 'succeeded' and (id = $KEPT or source = 'manual')")" -eq 2 ]; }
wait_until "a trigger paused at its safe point and a manual run, both held past the threshold, run (never skipped)" 10 kept_ran
check "the rest of rs.kept's held-past instants were skipped (skip policy)" [ "$(sql "select count(*) from trigger_jobs where job_id = 'rs.kept' and state = 'skipped' and $OLD")" -ge $((N - 2)) ]
young() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rs.skip' and scheduled_at > to_timestamp($R1) - interval '2 s' and scheduled_at < to_timestamp($R1) and state = 'succeeded'")" -ge 1 ]; }
wait_until "skip: instants younger than the threshold run as before" 10 young
expect_eq "json: misfired per policy (skip: rs.skip and rs.kept)" "$(sql "select sum(count) from misfires where reason = 'paused' and policy = 'skip'")" "$(echo "$out" | jq -r '.misfired.skip')"
check "json: released per policy (fire_all >= $N)" [ "$(echo "$out" | jq -r '.released.fire_all')" -ge "$N" ]
expect_eq "audit: the resume row has both" "$(echo "$out" | jq -Sc '[.released, .misfired]')" "$(sql "select json_build_array(details->'released', details->'misfired') from audit_log where action = 'resume' order by at desc limit 1" | jq -Sc .)"
T0=$(sql "select to_char(min(effective_from) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from job_versions")
expect_exit "verify: every instant fired or recorded" 0 "$PAL" verify --from "$T0" --to "$(rfc3339_ago 3)"
echo "    figure: took $(( $(date +%s) - T_START )) s"
finish
