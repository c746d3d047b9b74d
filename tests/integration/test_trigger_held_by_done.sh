#!/usr/bin/env bash
# The repeat of a manual run's request id after that run succeeded, while a
# pause of the job is now set, names no pause: held_by (JSON, API) lists the
# pauses that hold runs still to be claimed, and trigger's note says the run
# waits for the resume; nothing waits for a run that is over.  A new run
# written under the pause is held, and says so.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger's held_by names only pauses that hold a run still to be claimed"
badserver_cluster it_trigger_held_by_done 1
apply_jobs "apply" <<YAML || { finish; exit 1; }
jobs:
  - {id: hd.one, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:$port/log/one", timeout: 5s}}
YAML
lead_shards 20 b1 || { finish; exit 1; }
expect_exit "trigger hd.one --request-id m1" 0 "$PAL" trigger --job hd.one --reason "run now" --request-id m1
wait_until "the run succeeded" 20 has "select count(*) from triggers where job_id = 'hd.one' and request_id = 'm1' and state = 'succeeded'"
expect_exit "pause --job hd.one" 0 "$PAL" pause --job hd.one --reason "later hold"
"$PAL" trigger --job hd.one --reason "run now" --request-id m1 --output json >"$NODE_DIR/o.json" 2>"$NODE_DIR/o.err"
sed 's/^/    | /' "$NODE_DIR/o.json" "$NODE_DIR/o.err"
expect_eq "repeat of m1 (existed, its run succeeded): held_by is empty" "0" "$(jq '.held_by | length' "$NODE_DIR/o.json")"
check "no note that the finished run waits for the resume" bash -c "! grep -q 'waits for the resume' '$NODE_DIR/o.err'"
"$PAL" trigger --job hd.one --reason "run now" --request-id m2 --output json >"$NODE_DIR/o2.json" 2>"$NODE_DIR/o2.err"
expect_eq "a new run m2 under the pause: held_by names the job's pause" "job:hd.one" "$(jq -r '.held_by[0].scope' "$NODE_DIR/o2.json")"
check "its note says the run waits for the resume" grep -q 'waits for the resume' "$NODE_DIR/o2.err"
stop_all_nodes
finish
