#!/usr/bin/env bash
# tests/integration/run.sh [TEST...] - run the integration tests against a
# real PostgreSQL and ZooKeeper that this script starts (ops/devcluster.sh) on
# free loopback ports under a temporary state directory, and stops at the end.
# Set PALISADE_KEEP_STATE=1 to keep the directory for inspection.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
export PALISADE_BIN=${PALISADE_BIN:-$ROOT/bin}

source tests/ports.sh # free_port (the working directory is the checkout)

export PALISADE_TEST_TMP=$(mktemp -d /tmp/palisade-it.XXXXXX)
export PALISADE_STATE=$PALISADE_TEST_TMP/state
export PALISADE_PG_PORT=$(free_port) PALISADE_ZK_PORT=$(free_port)
export PALISADE_ZK_TICK_MS=100 PALISADE_PG_FAST=1
cleanup() {
	bash ops/devcluster.sh down >/dev/null 2>&1
	if [ "${PALISADE_KEEP_STATE:-0}" != 1 ]; then
		bash ops/devcluster.sh destroy >/dev/null 2>&1
		rm -rf "$PALISADE_TEST_TMP"
	else
		echo "state kept in $PALISADE_TEST_TMP"
	fi
}
trap cleanup EXIT
echo "integration: starting PostgreSQL :$PALISADE_PG_PORT and ZooKeeper :$PALISADE_ZK_PORT"
eval "$(bash ops/devcluster.sh up)" || { echo "integration: dev cluster failed to start"; exit 1; }
export PALISADE_PG_ADMIN="host=127.0.0.1 port=$PALISADE_PG_PORT user=palisade"

tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(tests/integration/test_*.sh)
# PALISADE_IT_SKIP="test_a test_b": leave these out of a whole-suite run
# (make asan leaves out the ones that exercise timing, not memory).
if [ $# -eq 0 ] && [ -n "${PALISADE_IT_SKIP:-}" ]; then
	kept=()
	for t in "${tests[@]}"; do
		case " $PALISADE_IT_SKIP " in *" $(basename "$t" .sh) "*) echo "== $(basename "$t" .sh): skipped (PALISADE_IT_SKIP)" ;; *) kept+=("$t") ;; esac
	done
	tests=("${kept[@]}")
fi
failed=()
for t in "${tests[@]}"; do
	echo "== $(basename "$t" .sh)"
	start=$SECONDS
	# A sanitizer report in any process log of the test fails it, even
	# when every check passed: a leak or a use after free found at a
	# node's exit is a defect of the run.
	san=
	if (cd "$ROOT" && bash "$t") && ! san=$(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
		"$PALISADE_TEST_TMP/nodes/$(basename "$t" .sh)"/*.log 2>/dev/null); then
		echo "   passed in $((SECONDS - start))s"
	else
		[ -n "${san:-}" ] && echo "   sanitizer report in: $san"
		failed+=("$(basename "$t" .sh)")
		# What CI shows of a failure is this output only: the last lines
		# of each process log of the test, and any sanitizer report whole.
		for f in "$PALISADE_TEST_TMP/nodes/$(basename "$t" .sh)"/*.log; do
			[ -f "$f" ] || continue
			echo "   --- $(basename "$f"): events $(grep -o '"event":"[^"]*"' "$f" | cut -d'"' -f4 | sort | uniq -c | sort -rn | head -12 | awk '{printf "%s=%s ", $2, $1}')"
			echo "   --- $(basename "$f") (last 8 lines)"
			tail -8 "$f" | cut -c1-400 | sed 's/^/   | /'
			if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
				echo "   --- sanitizer report in $(basename "$f")"
				grep -A40 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -60 | sed 's/^/   | /'
			fi
		done
	fi
done
echo "integration: ${#tests[@]} tests, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
