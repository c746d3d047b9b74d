#!/usr/bin/env bash
# Three controllers, 200 jobs every 2 s, and the faults of a bad day:
# kill -9 of a shard leader, a SIGSTOP past the session timeout, a drain and
# restart.  Afterwards no instant is missing and none is doubled.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G2 + G6 - with 3 nodes and 200 jobs every 2 s, through kill -9, SIGSTOP past the session timeout and a drain/restart: zero missing and zero duplicate instants (SQL on triggers and palisade verify); failover times measured"

fresh_db it_faults
"$PAL" migrate >/dev/null
ZK_SESSION=2s write_conf "$CLUSTER_CONF"
gen_jobs "$NODE_DIR/jobs.yaml" 200 "*/2 * * * * ?"
expect_exit "apply 200 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"

for n in n1 n2 n3; do start_node "$n"; done
wait_until "all 16 shards led and planned ahead" 30 all_shards_led
# The window starts after every job's activation (a new job's instants are
# those strictly after its effective_from).
T0=$(rfc3339_ago -1)
wait_until "leadership spreads: no node leads more than 6 shards" 20 \
	bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select max(c) from (select count(*) c from shards group by leader) x')\" -le 6 ]"
sleep 8

# Fault 1: kill -9 the leader of shard 0; measure until its shards are re-claimed.
victim=$(sql "select leader from shards where shard_id = 0")
victim_shards=$(shards_of "$victim")
t=$(date +%s%N)
kill9_node "$victim"
crash_reclaimed() { [ "$(sql "select count(*) from shards where shard_id in ($victim_shards) and leader <> '$victim'")" = "$(echo "$victim_shards" | tr ',' '\n' | wc -l)" ]; }
wait_until "kill -9 of $victim: shards $victim_shards re-claimed by others" 15 crash_reclaimed
CRASH_MS=$(( ($(date +%s%N) - t) / 1000000 ))
echo "    figure: crash failover ${CRASH_MS} ms (session timeout 2000 ms + scan interval 1000 ms)"
check "crash failover within session timeout + scan interval + 1 s slack" [ "$CRASH_MS" -le 4000 ]
sleep 5
start_node "$victim"
sleep 8

# Fault 2: SIGSTOP another node past the session timeout, then resume it.
paused=$(sql "select leader from shards where leader <> '$victim' and leader is not null limit 1")
paused_shards=$(shards_of "$paused")
pause_node "$paused"
paused_reclaimed() { [ "$(sql "select count(*) from shards where shard_id in ($paused_shards) and leader <> '$paused'")" = "$(echo "$paused_shards" | tr ',' '\n' | wc -l)" ]; }
wait_until "while $paused is stopped its shards move to others" 15 paused_reclaimed
sleep 2
resume_node "$paused"
wait_until "$paused observes its session expiry and opens a new session" 20 grep -q '"event":"coord.session.expired"' "$NODE_DIR/$paused.log"
sleep 8

# Fault 3: drain a third node (graceful handoff), measure, restart it.
third=$(sql "select leader from shards where leader not in ('$victim', '$paused') and leader is not null limit 1")
[ -n "$third" ] || third=$victim
third_shards=$(shards_of "$third")
t=$(date +%s%N)
expect_exit "palisade drain --node $third" 0 "$PAL" drain --node "$third" --zk "$PALISADE_ZK" --config "$CLUSTER_CONF"
drained() { [ "$(sql "select count(*) from shards where shard_id in ($third_shards) and leader <> '$third'")" = "$(echo "$third_shards" | tr ',' '\n' | wc -l)" ]; }
wait_until "drain of $third: shards $third_shards taken over" 10 drained
HANDOFF_MS=$(( ($(date +%s%N) - t) / 1000000 ))
echo "    figure: graceful handoff ${HANDOFF_MS} ms"
check "graceful handoff under one second" [ "$HANDOFF_MS" -lt 1000 ]
wait "${NODE_PID[$third]}"; rc=$?
unset "NODE_PID[$third]"
expect_eq "drained node exits 0" 0 "$rc"
start_node "$third"
# Keep the load on for several minutes in all (LOAD_SECONDS, default 180).
T0_S=$(date -d "$T0" +%s)
left=$(( T0_S + ${LOAD_SECONDS:-180} - $(date +%s) ))
[ "$left" -gt 0 ] && sleep "$left"
echo "    figure: load ran $(( $(date +%s) - T0_S )) s"

# Judge everything that is at least 20 s old (all planned well before).
T1=$(rfc3339_ago 20)
expect_exit "palisade verify over the whole fault window" 0 "$PAL" verify --from "$T0" --to "$T1"
echo "    $OUT" | head -3
expect_eq "SQL: no plan key has more than one trigger" 0 \
	"$(sql "select count(*) from (select 1 from trigger_jobs where request_id is null group by job_id, scheduled_at, partition having count(*) > 1) d")"
n_inst=$(sql "select count(*) from generate_series('$T0'::timestamptz, '$T1'::timestamptz, interval '1 s') g where extract(epoch from g)::bigint % 2 = 0")
echo "    window $T0 .. $T1; per-job trigger counts: $(sql "select string_agg(n || ' instants: ' || c || ' jobs', ', ') from (select n, count(*) c from (select count(*) n from trigger_jobs where scheduled_at between '$T0' and '$T1' group by job_id) x group by n) y")"
expect_eq "SQL: every job has every 2-second instant in the window ($n_inst each)" "200" \
	"$(sql "select count(*) from (select job_id from trigger_jobs where scheduled_at between '$T0' and '$T1' group by job_id having count(*) = $n_inst) x")"
fenced=$(cat "$NODE_DIR"/*.log | grep -c '"event":"controller.fenced"')
echo "    figure: fenced planning transactions during the run: $fenced"
finish
