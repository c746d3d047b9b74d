#!/usr/bin/env bash
# The door of the trigger state machine, palisade_trigger_move()
# (docs/schema.md, "The door"): it moves a set of triggers along legal
# edges only, refuses an illegal one by name, sets each edge's side
# columns, returns what it moved with the state each left, and leaves a
# row that changed under it alone.  The statement-level check still stops
# an illegal direct update (a binary that predates the door).
source tests/integration/lib.sh
guarantee "G7 - every state change is a legal edge: the door checks each edge it writes and sets its side columns in one place; a direct update is still checked"
t0=$SECONDS

fresh_db it_trigger_door
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/door.yaml
printf 'jobs:\n  - {id: door.job, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/d"}}\n' >"$f"
"$PAL" apply --reason setup "$f" >/dev/null || { echo "  apply failed"; exit 1; }

# mk STATE: a trigger of door.job in STATE at a fresh instant, with a lease,
# a retry time and an error class to see which the door clears; its id.
sql "CREATE SEQUENCE it_instant" >/dev/null
mk() {
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
	       state, due_at, shard, fence, lease_owner, lease_until, next_attempt_at, last_error_class, updated_at)
	     SELECT 'door.job', 1, a.t, 0, 'schedule', 'default', 'default', '$1', a.t, 0,
	       nextval('palisade_fence'), 'node-a', clock_timestamp() + interval '5 minutes',
	       clock_timestamp() + interval '1 minute', 'http_5xx', now() - interval '1 hour'
	     FROM (SELECT now() + nextval('it_instant') * interval '1 minute' AS t) a RETURNING id"
}
# move TO IDS [CLASS]: the door over the triggers IDS (comma-separated), in
# the states read
move() {
	sql "SELECT string_agg(m.id || ':' || m.from_state, ',' ORDER BY m.id) FROM (
	       SELECT array_agg(id) AS ids, array_agg(scheduled_at) AS ats, array_agg(state) AS froms
	       FROM triggers WHERE id IN ($2)) a,
	       palisade_trigger_move(a.ids, a.ats, a.froms, '$1', ${3:-NULL}) m"
}
cols() { sql "SELECT state, lease_owner IS NOT NULL, next_attempt_at IS NOT NULL, finished_at IS NOT NULL,
	        coalesce(last_error_class, '-'), updated_at > now() - interval '1 minute' FROM triggers WHERE id = $1"; }

echo "  -- legal edges, their side columns"
P=$(mk pending); W=$(mk retry_wait); Z=$(mk paused)
expect_eq "pending, retry_wait and paused -> cancelled in one call, each with the state it left" \
	"$P:pending,$W:retry_wait,$Z:paused" "$(move cancelled "$P,$W,$Z")"
expect_eq "a terminal state: finished_at set, lease and retry time cleared, error class kept" \
	"cancelled|f|f|t|http_5xx|t" "$(cols "$P")"
R=$(mk running)
expect_eq "running -> cancelling" "$R:running" "$(move cancelling "$R")"
expect_eq "keeps its executor's lease (it stops at its safe point)" "cancelling|t|t|f|http_5xx|t" "$(cols "$R")"
U=$(mk pausing)
expect_eq "pausing -> paused" "$U:pausing" "$(move paused "$U")"
expect_eq "clears the lease, keeps the retry time" "paused|f|t|f|http_5xx|t" "$(cols "$U")"
expect_eq "paused -> pending" "$U:paused" "$(move pending "$U")"
expect_eq "clears the retry time: due at once" "pending|f|f|f|http_5xx|t" "$(cols "$U")"
S=$(mk pending)
expect_eq "pending -> skipped with an error class" "$S:pending" "$(move skipped "$S" "'paused'")"
expect_eq "writes the class" "skipped|f|f|t|paused|t" "$(cols "$S")"

echo "  -- illegal edges"
M=$(mk pending)
OUT=$(move running "$P,$M" 2>&1)
expect_match "cancelled -> running is refused, naming the trigger" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
expect_eq "and nothing of the statement moved" "pending" "$(sql "SELECT state FROM triggers WHERE id = $M")"
OUT=$(move done "$M" 2>&1)
expect_match "a state that is none of the machine's is refused" "illegal trigger state change pending -> done \\(trigger $M\\)" "$OUT"
expect_eq "no marker is left in the session after the door" "" \
	"$(sql "SELECT palisade_trigger_move('{}'::bigint[], '{}'::timestamptz[], '{}'::text[], 'pending') ; SELECT coalesce(current_setting('palisade.trigger_move', true), '')" | tail -1)"
OUT=$(sql "UPDATE triggers SET state = 'running' WHERE id = $P" 2>&1)
expect_match "a direct update along an illegal edge is still refused by the statement check" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
OUT=$(sql "BEGIN; SELECT count(*) FROM palisade_trigger_move('{}'::bigint[], '{}'::timestamptz[], '{}'::text[], 'pending'); UPDATE triggers SET state = 'running' WHERE id = $P; COMMIT" 2>&1)
expect_match "also after the door ran in the same transaction" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"

OUT=$(sql "SELECT count(*) FROM triggers t, palisade_trigger_move(ARRAY[t.id], ARRAY[t.scheduled_at], ARRAY['running'], 'cancelling') m WHERE t.id = $M")
expect_eq "a row not in the state the caller read is left alone" "0|pending" "$OUT|$(sql "SELECT state FROM triggers WHERE id = $M")"

echo "  -- a row that changed under the door"
C=$(mk running)
# a transaction moves C first and holds it; the caller reads C running,
# the door waits for the row, then finds it succeeded
psql "$PALISADE_PG" -XAtq -c "BEGIN; UPDATE triggers SET state = 'succeeded', finished_at = now() WHERE id = $C; SELECT pg_sleep(1); COMMIT" >/dev/null 2>&1 &
hpid=$!
sleep 0.3
expect_eq "is left alone and not returned (no edge from the state it read)" "" "$(move cancelling "$C" 2>&1)"
wait "$hpid"
expect_eq "its state is the other writer's" "succeeded" "$(sql "SELECT state FROM triggers WHERE id = $C")"

echo "  -- a large set: the door reads its keys by the primary key"
# 36,000 triggers and a move of 6,000: reading the moved rows' states
# by a hash join scanned every partition (its cost grew with the table, not
# the move); by the keys it probes the primary key once per key.
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       state, due_at, shard, fence)
     SELECT 'door.job', 1, now() + interval '1 day' + g * interval '1 second', 0, 'schedule',
       'default', 'default', 'pending', now(), 0, 0 FROM generate_series(1, 36000) g" >/dev/null
sql "ANALYZE triggers" >/dev/null
plan=$(psql "$PALISADE_PG" -XAtq -c "LOAD 'auto_explain'" -c "SET auto_explain.log_min_duration = 0" \
	-c "SET auto_explain.log_nested_statements = on" -c "SET auto_explain.log_level = notice" \
	-c "SET client_min_messages = notice" \
	-c "SELECT count(*) FROM (SELECT array_agg(id) AS ids, array_agg(scheduled_at) AS ats, array_agg(state) AS froms FROM (
	      SELECT id, scheduled_at, state FROM triggers WHERE job_id = 'door.job' AND state = 'pending'
	      ORDER BY scheduled_at DESC LIMIT 6000) s) a, palisade_trigger_move(a.ids, a.ats, a.froms, 'cancelled') m" 2>&1)
expect_eq "6,000 moved" 6000 "$(tail -1 <<<"$plan")"
door_plan=$(sed -n '/Query Text: UPDATE triggers t SET/,/^NOTICE:/p' <<<"$plan")
expect_match "the plan of the door's statement is there" 'Update on triggers' "$door_plan"
expect_eq "its keys probed one by one: no hash or merge join (which read every partition whole)" 0 \
	"$(grep -c -E 'Hash Join|Merge Join' <<<"$door_plan")"

echo "  ($((SECONDS - t0)) s)"
finish
