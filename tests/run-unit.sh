#!/usr/bin/env bash
# Run every cmocka unit-test executable of build dir $1; fail if any fails.
# Two at a time (UNIT_JOBS; the executables share nothing), each one's
# output kept and printed in file order.
set -uo pipefail
O=${1:-build}
JOBS=${UNIT_JOBS:-2}
tmp=$(mktemp -d /tmp/palisade-unit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tests=()
for t in "$O"/tests/test_*; do [ -x "$t" ] && tests+=("$t"); done
running=0
for t in "${tests[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
	n=$(basename "$t")
	{ "$t" >"$tmp/$n.out" 2>&1; echo $? >"$tmp/$n.rc"; } &
	running=$((running + 1))
done
wait
fail=0
for t in "${tests[@]}"; do
	n=$(basename "$t")
	if [ "$(cat "$tmp/$n.rc" 2>/dev/null)" != 0 ]; then
		cat "$tmp/$n.out"
		echo "FAIL $n"
		fail=$((fail + 1))
	else
		echo "ok   $n ($(grep -c '\[       OK \]' "$tmp/$n.out") tests)"
	fi
done
echo "unit: ${#tests[@]} executables, $fail failed"
[ "$fail" -eq 0 ]
