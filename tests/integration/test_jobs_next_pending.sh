#!/usr/bin/env bash
# `jobs --next` of an `every` without `start` counts from where the
# controller takes the latest version over: its activation, or while it
# awaits activation the shard's watermark (as plan diff does), not the
# host's clock. And `jobs --next` of a spread/jitter cron names the
# instants then planned.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "jobs --next names the instants the controller then plans"
it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
gen_sink_jobs "$NODE_DIR/n.yaml" 1 "unused" t1 jn.every
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 3s}|" "$NODE_DIR/n.yaml"
gen_sink_jobs "$NODE_DIR/c.yaml" 1 "*/7 * * * * ?" t1 jn.cron
sed -i "s|schedule: {cron: \"\*/7 \* \* \* \* ?\"}|schedule: {cron: \"*/7 * * * * ?\", spread: 3s, jitter: 5s}|" "$NODE_DIR/c.yaml"
lead_shards 40 f1
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/n.yaml" "$NODE_DIR/c.yaml"
sleep 5
nxt() { "$PAL" jobs --next "$2" "$1" --output json | python3 -c 'import json,sys,datetime
j=json.load(sys.stdin); j=j[0] if isinstance(j,list) else j
print(" ".join(str(int(datetime.datetime.strptime(x,"%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp())) for x in j["next"]))'; }
planned_after() { sql "select coalesce(string_agg(extract(epoch from scheduled_at)::bigint::text, ' ' order by scheduled_at),'') from (select scheduled_at from trigger_jobs where job_id = '$1' and scheduled_at > to_timestamp($2) order by 1 limit $3) x"; }
NOWC=$(date +%s)
CN=$(nxt jn.cron.job-1 4)
# the interval changes from 3 s to 7 s; jobs --next asked right after the
# apply (before the controller activates the version) and once activated
sed -i "s|every: 3s|every: 7s|" "$NODE_DIR/n.yaml"
expect_exit "re-apply with every 7s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/n.yaml"
NOW=$(date +%s)
N1=$(nxt jn.every.job-1 3)
sleep 3
N2=$(nxt jn.every.job-1 3)
# the checks need every instant named above planned (or never to be): wait
# until every shard's watermark is past the latest of them
last=$(printf '%s\n' $N1 $N2 $CN | sort -n | tail -1)
wait_until "every shard planned past the latest instant named" 60 planned_past "$(date -u -d "@${last:-$((NOW + 25))}" +%FT%TZ)"
P=$(planned_after jn.every.job-1 "$NOW" 40)
echo "    planned after the apply (NOW=$NOW): $(for x in $P; do printf '%s ' $((x - NOW)); done)"
echo "    jobs --next right after the apply: $(for x in $N1; do printf '%s ' $((x - NOW)); done); 3 s later: $(for x in $N2; do printf '%s ' $((x - NOW)); done)"
inp() { [ -n "$1" ] || return 1; for x in $1; do grep -qw "$x" <<<"$P" || return 1; done; }
check "jobs --next right after the apply names instants that are then planned" inp "$N1"
check "jobs --next once activated names instants that are then planned" inp "$N2"
expect_eq "jobs --next of the spread/jitter cron = the planned ones" "$CN" "$(planned_after jn.cron.job-1 "$NOWC" 4)"
stop_node f1
finish
