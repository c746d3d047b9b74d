#!/usr/bin/env bash
# Graceful handoff from a handoff row (docs/controller.md, "Graceful
# handoff"): a draining controller names, per shard, the jobs with an
# instant within its horizon; the successor loads only those, plans at once
# with its ticks capped at the horizon, and loads the rest after its first
# tick.  Jobs every second, idle jobs, and jobs whose one instant lies
# beyond the horizon: none missing, none doubled; a row that no longer
# matches the shard's watermark is ignored (the whole shard is loaded first).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 - a graceful handoff that plans from the drained leader's handoff row before the rest of the shard is loaded: every instant of every-second jobs and of jobs due past the row's horizon planned exactly once; a stale row is ignored"

SHARDS=4
fresh_db it_handoff
"$PAL" migrate >/dev/null
ZK_SESSION=2s write_conf "$CLUSTER_CONF"
# Every-second jobs in shards 1-3 only: shard 0's row names no job (an
# empty list, not "every job").
python3 - "$NODE_DIR/every.yaml" <<'PY'
import sys
def shard(jid, n=4):
    h = 0xcbf29ce484222325
    for b in jid.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % n
ids = [i for i in ("every.job-%d" % k for k in range(1, 200)) if shard(i) != 0][:40]
with open(sys.argv[1], "w") as o:
    o.write("jobs:\n")
    for i in ids:
        o.write('  - {id: %s, schedule: {cron: "* * * * * ?"}, misfire: {policy: skip},'
                ' target: {url: "http://127.0.0.1:9/x"}}\n' % i)
PY
gen_jobs "$NODE_DIR/idle.yaml" 400 "0 0 0 1 1 ?" skip idle
expect_exit "apply 440 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/every.yaml" \
	"$NODE_DIR/idle.yaml"

start_node n1
start_node n2
wait_until "all 4 shards led and planned ahead" 30 all_shards_led
wait_until "both nodes lead a shard" 30 bash -c \
	"[ \"\$(psql '$PALISADE_PG' -XAtqc 'select count(distinct leader) from shards')\" = 2 ]"
# Jobs with one instant 55 s from now: past the row's horizon (watermark +
# lookahead 5 s + 30 s, at most ~40 s after the drain) at the drain below,
# so they are no handoff row's jobs and are planned only after the
# successor loaded the rest of their shards.  The apply and the 3 s before
# the drain take 4-6 s; the check before the drain fails the test if they
# ever take over 10 s, rather than letting the instant fall inside the
# horizon unnoticed.  The test waits for this instant, so it sets the
# test's length.
LATER=$(($(date +%s) + 55))
gen_jobs "$NODE_DIR/later.yaml" 20 "$(date -u -d "@$LATER" '+%-S %-M %-H %-d %-m ?')" skip later
expect_exit "apply 20 jobs due past the horizon" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/later.yaml"
sleep 3
T0=$(rfc3339_ago -1)
victim=$(sql "select leader from shards where shard_id = 0")
survivor=$([ "$victim" = n1 ] && echo n2 || echo n1)
victim_shards=$(shards_of "$victim")
nv=$(echo "$victim_shards" | tr ',' '\n' | wc -l)
lines_before=$(wc -l <"$NODE_DIR/$survivor.log")
check "the drain is more than 45 s before the later jobs' instant" [ $(($(date +%s) + 45)) -lt "$LATER" ]
stop_node "$victim"
expect_eq "the drained node exits 0" 0 "${NODE_EXIT[$victim]}"
taken() { [ "$(sql "select count(*) from shards where shard_id in ($victim_shards) and leader = '$survivor'")" = "$nv" ]; }
wait_until "$survivor leads $victim's shards $victim_shards" 15 taken
wait_until "$survivor logged the loads of the rest" 15 bash -c \
	"[ \"\$(tail -n +$((lines_before + 1)) '$NODE_DIR/$survivor.log' | grep -c '\"event\":\"controller.shard_loaded\"')\" = $nv ]"
after=$(tail -n +$((lines_before + 1)) "$NODE_DIR/$survivor.log")
for s in ${victim_shards//,/ }; do
	acq=$(echo "$after" | grep '"event":"controller.shard_acquired"' | grep "\"shard\":$s," | tail -1)
	every=$(sql "select count(*) from jobs where shard = $s and job_id like 'every.%'")
	all=$(sql "select count(*) from jobs where shard = $s")
	expect_match "shard $s acquired from the handoff row" '"handoff":true' "$acq"
	expect_match "shard $s: first load = the $every every-second jobs only" "\"jobs\":$every," "$acq"
	expect_match "shard $s: then all $all jobs" "\"jobs\":$all," \
		"$(echo "$after" | grep '"event":"controller.shard_loaded"' | grep "\"shard\":$s,")"
done
expect_eq "the successor deleted the rows it used" 0 \
	"$(sql "select count(*) from shard_handoffs where shard_id in ($victim_shards)")"

# Past the later jobs' instant (and planned well before it).
while [ "$(date +%s)" -le $((LATER + 2)) ]; do sleep 1; done
T1=$(date -u -d "@$LATER" +%Y-%m-%dT%H:%M:%SZ)
n_inst=$(sql "select count(*) from generate_series('$T0'::timestamptz, '$T1'::timestamptz, interval '1 s')")
expect_eq "every every-second job has each of the $n_inst instants of the window once" 40 \
	"$(sql "select count(*) from (select job_id from trigger_jobs where job_id like 'every.%' and scheduled_at between '$T0' and '$T1' group by job_id having count(*) = $n_inst and count(distinct scheduled_at) = $n_inst) x")"
expect_eq "every later job has its one instant, once" 20 \
	"$(sql "select count(*) from (select job_id from trigger_jobs where job_id like 'later.%' and scheduled_at = '$T1' group by job_id having count(*) = 1) x")"
expect_eq "no plan key has more than one trigger" 0 \
	"$(sql "select count(*) from (select 1 from trigger_jobs group by job_id, scheduled_at, partition having count(*) > 1) d")"
expect_exit "palisade verify over the window" 0 "$PAL" verify --from "$T0" --to "$T1"

# The survivor drains too: a row per shard.  Made stale (as if someone had
# planned after it was written) and emptied, it must not be used.
stop_node "$survivor"
expect_eq "a drain writes a row per led shard" 4 "$(sql "select count(*) from shard_handoffs")"
sql "update shard_handoffs set watermark = watermark - interval '1 s', job_ids = '{}'" >/dev/null
lines_before=$(wc -l <"$NODE_DIR/$victim.log")
start_node "$victim"
wait_until "$victim leads all 4 shards again" 30 bash -c \
	"[ \"\$(psql '$PALISADE_PG' -XAtqc \"select count(*) from shards where leader = '$victim'\")\" = 4 ]"
wait_until "and logged their acquisition" 15 bash -c \
	"[ \"\$(tail -n +$((lines_before + 1)) '$NODE_DIR/$victim.log' | grep -c '\"event\":\"controller.shard_acquired\"')\" = 4 ]"
acq=$(tail -n +$((lines_before + 1)) "$NODE_DIR/$victim.log" | grep '"event":"controller.shard_acquired"')
expect_eq "with stale rows no shard is acquired from a handoff row" 0 \
	"$(echo "$acq" | grep -c '"handoff":true')"
expect_eq "and every shard is loaded whole before planning (460 jobs)" 460 \
	"$(echo "$acq" | grep -o '"jobs":[0-9]*' | cut -d: -f2 | awk '{s += $1} END {print s}')"
finish
