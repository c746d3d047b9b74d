#!/usr/bin/env bash
# Run every cmocka unit-test executable of build dir $1; fail if any fails.
set -uo pipefail
O=${1:-build}
fail=0; n=0
for t in "$O"/tests/test_*; do
	[ -x "$t" ] || continue
	n=$((n + 1))
	if ! out=$("$t" 2>&1); then
		echo "$out"
		echo "FAIL $(basename "$t")"
		fail=$((fail + 1))
	else
		echo "ok   $(basename "$t") ($(echo "$out" | grep -c '\[       OK \]') tests)"
	fi
done
echo "unit: $n executables, $fail failed"
[ "$fail" -eq 0 ]
