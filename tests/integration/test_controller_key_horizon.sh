#!/usr/bin/env bash
# sink.key_retention lowered under running jobs: a controller re-checks the
# jobs of its shards against it on reload (SIGHUP), at start and when a job
# changes, and reports each job whose key horizon (docs/protocol.md, "How
# long to keep keys") exceeds it - a log event, the gauge
# palisade_controller_jobs_key_horizon_exceeded, one open ticket per job,
# `palisade verify` (exit 2) - while it keeps planning the job.  A check
# that finds the job fitting again resolves the ticket.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a job whose idempotency key may outlive the services' key retention is never silent: after sink.key_retention is lowered by a reload or a restart, every such job of a controller's shards is logged, counted, ticketed and reported by verify, keeps being planned, and its ticket closes once it fits again"

it_db key_horizon
SHARDS=2
conf() { SHARDS=2 write_conf "$CLUSTER_CONF" "sink: {key_retention: $1}"; }
conf 7d
# kh.long may retry for 3 days (max_age 3d): its horizon is 3d + 30 s.
# kh.short keeps the defaults (cut by max_age 1h).
apply_jobs "apply under sink.key_retention 7d" <<'YAML'
jobs:
  - id: kh.long
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://127.0.0.1:9/x"}
    retry: {max_attempts: 50, backoff: {max: 2h}, max_age: 3d}
  - id: kh.short
    schedule: {cron: "* * * * * ?"}
    misfire: skip
    target: {url: "http://127.0.0.1:9/x"}
YAML
T0=$(rfc3339_ago -2)
lead_shards 20 k1
checked() { [ "$(grep -c '"event":"controller.key_horizon_checked".*"checked":"'"$1"'"' "$NODE_DIR/k1.log")" -ge "$2" ]; }
wait_until "the jobs are checked when the shards are acquired" 20 checked "shard acquired" 2
open_tickets() { sql "select count(*) from tickets where state = 'open' and reason = 'key horizon exceeds sink.key_retention'${1:+ and job_id = '$1'}"; }
expect_eq "under 7d nothing exceeds: no ticket" 0 "$(open_tickets)"
expect_eq "gauge 0" 0 "$(metric k1 palisade_controller_jobs_key_horizon_exceeded)"

# The operator lowers the retention to 2 days and reloads.
conf 2d
kill -HUP "${NODE_PID[k1]}"
wait_until "the reload re-checks every led shard" 10 checked "configuration reloaded" 2
wait_until "the job over 2d is logged" 5 grep -q '"event":"controller.key_horizon_exceeded".*"job":"kh.long".*"key_horizon":"3d30s".*"key_retention":"2d".*"checked":"configuration reloaded"' "$NODE_DIR/k1.log"
check "the job under 2d is not" bash -c "! grep -q '\"event\":\"controller.key_horizon_exceeded\".*\"job\":\"kh.short\"' '$NODE_DIR/k1.log'"
expect_eq "one open ticket, for kh.long, naming the horizon and the retention" "1|kh.long|259230000|172800000|k1|{abandon}" \
	"$(sql "select count(*) over (), job_id, evidence->>'horizon_ms', evidence->>'key_retention_ms', evidence->>'node', allowed_actions from tickets where state = 'open' and reason = 'key horizon exceeds sink.key_retention'")"
expect_eq "gauge 1" 1 "$(metric k1 palisade_controller_jobs_key_horizon_exceeded)"
expect_eq "status of the node names the count" 1 \
	"$(curl -s "http://${NODE_ADMIN[k1]}/status" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("key_horizon_exceeded"))' 2>/dev/null)"
at_long() { sql "select coalesce(extract(epoch from max(scheduled_at))::bigint, 0) from trigger_jobs where job_id = 'kh.long'"; }
a1=$(at_long)
sleep 3
check "kh.long keeps being planned (a warning, not a refusal)" [ "$(at_long)" -gt "$a1" ]
T1=$(rfc3339_ago 1)
expect_exit "verify reports it (exit 2)" 2 "$PAL" verify --from "$T0" --to "$T1"
expect_match "verify counts it" "key_horizon=1" "$OUT"
expect_match "verify names the job, horizon and retention" "key_horizon +kh.long v1 may send a key 259230 s after its instant, sink.key_retention of node k1 is 172800 s" "$OUT"
expect_exit "verify of the other job alone is clean" 0 "$PAL" verify --job kh.short --from "$T0" --to "$T1"

# A second reload and a restart report it again, without a second ticket.
kill -HUP "${NODE_PID[k1]}"
wait_until "a second reload checks again" 10 checked "configuration reloaded" 4
stop_node k1
start_node k1
wait_until "shards led after the restart" 20 all_shards_led
wait_until "the restart under 2d reports it" 20 grep -q '"event":"controller.key_horizon_exceeded".*"job":"kh.long".*"checked":"shard acquired"' "$NODE_DIR/k1.log"
expect_eq "still one open ticket" 1 "$(open_tickets)"
wait_until "gauge 1 after the restart" 10 bash -c "[ \"\$(curl -s http://${NODE_ADMIN[k1]}/metrics | awk '\$1 == \"palisade_controller_jobs_key_horizon_exceeded\" {print \$2}')\" = 1 ]"

# The job is changed to fit: the check of the changed job closes the ticket.
sed -i 's/max_age: 3d/max_age: 1d/' "$NODE_DIR/jobs.yaml"
expect_exit "apply kh.long with max_age 1d under 2d" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
closed() { [ "$(open_tickets kh.long)" = 0 ]; }
wait_until "the changed job fits: its ticket is resolved" 10 closed
expect_eq "resolved as fits by the controller" "resolved|fits|controller:k1" \
	"$(sql "select state, resolution, actor from tickets where reason = 'key horizon exceeds sink.key_retention' order by id desc limit 1")"
wait_until "gauge back to 0" 5 bash -c "[ \"\$(curl -s http://${NODE_ADMIN[k1]}/metrics | awk '\$1 == \"palisade_controller_jobs_key_horizon_exceeded\" {print \$2}')\" = 0 ]"

# Lowered below it again, then raised back by a reload: opened, then resolved.
conf 12h
kill -HUP "${NODE_PID[k1]}"
wait_until "under 12h it exceeds again: a new ticket" 10 bash -c "[ \"\$(psql \"\$PALISADE_PG\" -XAtqc \"select count(*) from tickets where state = 'open' and job_id = 'kh.long'\")\" = 1 ]"
conf 7d
kill -HUP "${NODE_PID[k1]}"
wait_until "raised to 7d by a reload: resolved" 10 closed
sleep 1
T2=$(rfc3339_ago 1)
expect_exit "verify is clean again" 0 "$PAL" verify --from "$T0" --to "$T2"

# An acquired shard is checked in slices of 2,000 jobs (one per pass of the
# controller, so that a shard won meanwhile is claimed after one slice, not
# after the whole shard).  Each slice reconciles the tickets of its key range
# only: a violating job's open ticket in another slice stays as it is, a
# fitting job's open ticket in the middle of the shard is resolved.
stop_node k1
python3 - "$NODE_DIR/bulk.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as o:
    o.write("jobs:\n")
    for i in range(1, 9001):
        retry = ", retry: {max_attempts: 50, backoff: {max: 2h}, max_age: 3d}" if i in (7, 4500, 8999) else ""
        o.write('  - {id: kh.bulk-%05d, schedule: {cron: "0 0 3 1 6 ?"}, target: {url: "http://127.0.0.1:9/x"}%s}\n' % (i, retry))
PY
expect_exit "apply 9,000 idle jobs under 7d" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/bulk.yaml"
conf 2d
L0=$(wc -l <"$NODE_DIR/k1.log")
start_node k1
wait_until "shards led with 9,000 more jobs" 20 all_shards_led
acq_checked() { [ "$(tail -n +"$L0" "$NODE_DIR/k1.log" | grep -c '"event":"controller.key_horizon_checked".*"checked":"shard acquired"')" -ge 2 ]; }
wait_until "both shards checked on acquisition" 30 acq_checked
open_set() { sql "select string_agg(job_id, ',' order by job_id) from tickets where state = 'open' and reason = 'key horizon exceeds sink.key_retention'"; }
expect_eq "under 2d the three long bulk jobs have open tickets (kh.long fits since its change)" \
	"kh.bulk-00007,kh.bulk-04500,kh.bulk-08999" "$(open_set)"
expect_eq "gauge 3" 3 "$(metric k1 palisade_controller_jobs_key_horizon_exceeded)"
stop_node k1
ids_before=$(sql "select string_agg(id::text, ',' order by id) from tickets where state = 'open'")
sql "insert into tickets (job_id, reason, evidence, allowed_actions) values ('kh.bulk-05000', 'key horizon exceeds sink.key_retention', '{}', ARRAY['abandon'])" >/dev/null
L0=$(wc -l <"$NODE_DIR/k1.log")
start_node k1
wait_until "shards led again" 20 all_shards_led
wait_until "both shards checked again" 30 acq_checked
tail -n +"$L0" "$NODE_DIR/k1.log" | grep '"event":"controller.key_horizon_checked".*"checked":"shard acquired"' >"$NODE_DIR/acq.log"
slices=$(python3 -c 'import json,sys; print(",".join(str(json.loads(l)["slices"]) for l in open(sys.argv[1])))' "$NODE_DIR/acq.log")
check "each shard of ~4,500 jobs was checked in 3 slices ($slices)" [ "$slices" = "3,3" ]
expect_eq "the versions of both shards' checks add up to every live job" 9002 \
	"$(python3 -c 'import json,sys; print(sum(json.loads(l)["versions"] for l in open(sys.argv[1])))' "$NODE_DIR/acq.log")"
expect_eq "the fitting job's ticket (middle of its shard) is resolved as fits" "resolved|fits|controller:k1" \
	"$(sql "select state, resolution, actor from tickets where job_id = 'kh.bulk-05000'")"
expect_eq "the violators' tickets in the other slices are the same open tickets" "$ids_before" \
	"$(sql "select string_agg(id::text, ',' order by id) from tickets where state = 'open'")"
stop_node k1
finish
