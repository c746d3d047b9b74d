#!/usr/bin/env bash
# The console's next instants of an `every` without `start` are those of
# `jobs --next`: the latest version's, counted from where the controller
# takes it over (its activation, or while it awaits activation the shard's
# watermark), not from the active version's activation nor the host's
# clock.  Read from the console's JSON (/api/job and
# /api/cluster?section=jobs) of a node without the controller role right
# after a re-apply that changes the interval, while the controller is
# stopped (the version awaits activation), and compared with `jobs --next`
# and with what is then planned.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the console names the next instants the controller then plans, as jobs --next does"
it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
gen_sink_jobs "$NODE_DIR/n.yaml" 1 "unused" t1 cn.every
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 3s}|" "$NODE_DIR/n.yaml"
start_node f1
start_node f2 --roles executor
wait_until "shards led" 40 all_shards_led
A=${NODE_ADMIN[f2]}
J=cn.every.job-1
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/n.yaml"
sleep 5
epochs() { python3 -c 'import json,sys,datetime
j=json.load(sys.stdin)
if "jobs" in j: j=[r for r in j["jobs"]["rows"] if r["job_id"]==sys.argv[1]][0]
print(" ".join(str(int(datetime.datetime.strptime(x,"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())) for x in j["next"]))' "$J"; }
job_next() { curl -s "http://$A/api/job?id=$J" | epochs | cut -d" " -f1-3; }
list_next() { curl -s "http://$A/api/cluster?section=jobs" | epochs; }
cli_next() { "$PAL" jobs --next 3 "$J" --output json | python3 -c 'import json,sys
j=json.load(sys.stdin); j=j[0] if isinstance(j,list) else j; print(json.dumps({"next":j["next"]}))' | epochs; }
planned_after() { sql "select coalesce(string_agg(extract(epoch from scheduled_at)::bigint::text, ' ' order by scheduled_at),'') from (select scheduled_at from trigger_jobs where job_id = '$1' and scheduled_at > to_timestamp($2) order by 1 limit $3) x"; }
# the interval changes from 3 s to 7 s; the console is asked right after
# the apply, before the (stopped) controller activates the version
sed -i "s|every: 3s|every: 7s|" "$NODE_DIR/n.yaml"
pause_node f1
expect_exit "re-apply with every 7s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/n.yaml"
NOW=$(date +%s)
C1=$(job_next); L1=$(list_next | cut -d" " -f1-2); K1=$(cli_next)
resume_node f1
LAST=$(awk '{print $NF}' <<<"$K1")
past_last() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at >= to_timestamp(${LAST:-0})")" -ge 1 ]; }
wait_until "planning passed the instants named" 40 past_last
P=$(planned_after "$J" "$NOW" 40)
rel() { for x in $1; do printf '%s ' $((x - NOW)); done; }
echo "    planned after the apply (NOW=$NOW): $(rel "$P")"
echo "    right after the apply: /api/job $(rel "$C1"); /api/cluster $(rel "$L1"); jobs --next $(rel "$K1")"
inp() { [ -n "$1" ] || return 1; for x in $1; do grep -qw "$x" <<<"$P" || return 1; done; }
expect_eq "the job page's next instants = jobs --next" "$K1" "$C1"
expect_eq "the job list's next instants = jobs --next" "$(cut -d" " -f1-2 <<<"$K1")" "$L1"
check "the job page's next instants right after the apply are then planned" inp "$C1"
check "the job list's next instants right after the apply are then planned" inp "$L1"
check "jobs --next right after the apply names instants that are then planned" inp "$K1"
stop_node f2
stop_node f1
finish
