#!/usr/bin/env bash
# `make check-runner`: the wait helpers leave their callers' variables
# alone.  bash scopes dynamically: a predicate defined in a function reads
# that function's locals, unless wait_until declares locals of the same
# names - which made check_window (chaos/lib.sh) read wait_until's own
# start time as the window's start, and every drill using it fail its
# "every trigger of the window ends succeeded" check after 90 s.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "runner self-check - a predicate run by wait_until sees its caller's locals"
caller() {
	local t0=T0 t1=T1 n=N now=NOW polls=POLLS step=STEP desc=DESC secs=SECS i=I
	seen() { [ "$t0 $t1 $n $now $polls $step $desc $secs $i" = "T0 T1 N NOW POLLS STEP DESC SECS I" ]; }
	wait_until "wait_until: the predicate reads the caller's t0, n, now, polls, step, desc, secs" 1 seen
	wait_wall "wait_wall: the same" 1 seen
	local d=D want=WANT rc=RC
	seen2() { [ "$d $want $rc" = "D WANT RC" ]; }
	check "check: the command reads the caller's d" seen2
	expect_exit "expect_exit: the command reads the caller's d, want, rc" 0 seen2
}
caller
finish
