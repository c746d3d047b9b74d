#!/usr/bin/env bash
# Retiring a job with a controller running: after `palisade delete` nothing
# is planned at or after the retirement, what was planned ahead is
# cancelled, and a re-apply brings the job back with a new version.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 and G7 across a job's retirement: palisade delete stops the planning of a live job (its last version ends at the retirement; no instant at or after it stays live), cancels and records what was planned ahead, keeps the history, and a re-apply makes a new version that plans again"

it_db lifecycle_ctl
SHARDS=2
LOOKAHEAD=5s write_conf "$CLUSTER_CONF"
apply_jobs apply <<'YAML'
jobs:
  - {id: lc.gone, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: lc.stays, schedule: {cron: "* * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
lead_shards 20 h1
ahead() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone' and scheduled_at > now() + interval '2 seconds'")" -gt 0 ]; }
wait_until "the controller plans lc.gone ahead" 20 ahead
N0=$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone'")
expect_exit "delete lc.gone" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "retire it" lc.gone
expect_match "with the triggers planned ahead cancelled" "retired lc.gone v2: nothing planned from .*; [1-9][0-9]* pending trigger" "$OUT"
expect_eq "the controller took the last version in" "1" "$(sql "select count(*) from job_versions where job_id = 'lc.gone' and version = 2 and activated_at is not null")"
END=$(sql "select extract(epoch from retired_at)::bigint from jobs where job_id = 'lc.gone'")
sleep 3
expect_eq "no live trigger at or after the retirement" "0" "$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone' and scheduled_at >= to_timestamp($END) and state not in ('cancelled')")"
expect_eq "no trigger planned from the last version" "0" "$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone' and version = 2")"
expect_eq "the cancelled ones are recorded with their ids" "$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone' and state = 'cancelled'")" \
	"$(sql "select coalesce(sum(jsonb_array_length(details->'trigger_ids')), 0) from audit_log where action = 'cancel' and scope = 'job:lc.gone'")"
expect_eq "history stays: every trigger row and version 1" "true|1" "$(sql "select ((select count(*) from trigger_jobs where job_id = 'lc.gone') >= $N0)::text || '|' || (select count(*) from job_versions where job_id = 'lc.gone' and version = 1)")"
later() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'lc.stays' and scheduled_at > to_timestamp($END) + interval '6 seconds'")" -gt 0 ]; }
wait_until "the other job goes on being planned" 20 later
expect_exit "verify over the retirement is clean" 0 "$PAL" verify --config "$CLUSTER_CONF" --job lc.gone \
	--from "$(date -u -d @$((END - 20)) +%Y-%m-%dT%H:%M:%SZ)" --to "$(date -u -d @$((END + 3)) +%Y-%m-%dT%H:%M:%SZ)"

expect_exit "re-apply the file" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_match "a new version, not an old one" "updated +lc.gone v3" "$OUT"
back() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'lc.gone' and version = 3 and state <> 'cancelled'")" -gt 0 ]; }
wait_until "the job is planned again from v3" 20 back
expect_eq "and not retired any more" "f" "$(sql "select retired_at is not null from jobs where job_id = 'lc.gone'")"
stop_node h1
finish
