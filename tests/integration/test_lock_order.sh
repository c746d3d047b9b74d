#!/usr/bin/env bash
# The executor's lease renewal never waits for a row lock, so it cannot
# deadlock with the result commit over the triggers they share.  They run on
# two connections of the same node (the lease thread's and the result
# connection); the renewal took its rows in the order of its array (the
# lease table's, unsorted), the commit in the order its join produced, and
# the server aborted one of them now and then ("deadlock detected", about 5
# per node in a 20-minute random drill; each retried, but a renewal lost is
# a lease at risk).  Now the renewal locks with SKIP LOCKED and returns a
# lease whose row another transaction holds as busy: still held, not
# extended (the next heartbeat renews it).  lock_probe races the two
# statements over the same 2,000 running triggers, round after round, the
# renewal given the ids in descending order: with the waiting renewal every
# one of 15 rounds deadlocked.  Then it holds every other row's lock in an
# open transaction during a renewal.
source tests/integration/lib.sh
guarantee "lease renewal and result commit on the same triggers never deadlock (the renewal never waits for a row lock; a busy row stays held, not extended)"

fresh_db it_lock_order
"$PAL" migrate >/dev/null
f=$PALISADE_TEST_TMP/lock-jobs.yaml
cat >"$f" <<'YAML'
jobs:
  - {id: lock.job, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/effects/s"}}
YAML
expect_exit "apply a job" 0 "$PAL" apply "$f"
PROBE=${PALISADE_ITESTS:-build/itests}/lock_probe
ROUNDS=${LOCK_ROUNDS:-15}
out=$("$PROBE" --pg "$PALISADE_PG" --job lock.job --rounds "$ROUNDS" --rows 2000 2>"$PALISADE_TEST_TMP/probe.err")
rc=$?
echo "    figure: $(head -1 <<<"$out")"
sed 's/^/    /' "$PALISADE_TEST_TMP/probe.err" | head -4
expect_eq "the probe ran" 0 "$rc"
kv() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$out"; }
expect_eq "no deadlock between renewal and commit in $ROUNDS rounds" 0 "$(kv deadlocks)"
expect_eq "no other error" 0 "$(kv other_errors)"
expect_eq "every trigger committed once" $((ROUNDS * 2000)) "$(kv committed)"
expect_eq "every trigger succeeded" $((ROUNDS * 2000)) \
	"$(sql "SELECT count(*) FROM trigger_jobs WHERE job_id = 'lock.job' AND state = 'succeeded'")"
# A renewal over rows another transaction holds: returned at once (the
# probe would hang otherwise), those rows busy and not extended.
bc=$(grep '^busy_check' <<<"$out")
echo "    figure: $bc"
bkv() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$bc"; }
expect_eq "the open transaction locked every other row" 1000 "$(bkv locked)"
expect_eq "the locked rows come back busy (held, not renewed)" 1000 "$(bkv busy)"
expect_eq "only locked rows are busy" 0 "$(bkv busy_unlocked)"
expect_eq "the other rows are renewed" 1000 "$(bkv renewed)"
expect_eq "no lease reported lost" 0 "$(bkv lost)"
expect_eq "no busy row's lease_until moved" 0 "$(bkv busy_extended)"
expect_eq "every renewed row's lease_until moved" 1000 "$(bkv unlocked_extended)"
expect_eq "the renewed rows share one lease end (one key in triggers_live)" 1 "$(bkv renewed_ends)"
expect_eq "... the statement's start plus the lease: none before the renewal was sent or after its answer" \
	0 "$(bkv renewed_outside)"
finish
