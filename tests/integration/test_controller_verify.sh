#!/usr/bin/env bash
# palisade verify fails (exit 2: "verify found a mismatch") on each kind of
# broken promise, and only then: a deleted trigger row (missing), an effect
# applied twice at the sink (--sink-pg), a trigger left in a non-terminal
# state (stuck), a job that should have been activated and never was.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "verify exits 2 on a missing instant, an effect applied twice (--sink-pg), a stuck trigger and a never-activated job, and 0 on a clean run"

it_db verify
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
gen_sink_jobs "$NODE_DIR/jobs.yaml" 3 "*/2 * * * * ?" t1 vf
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
T0=$(rfc3339_ago -2)
lead_shards 20 v1
sleep 10
T1=$(rfc3339_ago 4)
settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$T0' and '$T1' and state <> 'succeeded'")" = 0 ]; }
wait_until "the window's triggers succeeded" 30 settled
V=("$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG")
expect_exit "verify of a clean run, with the sink's database" 0 "${V[@]}"
echo "    $OUT" | head -1

# An effect applied twice at the sink: a second ledger row for a key and
# chunk, applied now (its ctid is kept: the sink goes on applying).
copy=$(sql "insert into sink_applies (key_id, fence, chunk)
     select key_id, fence, chunk from sink_applies limit 1
     returning ctid")
expect_exit "an effect applied twice: verify --sink-pg fails" 2 "${V[@]}"
expect_match "it names the key" "sink_duplicates=1" "$OUT"
expect_match "and shows it" "sink_dup +key vf" "$OUT"
sql "delete from sink_applies where ctid = '$copy'" >/dev/null
expect_exit "clean again once the copy is gone" 0 "${V[@]}"

# A deleted trigger row: an instant neither planned nor recorded.
sql "with t as (select id from triggers where scheduled_at between '$T0' and '$T1' order by id limit 1),
       a as (delete from attempts where trigger_id in (select id from t))
     delete from triggers where id in (select id from t)" >/dev/null
expect_exit "a deleted trigger row: verify fails" 2 "$PAL" verify --from "$T0" --to "$T1"
expect_match "one missing" "missing=1 " "$OUT"

# A stuck trigger: no executor takes the planned-ahead triggers any more.
# T2 is taken while the node still runs, 3 s ahead: within the 5 s
# lookahead, so every instant up to it is already planned (taken after the
# stop, a slow drain could put it past the last watermark: "missing").
T2=$(rfc3339_ago -3)
stop_node v1
sleep 4
expect_exit "a trigger left pending past --stuck-after: verify fails" 2 \
	"$PAL" verify --job vf.job-1 --from "$T1" --to "$T2" --stuck-after 1s
expect_match "stuck counted and shown" "stuck=[1-9].*" "$OUT"
expect_match "with its state" "stuck +trigger [0-9]+ vf.job-1 .* pending since" "$OUT"
expect_exit "not stuck under the default bound (1h)" 0 "$PAL" verify --job vf.job-1 --from "$T1" --to "$T2"

# A job stored ten minutes ago that no controller ever activated.
cat >"$NODE_DIR/never.yaml" <<YAML
jobs:
  - {id: vf.never, schedule: {cron: "0 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply a job while no controller runs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/never.yaml"
sql "update job_versions set created_at = now() - interval '10 minutes' where job_id = 'vf.never'" >/dev/null
expect_exit "a version that should be active and never activated: verify fails" 2 \
	"$PAL" verify --job vf.never --from "$(rfc3339_ago 900)" --to "$T2"
expect_match "never_activated counted, its instants missing" "missing=(9|10|11) .*never_activated=1" "$OUT"
expect_exit "within the grace (stored just now) it is not yet a mismatch" 0 \
	"$PAL" verify --job vf.never --from "$(rfc3339_ago 900)" --to "$(rfc3339_ago 570)"
finish
