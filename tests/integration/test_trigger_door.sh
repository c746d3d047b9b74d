#!/usr/bin/env bash
# The door of the trigger state machine, palisade_trigger_move()
# (docs/schema.md, "The door"): it moves a set of triggers along legal
# edges only, refuses an illegal one by name, sets each edge's side
# columns, returns what it moved with the state each left, and leaves a
# row that changed under it alone.  The row check of every update
# (triggers_state_edges) still stops an illegal direct update (a binary
# that predates the door), whatever the session says, and captures no
# transition table.
source tests/integration/lib.sh
guarantee "G7 - every state change is a legal edge: the door checks each edge it writes and sets its side columns in one place; a direct update is still checked"
t0=$SECONDS

fresh_db it_trigger_door
"$PAL" migrate >/dev/null || { echo "  migrate failed"; exit 1; }
f=$PALISADE_TEST_TMP/door.yaml
{
	echo 'jobs:'
	for j in job forbid replace; do
		echo "  - {id: door.$j, overlap: ${j/job/allow}, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:9/effects/d\"}}"
	done
} >"$f"
"$PAL" apply --reason setup "$f" >/dev/null || { echo "  apply failed"; exit 1; }

# mk STATE [JOB [DUE]]: a trigger of JOB (door.job) in STATE at a fresh
# instant, due then (or at DUE), with a lease, a retry time and an error
# class to see which the door clears; its id.
sql "CREATE SEQUENCE it_instant" >/dev/null
mk() {
	sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
	       state, due_at, shard, fence, lease_owner, lease_until, next_attempt_at, last_error_class, updated_at)
	     SELECT '${2:-door.job}', 1, a.t, 0, 'schedule', 'default', 'default', '$1', ${3:-a.t}, 0,
	       nextval('palisade_fence'), 'node-a', clock_timestamp() + interval '5 minutes',
	       clock_timestamp() + interval '1 minute', 'http_5xx', now() - interval '1 hour'
	     FROM (SELECT now() + nextval('it_instant') * interval '1 minute' AS t) a RETURNING id"
}
# move TO IDS [CLASS]: the door over the triggers IDS (comma-separated), in
# the states read; move_try: the same for a move the door refuses (sql_try)
move() {
	${_mv_run:-sql} "SELECT string_agg(m.id || ':' || m.from_state, ',' ORDER BY m.id) FROM (
	       SELECT array_agg(id) AS ids, array_agg(scheduled_at) AS ats, array_agg(state) AS froms
	       FROM triggers WHERE id IN ($2)) a,
	       palisade_trigger_move(a.ids, a.ats, a.froms, '$1', ${3:-NULL}) m"
}
move_try() { local _mv_run=sql_try; move "$@"; }
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

echo "  -- a stop ends the attempt in flight: pausing -> paused, cancelling -> cancelled"
# A stop without a claimer is made for a holder that lost its lease: the
# attempt ends unknown with its key (the request may have been sent), and
# the trigger keeps outcome_unknown; the holder's own stop (the checkpoint
# names it) ends it as the stop, with its key.
# inrow ID: the row holds an attempt in flight (a 0.3.0 claim's first);
# rowatt ID [FENCE]: an attempts row in flight (a later attempt's), of the
# row's token or of FENCE (an older token)
inrow() { sql "UPDATE triggers SET first_claimed_at = now(), first_node = 'node-a' WHERE id = $1" >/dev/null; }
rowatt() {
	sql "INSERT INTO attempts (trigger_id, fence, node, scheduled_at)
	     SELECT id, ${2:-fence}, 'node-a', scheduled_at FROM triggers WHERE id = $1" >/dev/null
}
# led ID: its attempts in token order, outcome/ended/key/in_row
led() {
	sql "SELECT string_agg(coalesce(outcome, '-') || '/' || (ended_at IS NOT NULL) || '/'
	       || coalesce(idempotency_key, '-') || '/' || in_row, ' ' ORDER BY fence)
	     FROM attempt_ledger WHERE trigger_id = $1"
}
# key ID: the trigger's idempotency key (the job's default template)
key() { sql "SELECT palisade_default_key(job_id, scheduled_at, partition, request_id) FROM triggers WHERE id = $1"; }
unk() { sql "SELECT outcome_unknown FROM triggers WHERE id = $1"; }
U=$(mk pausing); inrow "$U"
expect_eq "pausing -> paused" "$U:pausing" "$(move paused "$U")"
expect_eq "ends the attempt its row holds as unknown, its key possibly sent; outcome unknown" \
	"unknown/true/$(key "$U")/true t" "$(led "$U") $(unk "$U")"
X=$(mk cancelling); inrow "$X"
move cancelled "$X" >/dev/null
expect_eq "cancelling -> cancelled ends it the same way" "unknown/true/$(key "$X")/true t" "$(led "$X") $(unk "$X")"
Y=$(mk cancelling); rowatt "$Y" 1; rowatt "$Y"
move cancelled "$Y" >/dev/null
expect_eq "an attempts row of the row's token ends the same way; one of an older token is left" \
	"-/false/-/false unknown/true/$(key "$Y")/false" "$(led "$Y")"
R=$(mk running); inrow "$R"
move cancelling "$R" >/dev/null
expect_eq "running -> cancelling leaves it in flight (its executor stops at its safe point)" \
	"-/false/-/true" "$(led "$R")"
V=$(mk pausing); inrow "$V"
move running "$V" >/dev/null
expect_eq "pausing -> running too" "-/false/-/true" "$(led "$V")"
sql "UPDATE triggers SET first_ended_at = now(), first_outcome = 'fenced', first_key = 'k' WHERE id = $R" >/dev/null
move cancelled "$R" >/dev/null
expect_eq "an attempt already ended keeps its end" "fenced/true/k/true" "$(led "$R")"

echo "  -- the checkpoint stops there through the door"
ckpt() { sql "SELECT coalesce(palisade_trigger_checkpoint(id, ${2:-fence}, '{\"chunk\": 3}'), 'refused')
	        FROM triggers WHERE id = $1"; }
K=$(mk running); inrow "$K"
expect_eq "a running trigger stores its checkpoint and carries on" "running|3|-/false/-/true" \
	"$(ckpt "$K")|$(sql "SELECT checkpoint->>'chunk' FROM triggers WHERE id = $K")|$(led "$K")"
expect_eq "an older token is refused" "refused" "$(ckpt "$K" 1)"
sql "UPDATE triggers SET state = 'pausing' WHERE id = $K" >/dev/null
expect_eq "a pausing one: paused, lease cleared, attempt ended paused with its key, outcome known" \
	"paused|paused|f|paused/true/$(key "$K")/true|f" \
	"$(ckpt "$K")|$(sql "SELECT state, lease_owner IS NOT NULL FROM triggers WHERE id = $K")|$(led "$K")|$(unk "$K")"
K=$(mk cancelling); rowatt "$K"
expect_eq "a cancelling one: cancelled, finished, its attempts row ended cancelled" \
	"cancelled|cancelled|t|cancelled/true/$(key "$K")/false|f" \
	"$(ckpt "$K")|$(sql "SELECT state, finished_at IS NOT NULL FROM triggers WHERE id = $K")|$(led "$K")|$(unk "$K")"
expect_eq "a stopped trigger's checkpoint is refused" "refused" "$(ckpt "$K")"

echo "  -- an operator's stop of a trigger whose executor lost its lease: its outcome unknown"
expire() { sql "UPDATE triggers SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1" >/dev/null; }
X=$(mk cancelling); inrow "$X"; expire "$X"
"$PAL" cancel --trigger "$X" --reason test >/dev/null
expect_eq "cancel: the expired cancelling trigger cancelled, its attempt ended unknown" \
	"cancelled|unknown/true/$(key "$X")/true|t" "$(sql "SELECT state FROM triggers WHERE id = $X")|$(led "$X")|$(unk "$X")"
X=$(mk pausing); rowatt "$X"; expire "$X"
"$PAL" cancel --trigger "$X" --reason test >/dev/null
expect_eq "cancel of an expired pausing one: paused, then cancelled; its attempt ended unknown" \
	"cancelled|unknown/true/$(key "$X")/false|t" "$(sql "SELECT state FROM triggers WHERE id = $X")|$(led "$X")|$(unk "$X")"
"$PAL" pause --job door.job --reason test >/dev/null
X=$(mk pausing); inrow "$X"; expire "$X"
"$PAL" resume --job door.job --reason test >/dev/null
expect_eq "resume: the expired pausing trigger paused, then pending; its attempt ended unknown" \
	"pending|unknown/true/$(key "$X")/true|t" "$(sql "SELECT state FROM triggers WHERE id = $X")|$(led "$X")|$(unk "$X")"

echo "  -- a claim: -> running with the claimer"
# claimmove IDS FIRST_IN_ROW: the door's claim of IDS by node-b, 60 s
# lease; each moved row's id, the state it left and the token returned
claimmove() {
	sql "SELECT string_agg(m.id || ':' || m.from_state || ':' || m.fence, ',' ORDER BY m.id) FROM (
	       SELECT array_agg(id) AS ids, array_agg(scheduled_at) AS ats, array_agg(state) AS froms
	       FROM triggers WHERE id IN ($1)) a,
	       palisade_trigger_move(a.ids, a.ats, a.froms, 'running', NULL, 'node-b', 60000, $2) m"
}
claimed() { sql "SELECT state, fence > $2, lease_owner, lease_until > now() + interval '50 seconds', attempt_count,
	           first_node IS NOT NULL, num_nonnulls(first_ended_at, first_outcome, first_key, first_http)
	         FROM triggers WHERE id = $1"; }
CP=$(mk pending); CW=$(mk retry_wait)
inrow "$CW"; sql "UPDATE triggers SET attempt_count = 1, first_ended_at = now(), first_outcome = 'retry_wait',
	first_http = 503, first_key = 'k' WHERE id = $CW" >/dev/null
fp=$(sql "SELECT max(fence) FROM triggers")
got=$(claimmove "$CP,$CW" true)
expect_eq "pending and retry_wait claimed in one call, each returning its new token" \
	"$CP:pending:$(sql "SELECT fence FROM triggers WHERE id = $CP"),$CW:retry_wait:$(sql "SELECT fence FROM triggers WHERE id = $CW")" "$got"
expect_eq "a first attempt: new token, the claimer's lease, attempt 1, kept in the row" \
	"running|t|node-b|t|1|t|0" "$(claimed "$CP" "$fp")"
expect_eq "a retry: attempt 2, the row's first_* cleared (the claim moved them out first)" \
	"running|t|node-b|t|2|f|0" "$(claimed "$CW" "$fp")"
CV=$(mk pausing)
expect_eq "a resume's pausing -> running (no claimer) keeps the token and the lease" "$CV:pausing|node-a|0" \
	"$(move running "$CV")|$(sql "SELECT lease_owner, attempt_count FROM triggers WHERE id = $CV")"

echo "  -- the claim's overlap moves go through the door"
sql "UPDATE job_versions SET effective_from = now() - interval '1 hour', activated_at = now(), activated_epoch = 0" >/dev/null
L=$(mk running door.forbid); F=$(mk pending door.forbid "now() - interval '1 second'")
expect_eq "forbid: the due instant of a job with a live run is skipped" 1 "$(sql "SELECT palisade_claim_forbid_skips()")"
expect_eq "... with the door's side columns (finished, updated, lease cleared) and error class overlap" \
	"skipped|f|f|t|overlap|t" "$(cols "$F")"
expect_eq "... and a misfire row of its instant and partition" "1|0|overlap" \
	"$(sql "SELECT count(*), min(m.partition), min(m.reason) FROM misfires m JOIN trigger_jobs t
	        ON t.job_id = m.job_id AND t.scheduled_at = m.range_from WHERE t.id = $F")"
expect_eq "the live run is left as it was" "running|t|t|f|http_5xx|f" "$(cols "$L")"
O=$(mk running door.replace); N=$(mk pending door.replace "now() - interval '1 second'")
sql "UPDATE triggers SET next_attempt_at = NULL WHERE id = $N" >/dev/null # ready at its due time
got=$(PGOPTIONS="-c jit=off" sql "SELECT id FROM palisade_claim_batch('n1', 60000, 1, 0, '{}', '{}', '{}', '{}',
	'{}', '{}', '{}', true) WHERE id IS NOT NULL")
expect_eq "replace: the claim takes the new instant" "$N" "$got"
expect_eq "... and the older run is asked to stop: cancelling, lease kept, updated, error class replaced" \
	"cancelling|t|t|f|replaced|t" "$(cols "$O")"

echo "  -- a claim's lease: one end for all its triggers, from the statement's start"
# 200 due triggers of door.job; the claim runs in a transaction begun 0.3 s
# before it (so now() is earlier than the claim's statement), and returns
# its statement's start and the time it ended
sql "INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group,
       state, due_at, shard)
     SELECT 'door.job', 1, now() + interval '3 hours' + g * interval '1 second', 0, 'schedule',
       'default', 'default', 'pending', now() - interval '1 second', 0 FROM generate_series(1, 200) g" >/dev/null
# leaseclaim NODE: NODE's claim (60 s lease): count|statement start|end
leaseclaim() {
	sql_run "leaseclaim $1: palisade_claim_batch" psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -c "BEGIN" -c "SELECT pg_sleep(0.3)" \
		-c "SELECT count(*) || '|' || statement_timestamp() || '|' || clock_timestamp()
		    FROM palisade_claim_batch('$1', 60000, 500, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) c
		    WHERE c.id IS NOT NULL" -c "COMMIT" | grep '|'
}
# leases NODE START END: NODE's triggers, their distinct lease ends, those
# outside [START, END] + 60 s
leases() {
	sql "SELECT count(*), count(DISTINCT lease_until), count(*) FILTER (WHERE
	       lease_until < '$2'::timestamptz + interval '60 s' OR lease_until > '$3'::timestamptz + interval '60 s')
	     FROM triggers WHERE lease_owner = '$1' AND state = 'running'"
}
IFS='|' read -r n s e <<<"$(leaseclaim n-lease)"
expect_eq "the claim takes the 200" 200 "$n"
expect_eq "one lease end for the claim's 200, the statement's start plus 60 s (not the transaction's start, not later than the claim's end)" \
	"200|1|0" "$(leases n-lease "$s" "$e")"
sql "UPDATE triggers SET lease_until = clock_timestamp() - interval '1 second' WHERE lease_owner = 'n-lease'" >/dev/null
IFS='|' read -r n s e <<<"$(leaseclaim n-take)"
expect_eq "their leases expired, another node's claim takes them over" "200|200|0" \
	"$n|$(leases n-take "$s" "$e" | cut -d'|' -f1)|$(leases n-lease "$s" "$e" | cut -d'|' -f1)"
expect_eq "... with one lease end of its own" "200|1|0" "$(leases n-take "$s" "$e")"

echo "  -- a result: the edges of the executor's commit (its own statement, outside the door)"
PROBE=${PALISADE_ITESTS:-build/itests}/commit_probe
# res ID STATE [FENCE]: a result line of ID for commit_probe (its token,
# or FENCE), with error class x when not a success
res() {
	sql "SELECT id || ' ' || ${3:-fence} || ' ' || floor(extract(epoch FROM scheduled_at))::bigint
	       || ' $2 ' || CASE WHEN '$2' = 'succeeded' THEN '- 200' ELSE 'x 503' END || ' - -'
	     FROM triggers WHERE id = $1"
}
# after: state, lease held, retry time set, finished, error class, attempts
after() { sql "SELECT state, lease_owner IS NOT NULL, next_attempt_at IS NOT NULL, finished_at IS NOT NULL,
	         coalesce(last_error_class, '-'), attempt_count FROM triggers WHERE id = $1"; }
RS=$(mk running); RF=$(mk running); RD=$(mk running); PR=$(mk pausing); PS=$(mk pausing)
CF=$(mk cancelling); CS=$(mk cancelling); SU=$(mk running); ST=$(mk running)
sql "UPDATE triggers SET attempt_count = 1 WHERE id IN ($RS, $RF, $RD, $PR, $PS, $CF, $CS, $SU, $ST)" >/dev/null
inrow "$RS"; inrow "$SU"; rowatt "$RF"
sql "UPDATE triggers SET state = 'succeeded', finished_at = now() WHERE id = $SU" >/dev/null # taken by another
# one statement, every kind at once: the refused ones (SU no longer live,
# ST's token stale) are ended by the commit's second UPDATE of triggers,
# of the rows its state-setting one did not take, in the same statement
got=$({ res "$RS" succeeded; res "$RF" failed; res "$RD" pending; res "$PR" retry_wait; res "$PS" succeeded
	res "$CF" failed; res "$CS" succeeded; res "$SU" succeeded; res "$ST" succeeded 1; } | "$PROBE" --pg "$PALISADE_PG" --batch 16)
expect_eq "one commit of nine results: seven taken, the two refused not" "committed 7" "$got"
expect_eq "running -> succeeded: lease and retry time cleared, finished, error class cleared" \
	"succeeded|f|f|t|-|1" "$(after "$RS")"
expect_eq "... its attempt, held in the row, ended succeeded" "succeeded/true/-/true" "$(led "$RS")"
expect_eq "running -> failed (a retry time as the result says), the attempts row of its token ended failed" "failed|f|t|t|x|1|failed/true/-/false" \
	"$(after "$RF")|$(led "$RF")"
expect_eq "a deferral: pending again, the attempt given back" "pending|f|t|f|x|0" "$(after "$RD")"
expect_eq "pausing with a retry: paused (the pause asked for it)" "paused|f|t|f|x|1" "$(after "$PR")"
expect_eq "pausing with a success: succeeded" "succeeded|f|f|t|-|1" "$(after "$PS")"
expect_eq "cancelling with a failure: cancelled, finished" "cancelled|f|t|t|x|1" "$(after "$CF")"
expect_eq "cancelling with a success: succeeded (the call finished first)" "succeeded|f|f|t|-|1" "$(after "$CS")"
expect_eq "a result for a trigger another writer finished: state left alone" "succeeded|t|t|t|http_5xx|1" "$(after "$SU")"
expect_eq "... its attempt, held in the row, ended fenced" "fenced/true/-/true" "$(led "$SU")"
expect_eq "a result with a stale token: state, lease and retry time left alone" "running|t|t|f|http_5xx|1" "$(after "$ST")"

echo "  -- illegal edges"
M=$(mk pending)
OUT=$(move_try running "$P,$M" 2>&1)
expect_match "cancelled -> running is refused, naming the trigger" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
expect_eq "and nothing of the statement moved" "pending" "$(sql "SELECT state FROM triggers WHERE id = $M")"
OUT=$(move_try done "$M" 2>&1)
expect_match "a state that is none of the machine's is refused" "illegal trigger state change pending -> done \\(trigger $M\\)" "$OUT"
OUT=$(sql_try "UPDATE triggers SET state = 'running' WHERE id = $P" 2>&1)
expect_match "a direct update along an illegal edge is still refused by the row check" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
M2=$(mk pending)
OUT=$(sql_try "UPDATE triggers SET state = 'running' WHERE id IN ($P, $M2)" 2>&1)
expect_match "one illegal row stops a direct update of several" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
expect_eq "and its legal row is not written either" "pending" "$(sql "SELECT state FROM triggers WHERE id = $M2")"
# The statement-level check this replaced let a statement pass whole when
# the session had set palisade.trigger_move (the door's marker then).
OUT=$(sql_try "BEGIN; SELECT set_config('palisade.trigger_move', 'on', true); UPDATE triggers SET state = 'running' WHERE id = $P; COMMIT" 2>&1)
expect_match "a session that says its edges are checked is checked all the same" \
	"illegal trigger state change cancelled -> running \\(trigger $P\\)" "$OUT"
expect_eq "no trigger of triggers captures a transition table (each update would copy its rows twice)" 0 \
	"$(sql "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'triggers'::regclass
	        AND (tgoldtable IS NOT NULL OR tgnewtable IS NOT NULL)")"
OUT=$(sql_try "BEGIN; SELECT count(*) FROM palisade_trigger_move('{}'::bigint[], '{}'::timestamptz[], '{}'::text[], 'pending'); UPDATE triggers SET state = 'running' WHERE id = $P; COMMIT" 2>&1)
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
	      SELECT id, scheduled_at, state FROM trigger_jobs WHERE job_id = 'door.job' AND state = 'pending'
	      ORDER BY scheduled_at DESC LIMIT 6000) s) a, palisade_trigger_move(a.ids, a.ats, a.froms, 'cancelled') m" 2>&1)
expect_eq "6,000 moved" 6000 "$(tail -1 <<<"$plan")"
door_plan=$(sed -n '/Query Text: WITH mv AS (UPDATE triggers t SET/,/^NOTICE:/p' <<<"$plan")
expect_match "the plan of the door's statement is there" 'Update on triggers' "$door_plan"
expect_eq "its keys probed one by one: no hash or merge join (which read every partition whole)" 0 \
	"$(grep -c -E 'Hash Join|Merge Join' <<<"$door_plan")"

echo "  ($((SECONDS - t0)) s)"
finish
