#!/usr/bin/env bash
# `palisade shadow` of a scope that is live (docs/migrating.md, "Shadow"):
# the scope is in shadow from the command on, and every instant before it
# stays palisade's.  (1) Due triggers held by a pause gate (pending, never
# attempted) stay pending, are listed in the answer with their keys, and
# palisade calls each once after the resume; the instants from the command
# on are shadow and never called.  (2) A trigger waiting for its retry
# stays retry_wait and is listed.  verify is clean over the run.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow of a live scope leaves no instant run by neither system: every unfinished instant before the command is palisade's and listed, every one from it on shadow"
T_START=$(date +%s)

fresh_db it_shadow_live
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1
write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 500ms}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - {id: sl.a, group: g, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/sl.a", timeout: 2s}}
  - id: sl.r
    group: g2
    schedule: {cron: "*/3 * * * * ?"}
    target: {url: "http://127.0.0.1:9/nothing", timeout: 1s}
    retry: {max_attempts: 5, backoff: {initial: 60s, max: 60s}, max_age: 10m}
Y
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
start_node n1
wait_until "shards led" 20 all_shards_led &&
	wait_until "sl.a runs" 20 has "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'sl.a'" ||
	{ finish; exit 1; }

# (1) due triggers held by a pause gate, then the group goes to shadow
expect_exit "pause group g" 0 "$PAL" pause --config "$CLUSTER_CONF" --group g --reason "backlog"
wait_until "3 due triggers of sl.a wait" 20 has "select count(*) - 2 from trigger_jobs where job_id = 'sl.a' and state = 'pending' and due_at < now() - interval '1 second'"
DUE=$(sql "select string_agg(id::text, ',' order by id) from trigger_jobs where job_id = 'sl.a' and state = 'pending' and due_at < now() - interval '1 second'")
N=$(tr ',' '\n' <<<"$DUE" | wc -l)
OUT=$("$PAL" shadow --config "$CLUSTER_CONF" --group g --reason "back to cron" --output json); ec=$?
echo "    shadow answer: $(jq -c '{since, moved, handed_back, kept: [.in_flight[] | "\(.id) \(.state)"]}' <<<"$OUT")"
expect_eq "shadow of the live group g: exit 0" 0 $ec
SINCE=$(jq -r .since <<<"$OUT")
expect_eq "the $N due instants stay pending (palisade's)" "pending $N" \
	"$(sql "select string_agg(state || ' ' || n, ',') from (select state, count(*) n from triggers where id in ($DUE) group by state) x")"
expect_eq "... each listed in the answer with its key" "$N" \
	"$(jq --arg d ",$DUE," '[.in_flight[] | select(.idempotency_key != null) | (.id | tostring) as $i | select($d | contains("," + $i + ","))] | length' <<<"$OUT")"
expect_eq "no trigger of sl.a from the command's second ($SINCE) on is pending" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'sl.a' and scheduled_at >= '$SINCE' and state <> 'shadow'")"
expect_exit "resume group g" 0 "$PAL" resume --config "$CLUSTER_CONF" --group g --reason "gate off"
wait_until "palisade calls the $N due instants" 15 \
	has "select count(*) - $N + 1 from sink_effects where trigger_id in ($DUE)"
expect_eq "... once each" "$N" "$(sql "select count(distinct idempotency_key) from sink_effects where trigger_id in ($DUE)")"
sleep 2
expect_eq "no call for an instant of sl.a from $SINCE on" 0 \
	"$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'sl.a' and t.scheduled_at >= '$SINCE'")"
expect_eq "every instant of sl.a from $SINCE on planned shadow" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'sl.a' and scheduled_at >= '$SINCE' and state <> 'shadow'")"

# (2) a trigger waiting for its retry
wait_until "a trigger of sl.r waits for its retry" 20 has "select count(*) from trigger_jobs where job_id = 'sl.r' and state = 'retry_wait'"
RW=$(sql "select min(id) from trigger_jobs where job_id = 'sl.r' and state = 'retry_wait'")
OUT=$("$PAL" shadow --config "$CLUSTER_CONF" --group g2 --reason "back to cron" --output json); ec=$?
echo "    shadow answer: $(jq -c '{since, moved, kept: [.in_flight[] | "\(.id) \(.state)"]}' <<<"$OUT")"
expect_eq "shadow of the live group g2: exit 0" 0 $ec
expect_eq "the trigger stays retry_wait (palisade retries it)" "retry_wait" "$(sql "select state from triggers where id = $RW")"
expect_eq "... and the answer lists it with its key" "1" \
	"$(jq --argjson i "$RW" '[.in_flight[] | select(.id == $i and .state == "retry_wait" and .idempotency_key != null)] | length' <<<"$OUT")"
OUT=$("$PAL" shadow --config "$CLUSTER_CONF" --group g2 --reason "back to cron")
expect_match "the table names the retry palisade finishes" "retry_wait" "$OUT"

FROM=$(date -u -d @$T_START +%FT%TZ) TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
expect_exit "verify over the run" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
