#!/usr/bin/env bash
# A roll-back while a trigger is claimed ahead of its instant (running, its
# call waiting for the instant on the executor; docs/migrating.md,
# "Roll-back").  The roll-back asks it to pause; the executor, renewing
# every 500 ms, sees that before the instant and hands it back without a
# call.  With a wait, the hand-back is moved to shadow and listed; with
# --wait 0s it is listed as in flight, and a second roll-back hands it
# back.  Either way the answer's `at` covers the instant, every instant up
# to `at` is palisade's (called) or listed, and none after it is called.
# `palisade shadow` of a live job asks the same of its claimed-ahead first
# attempt, waits for its instant and moves the hand-back to shadow.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a roll-back or shadow makes no call the old system takes over: a trigger claimed ahead is handed back without a call and listed, or listed in flight; none after the roll-back's instant is called"
T_START=$(date +%s)

claim_ahead_cluster rb

# JOB FIELD: from the answer in $NODE_DIR/JOB.json
ans() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$NODE_DIR/$1.json" "$2"; }
# JOB ID: the unfinished row of trigger ID as "state in_flight", or "absent"
listed() {
	python3 -c "import json,sys
r = [u for u in json.load(open(sys.argv[1]))['unfinished'] if u['id'] == int(sys.argv[2])]
print('%s %s' % (r[0]['state'], str(r[0]['in_flight']).lower()) if r else 'absent')" "$NODE_DIR/$1.json" "$2"
}
epoch() { sql "select extract(epoch from $1)::bigint"; }
called() { sql "select count(*) from sink_effects where trigger_id = $1"; }

# JOB WAIT: once a trigger of JOB is claimed ahead, roll JOB back with --wait
# WAIT; ID, INST: that trigger and its instant, AT: the answer's (epoch s)
roll_ahead() {
	wait_until "a trigger of $1 claimed ahead, 1.5 s or more before its instant" 20 \
		has "select count(*) from triggers where job_id = '$1' and $AHEAD"
	ID=$(sql "select id from triggers where job_id = '$1' and $AHEAD order by scheduled_at limit 1")
	INST=$(epoch "(select scheduled_at from triggers where id = $ID)")
	"$PAL" rollback --job "$1" --reason "back to the old system" --wait "$2" --output json >"$NODE_DIR/$1.json"
	AT=$(epoch "'$(ans "$1" at)'::timestamptz")
	check "the answer's at ($AT) covers the claimed-ahead instant ($INST) of $1" test "$AT" -ge "$INST"
}

# 1. rb.a with a wait: handed back without a call, moved to shadow, listed.
roll_ahead rb.a 10s
expect_eq "trigger $ID: never called, handed back (shadow, rolled_back), listed, nothing in flight" \
	"0 shadow|rolled_back shadow false 0" \
	"$(called "$ID") $(sql "select state || '|' || last_error_class from triggers where id = $ID") $(listed rb.a "$ID") $(ans rb.a in_flight)"
expect_eq "... its attempt ended deferred (not spent), after the roll-back committed" "deferred|t" \
	"$(sql "select outcome, ended_at > (select max(created_at) from cutover_steps) from attempt_ledger where trigger_id = $ID order by fence desc limit 1")"
after_next() { [ "$(sql "select clock_timestamp() > to_timestamp($AT + 6)")" = t ]; }
wait_until "the next instant of rb.a has passed" 12 after_next
expect_eq "no instant of rb.a after at called, each shadow" "0 shadow" \
	"$(sql "select count(*) from sink_effects where path like '%rb.a%' and scheduled_at > to_timestamp($AT)") $(sql "select string_agg(distinct state, ',') from triggers where job_id = 'rb.a' and scheduled_at > to_timestamp($AT)")"
# every instant up to at: called by palisade, or in the answer
LISTED=$(python3 -c "import json,sys; print(','.join(str(u['id']) for u in json.load(open(sys.argv[1]))['unfinished']) or '0')" "$NODE_DIR/rb.a.json")
expect_eq "every instant of rb.a up to at is called or listed, not both" "0 0" \
	"$(sql "select count(*) from triggers t where job_id = 'rb.a' and scheduled_at <= to_timestamp($AT) and t.id not in ($LISTED) and not exists (select 1 from sink_effects e where e.trigger_id = t.id)") $(sql "select count(*) from sink_effects where trigger_id in ($LISTED)")"

# 2. rb.b with --wait 0s: listed in flight; the executor still hands it back.
roll_ahead rb.b 0s
expect_eq "trigger $ID listed in flight, asked to pause" "pausing true 1" "$(listed rb.b "$ID") $(ans rb.b in_flight)"
past() { [ "$(sql "select state from triggers where id = $ID")" = paused ]; }
wait_until "... handed back at its instant (paused)" 8 past
expect_eq "... never called" 0 "$(called "$ID")"
"$PAL" rollback --job rb.b --reason "again, for the hand-back" --wait 0s --output json >"$NODE_DIR/rb.b2.json"
expect_eq "a second roll-back moves it to shadow and lists it" "shadow|rolled_back shadow false" \
	"$(sql "select state || '|' || last_error_class from triggers where id = $ID") $(listed rb.b2 "$ID")"
expect_eq "sink: no effect of rb.b at or after the first roll-back's instant" 0 \
	"$(sql "select count(*) from sink_effects where path like '%rb.b%' and scheduled_at >= to_timestamp($INST)")"

# 3. shadow of the live rb.c: its claimed-ahead first attempt handed back, shadow
wait_until "a trigger of rb.c claimed ahead, 1.5 s or more before its instant" 20 \
	has "select count(*) from triggers where job_id = 'rb.c' and $AHEAD"
ID=$(sql "select id from triggers where job_id = 'rb.c' and $AHEAD order by scheduled_at limit 1")
INST=$(epoch "(select scheduled_at from triggers where id = $ID)")
"$PAL" shadow --job rb.c --reason "back to the old system" --output json >"$NODE_DIR/rb.c.json"
expect_eq "shadow of rb.c: its claimed-ahead trigger $ID handed back, shadow, never called; nothing in flight" \
	"1 shadow 0 0" "$(ans rb.c handed_back) $(sql "select state from triggers where id = $ID") $(called "$ID") $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['in_flight']))" "$NODE_DIR/rb.c.json")"
after_c() { [ "$(sql "select clock_timestamp() > to_timestamp($INST + 6)")" = t ]; }
wait_until "the next instant of rb.c has passed" 12 after_c
expect_eq "no effect of rb.c from that instant on, each trigger shadow" "0 shadow" \
	"$(sql "select count(*) from sink_effects where path like '%rb.c%' and scheduled_at >= to_timestamp($INST)") $(sql "select string_agg(distinct state, ',') from triggers where job_id = 'rb.c' and scheduled_at >= to_timestamp($INST)")"

stop_node n1
echo "  took $(( $(date +%s) - T_START )) s"
finish
