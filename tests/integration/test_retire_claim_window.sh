#!/usr/bin/env bash
# delete while an executor claims ahead: the retire transaction waits on
# the job's row (held by the test's session) until an executor has claimed
# an instant after the transaction began, up to claim_ahead early.  The
# claimed run finishes on its own (docs/operations.md, "Retiring a job");
# verify must judge it as claimed before the retiring version was stored,
# not as a run outside every version's range (unexpected).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 - a run claimed while its job was being retired is one the retirement left to finish, not unexpected"
fresh_db it_retire_claim_window
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=1 LOOKAHEAD=10s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=1
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
printf 'jobs:\n  - {id: rw.sec, schedule: {cron: "* * * * * ?"}, target: {url: "http://%s/effects/rw"}}\n' \
	"$SINK_ADDR" >"$NODE_DIR/rw.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rw.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led
ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rw.sec' and state = 'succeeded'")" -ge 3 ]; }
wait_until "the job runs" 30 ran
T0=$(rfc3339_ago 1)
# the test's session holds the job's row: delete's retire waits on it
coproc HOLD { "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 2>&1; }
echo "begin; select 'held' from jobs where job_id = 'rw.sec' for update;" >&"${HOLD[1]}"
read -r -t 10 HELD_ROW <&"${HOLD[0]}"
expect_eq "the test's session holds rw.sec's row" held "${HELD_ROW:-}"
"$PAL" delete --reason "claim window" rw.sec >"$NODE_DIR/delete.out" 2>&1 &
DEL=$!
RETIRE_WAIT="wait_event_type = 'Lock' and query like '%FOR UPDATE OF j%'"
waits() { [ -n "$(sql "select 1 from pg_stat_activity where $RETIRE_WAIT")" ]; }
wait_until "delete's retire waits on the held row" 30 waits
# K: an instant after the retire transaction began, claimed ahead while it waits
K=$(sql "select ceil(extract(epoch from xact_start))::bigint + 1 from pg_stat_activity where $RETIRE_WAIT")
claimed() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rw.sec' and scheduled_at = to_timestamp($K) and state <> 'pending'")" = 1 ]; }
wait_until "the instant after the retire began is claimed while it waits" 30 claimed
echo "commit;" >&"${HOLD[1]}"
eval "exec ${HOLD[1]}>&-"
wait "$HOLD_PID" 2>/dev/null
wait "$DEL"
expect_eq "delete (exit 0)" 0 "$?"
sed 's/^/    | /' "$NODE_DIR/delete.out"
done_k() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'rw.sec' and scheduled_at = to_timestamp($K) and state = 'succeeded'")" = 1 ]; }
wait_until "the claimed run finished" 30 done_k
echo "    figure: the retiring version ends at $(sql "select spec->'schedule'->>'end' from job_versions where job_id = 'rw.sec' order by version desc limit 1"), the claimed instant is $(date -u -d "@$K" +%H:%M:%SZ)"
expect_eq "no run after the claimed one" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'rw.sec' and scheduled_at > to_timestamp($K) and state <> 'cancelled'")"
TO=$(date -u -d "@$K" +%Y-%m-%dT%H:%M:%SZ)
expect_exit "verify" 0 "$PAL" verify --from "$T0" --to "$TO"
expect_match "verify: nothing missing, no duplicate, nothing unexpected" "missing=0 duplicates=0 unexpected=0 " "$OUT"
finish
