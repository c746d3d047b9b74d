#!/usr/bin/env bash
# `palisade resume` and `palisade cancel` finish the stop of a pausing or
# cancelling trigger whose lease expired (its executor died before its safe
# point).  They chose those triggers by an expired lease without locking
# them, and the door rechecks only the state: a holder that renewed its
# lease between that choice and the move (its renewal committing while the
# command waited for the row) was stopped while alive, and resume made its
# trigger pending - claimable by a second executor while the first one's
# call still ran.  Now each row is locked as it is read and its lease
# rechecked; a row another transaction holds is left out.  Here a session
# renews the leases of node-a (a live executor) and holds the rows for 2 s
# before it commits, and the command runs meanwhile; then a session holds
# the rows of a dead holder without renewing them, to show that what a
# command leaves out is not lost: resume sends it back to running (the next
# claim retakes it), the next cancel ends it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a live pausing or cancelling trigger is left to its executor: resume and cancel never stop a holder that renewed its lease while they ran, and what they leave out is taken later"
T0=$SECONDS

it_db
f=$PALISADE_TEST_TMP/stop-jobs.yaml
cat >"$f" <<'YAML'
jobs:
  - {id: s.res, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/r"}}
  - {id: s.can, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/c"}}
YAML
expect_exit "apply two jobs" 0 "$PAL" apply "$f"
for r in r1:s.res c1:s.can c2:s.can; do
	"$PAL" trigger --job "${r#*:}" --request-id "${r%:*}" --reason test >/dev/null
done
id_of() { sql "SELECT id FROM triggers WHERE request_id = '$1'"; }
R1=$(id_of r1) C1=$(id_of c1) C2=$(id_of c2)

# node-a claims the three with a 1 s lease (and then is only alive through
# the renewals below); c1 is cancelled while running, the jobs paused.
# (jit off as a node's connection has it: the claim's disabled-node costs
# would have it compile for seconds)
claim() { PGOPTIONS="-c jit=off" sql "SELECT count(*) FROM palisade_claim_batch('$1', 1000, 10, 0, '{}', '{}', '{}', '{}', '{}', '{}', '{}', true) WHERE id IS NOT NULL"; }
expect_eq "node-a claims the three triggers" 3 "$(claim node-a)"
expect_exit "cancel c1 while it runs (running -> cancelling)" 0 "$PAL" cancel --trigger "$C1" --reason test
expect_exit "pause s.can (c2 running -> pausing)" 0 "$PAL" pause --job s.can --reason test
expect_exit "pause s.res (r1 running -> pausing)" 0 "$PAL" pause --job s.res --reason test
expired() { [ "$(sql "SELECT count(*) FROM triggers WHERE id IN ($R1, $C1, $C2) AND lease_until < clock_timestamp()")" = 3 ]; }
wait_until "node-a's three leases expire" 10 expired
holder() { sql "SELECT state || ' ' || coalesce(lease_owner, '-') || ' ' || fence FROM triggers WHERE id = $1"; }
fence() { sql "SELECT fence FROM triggers WHERE id = $1"; }
F1=$(fence "$R1") G1=$(fence "$C1") G2=$(fence "$C2")
open_attempt() { sql "SELECT coalesce(outcome, 'open') FROM attempt_ledger WHERE trigger_id = $1 AND fence = $2"; }

# hold END SQL [SECONDS]: in the background, a session runs SQL, sleeps
# SECONDS (2) holding the rows SQL locked, then ENDs (COMMIT or ROLLBACK);
# returns once the session sleeps (its row locks taken).  HOLD_PID.  A
# command that comes late on a loaded box finds the rows free: after a
# renewal that is the case the old code got right too, after a ROLLBACK a
# failure, hence the longer hold there.
hold() {
	PGAPPNAME=it-hold "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 >/dev/null <<SQL &
BEGIN;
$2;
SELECT pg_sleep(${3:-2});
$1;
SQL
	HOLD_PID=$!
	wait_until "the holding session holds its rows" 10 has \
		"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'it-hold' AND state = 'active' AND query LIKE '%pg_sleep%'"
}
# node-a's renewal (the lease thread's statement, reduced to its UPDATE)
renew() {
	echo "UPDATE triggers t SET lease_until = clock_timestamp() + interval '1 hour'
	      WHERE t.id = ANY ('{$1}') AND t.lease_owner = 'node-a'
	        AND t.state IN ('running', 'pausing', 'cancelling')"
}
# js KEY: the value of KEY in the JSON object on stdin (an object as JSON)
js() { python3 -c 'import json, sys; v = json.load(sys.stdin).get(sys.argv[1])
print(json.dumps(v, sort_keys=True) if isinstance(v, dict) else v)' "$1"; }

echo "  -- resume while node-a renews its pausing trigger's expired lease"
hold COMMIT "$(renew "$R1")"
out=$("$PAL" resume --job s.res --reason test --output json 2>&1)
wait "$HOLD_PID"
echo "    resume: $(tr -d ' \n' <<<"$out")"
expect_eq "resume stopped no pausing trigger for an expired lease" 0 "$(js expired_pausing_to_paused <<<"$out")"
expect_eq "resume made no paused trigger pending" 0 "$(js paused_to_pending <<<"$out")"
expect_eq "resume sent the live one back to running (the pause is lifted)" 1 "$(js pausing_to_running <<<"$out")"
expect_eq "r1 is still node-a's, under its token (state owner fence)" "running node-a $F1" "$(holder "$R1")"
expect_eq "node-a's attempt is still open" open "$(open_attempt "$R1" "$F1")"
expect_eq "node-b finds nothing to claim" 0 "$(claim node-b)"

echo "  -- cancel c1 while node-a renews its cancelling trigger's expired lease"
hold COMMIT "$(renew "$C1")"
out=$("$PAL" cancel --trigger "$C1" --reason test --output json 2>&1)
rc=$?
wait "$HOLD_PID"
echo "    cancel: $(tr -d ' \n' <<<"$out")"
expect_eq "cancel exits 0 (a cancelling trigger: already under way)" 0 "$rc"
expect_eq "cancel ended no cancelling trigger for an expired lease" 0 "$(js expired_cancelling_to_cancelled <<<"$out")"
expect_eq "c1 is still node-a's, cancelling under its token" "cancelling node-a $G1" "$(holder "$C1")"
expect_eq "node-a's attempt of c1 is still open" open "$(open_attempt "$C1" "$G1")"

echo "  -- cancel s.can while node-a renews its pausing trigger's expired lease"
hold COMMIT "$(renew "$C2")"
out=$("$PAL" cancel --job s.can --reason test --output json 2>&1)
rc=$?
wait "$HOLD_PID"
echo "    cancel: $(tr -d ' \n' <<<"$out")"
expect_eq "cancel exits 0" 0 "$rc"
expect_eq "cancel cancelled no paused trigger" 0 "$(js paused_to_cancelled <<<"$out")"
expect_eq "cancel reports both live ones as left" '{"cancelling": 1, "pausing": 1}' "$(js not_cancellable <<<"$out")"
expect_eq "c2 is still node-a's, pausing under its token" "pausing node-a $G2" "$(holder "$C2")"
expect_eq "node-a's attempt of c2 is still open" open "$(open_attempt "$C2" "$G2")"

echo "  -- node-a dies; a session holds its rows (no renewal) while the commands run"
sql "UPDATE triggers SET lease_until = clock_timestamp() - interval '1 second' WHERE id IN ($R1, $C1, $C2)" >/dev/null
expect_exit "pause s.res again (r1 running -> pausing, lease expired)" 0 "$PAL" pause --job s.res --reason test
hold ROLLBACK "SELECT 1 FROM triggers WHERE id IN ($R1, $C1, $C2) FOR UPDATE" 4
# cancel first: resume waits for the held r1 (in its pausing -> running step)
cout=$("$PAL" cancel --job s.can --reason test --output json 2>&1)
out=$("$PAL" resume --job s.res --reason test --output json 2>&1)
wait "$HOLD_PID"
echo "    resume: $(tr -d ' \n' <<<"$out")"
echo "    cancel: $(tr -d ' \n' <<<"$cout")"
expect_eq "resume left the held row out of the expired step, then sent it back to running" "0 1" \
	"$(js expired_pausing_to_paused <<<"$out") $(js pausing_to_running <<<"$out")"
expect_eq "cancel left the held rows out, and says so" '{"cancelling": 1, "pausing": 1}' "$(js not_cancellable <<<"$cout")"
expect_eq "r1: running, lease expired: the next claim retakes it" "running t" \
	"$(sql "SELECT state, lease_until < clock_timestamp() FROM triggers WHERE id = $R1" | tr '|' ' ')"
expect_eq "node-b retakes r1 (and only r1: c1 and c2 are stopping)" 1 "$(claim node-b)"
expect_exit "the next cancel takes the dead holder's c1 and c2" 0 "$PAL" cancel --job s.can --reason test
expect_eq "c1 and c2 cancelled" "cancelled cancelled" \
	"$(sql "SELECT string_agg(state, ' ' ORDER BY id) FROM triggers WHERE id IN ($C1, $C2)")"
echo "  took $((SECONDS - T0)) s"
finish
