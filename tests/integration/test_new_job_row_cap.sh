#!/usr/bin/env bash
# Brand-new jobs applied with a long lookahead: the tick activating a job
# plans its instants from the activation up to the watermark, here 600
# every-second jobs x ~120 s = ~72 000 rows, more than a tick's row cap
# (50 000).  A tick activates new jobs only while their rows below the
# watermark fit in the cap and plans those rows whole; the other jobs wait
# for the next tick, activated as of the same instant.  Then a kill -9 of
# the controller once all are activated and a new leader (resuming the
# active jobs at watermark - overlap): every instant of the new jobs in
# (activation, watermark] has a trigger or a misfire, and `palisade verify`
# agrees.  (A tick that committed the activations with only the first
# 50 000 rows left the instants from there to watermark - overlap without
# either once the controller died.)
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 new jobs over the row cap: activated in slices, each planned whole up to the watermark; a crash loses nothing"
cap_leader it_new_job_row_cap
N=600
gen_sink_jobs "$NODE_DIR/a.yaml" $N "* * * * * ?" t1 cap
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a.yaml" >/dev/null
all_active() { [ "$(sql "select count(*) from job_versions where job_id like 'cap.%' and effective_from is not null")" = $N ]; }
wait_until "the $N jobs activated" 40 all_active
kill9_node f1
ROWS=$(sql "select count(*) from trigger_jobs where job_id like 'cap.%'")
echo "    rows planned before the kill: $ROWS"
expect_eq "all activated as of the same instant (the tick that first saw them)" 1 \
	"$(sql "select count(distinct effective_from) from job_versions where job_id like 'cap.%'")"
lost() { cap_undecided "extract(epoch from v.effective_from)"; }
expect_eq "before the restart: every instant in (activation, watermark] has a trigger or a misfire" 0 "$(lost)"
start_node f2
wait_until "shards led again" 40 all_shards_led
sleep 6
expect_eq "after the restart: every instant in (activation, watermark] has a trigger or a misfire" 0 "$(lost)"
expect_eq "no instant has two triggers" 0 "$(cap_twice)"
A=$(sql "select max(extract(epoch from effective_from))::bigint from job_versions where job_id like 'cap.%'")
from=$(date -u -d "@$((A - 2))" +%Y-%m-%dT%H:%M:%SZ)
past() { [ "$(date +%s)" -gt $((A + 35)) ]; }
wait_until "35 s past the activations" 60 past
to=$(date -u -d "@$((A + 30))" +%Y-%m-%dT%H:%M:%SZ)
out=$("$PAL" verify --from "$from" --to "$to" 2>&1); rc=$?
echo "$out" | head -3 | sed 's/^/      verify: /'
expect_eq "verify from the activation on: clean" 0 "$rc"
stop_node f2
finish
