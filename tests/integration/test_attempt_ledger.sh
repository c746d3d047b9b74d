#!/usr/bin/env bash
# The attempt ledger (docs/schema.md): a trigger's first attempt, claimed
# by this release's executors (palisade_claim_batch(..., true)), lives in
# the trigger row and writes no attempts row; a retry, a deferral or a
# takeover moves it into an attempts row of its own and adds one for the
# new attempt; a claim through palisade_claim() (0.2.0 executors) writes
# an attempts row as before.  attempt_ledger shows every attempt exactly
# once, whichever way it was written.  Claims are made in SQL and results
# committed through the executor's own commit statement (commit_probe),
# one trigger at a time, so each step is seen.
source tests/integration/lib.sh
guarantee "ledger - every attempt of a trigger is in attempt_ledger exactly once, with its node, token, outcome, error, status and key, whether its trigger row or an attempts row holds it (retry, takeover, deferral, a fenced result, a 0.2.0 claim)"
T_START=$(date +%s)
PROBE=${PALISADE_ITESTS:-build/itests}/commit_probe

fresh_db it_attempt_ledger
"$PAL" migrate >/dev/null
printf 'jobs:\n  - {id: led.job, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n' \
	>"$PALISADE_TEST_TMP/led.yaml"
expect_exit "apply a job" 0 "$PAL" apply "$PALISADE_TEST_TMP/led.yaml"
sql "UPDATE job_versions SET effective_from = now(), activated_at = now(), activated_epoch = 0"

N=0
plant() { N=$((N + 1)); sql "$(due_sql led.job 1 $((N * 1000)))" >/dev/null; sql "SELECT max(id) FROM triggers"; }
# claim NODE LEASE_MS [ENTRY]: "id fence at" of the one trigger claimed
claim() {
	local call="palisade_claim_batch('$1', $2, 1, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true)"
	[ "${3:-}" = old ] && call="palisade_claim('$1', $2, 1, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}')"
	# jit off, as a node's connections have it: the claim's statements
	# cost more than jit_above_cost, and compiling them takes seconds
	PGOPTIONS="-c jit=off" sql "SELECT id, fence, at FROM $call WHERE id IS NOT NULL" | tr '|' ' '
}
commit() { "$PROBE" --pg "$PALISADE_PG" --batch 8 <<<"$1"; }
at_of() { sql "SELECT floor(extract(epoch FROM scheduled_at))::bigint FROM triggers WHERE id = $1"; }
rows() { sql "SELECT count(*) FROM attempts WHERE trigger_id = $1"; }
ledger() { # TRIGGER: its attempts in fence order, node/outcome/error/http/key
	sql "SELECT string_agg(node || '/' || coalesce(outcome, '-') || '/' || coalesce(error_class, '-')
	       || '/' || coalesce(http_status::text, '-') || '/' || coalesce(idempotency_key, '-'), ' '
	       ORDER BY fence) FROM attempt_ledger WHERE trigger_id = $1"
}

# 1. A retry, then a takeover: three attempts.
A=$(plant)
read -r id f1 at <<<"$(claim n1 60000)"
expect_eq "the first claim took the trigger" "$A" "$id"
expect_eq "attempt 1: no attempts row" 0 "$(rows "$A")"
expect_eq "... its trigger row holds it (node, token)" "n1|$f1|1" \
	"$(sql "SELECT first_node, fence, attempt_count FROM triggers WHERE id = $A AND first_claimed_at IS NOT NULL")"
expect_eq "the ledger shows it running" "n1/-/-/-/-" "$(ledger "$A")"
expect_eq "a retryable failure is committed" "committed 1" "$(commit "$A $f1 $at retry_wait http_503 503 key-a")"
expect_eq "attempt 1 ended in the trigger row, still no attempts row" "0 n1/retry_wait/http_503/503/key-a" \
	"$(rows "$A") $(ledger "$A")"
read -r id f2 at <<<"$(claim n2 1000)"
expect_eq "the retry is claimed" "$A" "$id"
expect_eq "attempt 2: attempt 1 moved into a row of its own, beside attempt 2's" "2|0" \
	"$(sql "SELECT (SELECT count(*) FROM attempts WHERE trigger_id = $A),
	               (SELECT count(*) FROM triggers WHERE id = $A AND num_nonnulls(first_claimed_at, first_node,
	                  first_ended_at, first_outcome, first_error, first_http, first_ms, first_key) > 0)")"
expect_eq "the moved row keeps attempt 1's facts and token" "$f1|n1|retry_wait|http_503|503|key-a|t" \
	"$(sql "SELECT fence, node, outcome, error_class, http_status, idempotency_key, ended_at > claimed_at
	        FROM attempts WHERE trigger_id = $A ORDER BY fence LIMIT 1")"
sleep 1.2 # attempt 2's lease runs out: a takeover
read -r id f3 at <<<"$(claim n3 60000)"
expect_eq "attempt 3 takes the expired lease over" "$A" "$id"
expect_eq "the late result of attempt 2 is refused (fenced)" "committed 0" "$(commit "$A $f2 $at succeeded - 200 key-a")"
expect_eq "attempt 3 succeeds" "committed 1" "$(commit "$A $f3 $at succeeded - 200 key-a")"
expect_eq "the ledger: three attempts, in order, each once" \
	"n1/retry_wait/http_503/503/key-a n2/fenced/-/200/key-a n3/succeeded/-/200/key-a" "$(ledger "$A")"
expect_eq "tokens grow; the trigger's is the last attempt's" "3|$f3|succeeded|3" \
	"$(sql "SELECT count(DISTINCT l.fence), t.fence, t.state, t.attempt_count FROM attempt_ledger l
	        JOIN triggers t ON t.id = l.trigger_id WHERE t.id = $A AND $f1 < $f2 AND $f2 < $f3 GROUP BY 2, 3, 4")"
expect_eq "palisade attempts lists the three" "3" \
	"$("$PAL" attempts --output json "$A" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')"

# 2. A first attempt that succeeds at once: the trigger row is the ledger,
# its answer's excerpt is kept under its token.
B=$(plant)
read -r id fb at <<<"$(claim n1 60000)"
expect_eq "a success with a kept body" "committed 1" "$(commit "$B $fb $at succeeded - 200 key-b hello")"
expect_eq "no attempts row; the ledger has the attempt" "0 n1/succeeded/-/200/key-b" "$(rows "$B") $(ledger "$B")"
expect_eq "the excerpt is stored under the attempt's token" "$fb|hello" \
	"$(sql "SELECT fence, convert_from(body, 'UTF8') FROM attempt_responses WHERE trigger_id = $B")"
expect_match "palisade attempts shows it with its excerpt" "hello" "$("$PAL" attempts "$B")"
expect_eq "its id is null (the trigger row holds it)" "None 1" \
	"$("$PAL" attempts --output json "$B" | python3 -c 'import json, sys; a = json.load(sys.stdin); print(a[0]["id"], len(a))')"

# The row's compact form: a success leaves first_outcome NULL and the
# job's default key first_key NULL; the ledger spells both out.
F=$(plant)
read -r id ff at <<<"$(claim n1 60000)"
dkey=$(sql "SELECT palisade_default_key(job_id, scheduled_at, partition, request_id) FROM trigger_jobs WHERE id = $F")
expect_eq "a success with the default key" "committed 1" "$(commit "$F $ff $at succeeded - 200 $dkey")"
expect_eq "neither is stored" "||t" "$(sql "SELECT first_outcome, first_key, first_ended_at IS NOT NULL FROM triggers WHERE id = $F")"
expect_eq "the ledger has them" "n1/succeeded/-/200/$dkey|t" "$(ledger "$F")|$(sql "SELECT in_row FROM attempt_ledger WHERE trigger_id = $F")"

# 3. A deferral (the attempt handed back before calling) and the next claim.
C=$(plant)
read -r id fc at <<<"$(claim n1 60000)"
expect_eq "a deferral" "committed 1" "$(commit "$C $fc $at pending render_error 0 -")"
read -r id fc2 at <<<"$(claim n2 60000)"
expect_eq "the next claim is attempt 1 again (deferrals are given back)" "1" \
	"$(sql "SELECT attempt_count FROM triggers WHERE id = $C")"
expect_eq "the deferred attempt moved to a row, the new one is in the trigger row" "1 n1/deferred/render_error/-/- n2/-/-/-/-" \
	"$(rows "$C") $(ledger "$C")"

# 4. A result refused for the trigger's state (cancelled meanwhile) ends
# an attempt its trigger row holds as fenced, and changes nothing else.
D=$(plant)
read -r id fd at <<<"$(claim n1 60000)"
sql "UPDATE triggers SET state = 'cancelling' WHERE id = $D" >/dev/null
sql "UPDATE triggers SET state = 'cancelled', finished_at = now() WHERE id = $D" >/dev/null
expect_eq "the late result is refused" "committed 0" "$(commit "$D $fd $at succeeded - 200 key-d")"
expect_eq "the ledger says fenced; the trigger stays cancelled" "n1/fenced/-/200/key-d cancelled" \
	"$(ledger "$D") $(sql "SELECT state FROM triggers WHERE id = $D")"

# 5. A claim through palisade_claim() (a 0.2.0 executor) writes its row.
E=$(plant)
read -r id fe at <<<"$(claim old1 60000 old)"
expect_eq "an older executor's claim writes an attempts row, none in the trigger row" "1|0" \
	"$(sql "SELECT (SELECT count(*) FROM attempts WHERE trigger_id = $E),
	               (SELECT count(*) FROM triggers WHERE id = $E AND first_claimed_at IS NOT NULL)")"
sql "UPDATE attempts SET ended_at = clock_timestamp(), outcome = 'succeeded', http_status = 200
     WHERE trigger_id = $E AND fence = $fe" >/dev/null # its commit, by trigger and token
expect_eq "the ledger shows it once" "old1/succeeded/-/200/-" "$(ledger "$E")"
expect_eq "no trigger has an attempt twice in the ledger" 0 \
	"$(sql "SELECT count(*) FROM (SELECT fence FROM attempt_ledger GROUP BY fence HAVING count(*) > 1) d")"
# 6. A late result that meets the takeover of its lease while that claim
# is still open: the result waits for the trigger row, finds a new token
# and is refused, and the attempt the claim moved into an attempts row
# (invisible to the result statement's snapshot) still ends as fenced.
G=$(plant)
read -r id fg at <<<"$(claim n1 1000)"
sleep 1.2 # its lease runs out
claim_sql="SELECT count(*) FROM palisade_claim_batch('n2', 60000, 1, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL"
PGOPTIONS="-c jit=off" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 \
	-c "BEGIN" -c "$claim_sql" -c "SELECT pg_sleep(1.5)" -c "COMMIT" >"$PALISADE_TEST_TMP/takeover.out" &
takeover=$!
sleep 0.7 # the takeover holds the row, uncommitted
expect_eq "the late result waits for the takeover and is refused" "committed 0" \
	"$(commit "$G $fg $at succeeded - 200 key-g")"
wait "$takeover"
expect_eq "the takeover claimed it" "1" "$(head -1 "$PALISADE_TEST_TMP/takeover.out")"
expect_eq "the ledger: attempt 1 fenced (its late result recorded), attempt 2 running" \
	"n1/fenced/-/200/key-g n2/-/-/-/-" "$(ledger "$G")"

# 7. A result sent again after it was committed (the executor re-sends a
# batch whose answer it lost with its connection) is refused and changes
# no attempt: neither one its trigger row holds nor an attempts row.
expect_eq "attempt 3 of the first trigger, sent again, is refused" "committed 0" \
	"$(commit "$A $f3 $(at_of "$A") succeeded - 200 key-a")"
expect_eq "... and stays succeeded in the ledger" \
	"n1/retry_wait/http_503/503/key-a n2/fenced/-/200/key-a n3/succeeded/-/200/key-a" "$(ledger "$A")"
expect_eq "a first attempt's result, sent again, is refused" "committed 0" \
	"$(commit "$B $fb $(at_of "$B") succeeded - 200 key-b")"
expect_eq "... and stays succeeded in its trigger row" "n1/succeeded/-/200/key-b" "$(ledger "$B")"

# 8. A roll's hand-over: a first attempt a 0.3.0 executor keeps in its
# trigger row, its lease taken over by a 0.2.0 executor (palisade_claim()),
# which commits as 0.2.0 does (its attempts row, found by token); the
# first executor's late result is then fenced in the moved row.
H=$(plant)
read -r id fh1 at <<<"$(claim n1 1000)"
sleep 1.2 # its lease runs out
read -r id fh2 at <<<"$(claim old2 60000 old)"
expect_eq "a 0.2.0 claim takes the expired lease over" "$H" "$id"
expect_eq "... and moves the first attempt out of the trigger row" "2|0" \
	"$(sql "SELECT (SELECT count(*) FROM attempts WHERE trigger_id = $H),
	               (SELECT count(*) FROM triggers WHERE id = $H AND first_claimed_at IS NOT NULL)")"
sql "UPDATE attempts SET ended_at = clock_timestamp(), outcome = 'succeeded', http_status = 200
     WHERE fence = $fh2; UPDATE triggers SET state = 'succeeded', lease_owner = NULL, lease_until = NULL,
     finished_at = clock_timestamp() WHERE id = $H AND fence = $fh2" >/dev/null # its commit
expect_eq "the first executor's late result is refused" "committed 0" "$(commit "$H $fh1 $at succeeded - 200 key-h")"
expect_eq "the ledger: the first attempt fenced, the 0.2.0 one succeeded, each once" \
	"n1/fenced/-/200/key-h old2/succeeded/-/200/-" "$(ledger "$H")"

# 9. A stop of a trigger whose executor lost its lease: `palisade cancel`
# asks the running trigger to stop (cancelling, lease kept), then, the
# lease expired, cancels it for its executor through the door, which ends
# the attempt the row holds as unknown with its key (the request may have
# been sent) and keeps the trigger's outcome unknown; the executor's late
# result is refused and leaves that end.
I=$(plant)
read -r id fi at <<<"$(claim n1 60000)"
"$PAL" cancel --trigger "$I" --reason test >/dev/null
expect_eq "cancel asks the running trigger to stop; its attempt is still in flight" "cancelling n1/-/-/-/-" \
	"$(sql "SELECT state FROM triggers WHERE id = $I") $(ledger "$I")"
sql "UPDATE triggers SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $I" >/dev/null
"$PAL" cancel --trigger "$I" --reason test >/dev/null
IKEY=$(sql "SELECT palisade_default_key(job_id, scheduled_at, partition, request_id) FROM triggers WHERE id = $I")
expect_eq "its lease expired, cancel ends it: cancelled, outcome unknown, the attempt ended unknown with its key" \
	"cancelled t n1/unknown/-/-/$IKEY" \
	"$(sql "SELECT state, outcome_unknown FROM triggers WHERE id = $I" | tr '|' ' ') $(ledger "$I")"
expect_eq "the late result is refused" "committed 0" "$(commit "$I $fi $at succeeded - 200 key-i")"
expect_eq "... and leaves the attempt's end" "n1/unknown/-/-/$IKEY" "$(ledger "$I")"

echo "    figure: test took $(($(date +%s) - T_START)) s"
finish
