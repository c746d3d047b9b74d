#!/usr/bin/env bash
# chaos/run.sh [DRILL...] - scripted fault drills (DESIGN.md §11).  Each drill
# brings up PostgreSQL, ZooKeeper, palisade nodes (and the sink where calls
# matter) on this machine, injects its fault, heals it, and checks the
# invariants from the database itself.  It prints one verdict line:
#   DRILL <name>: PASS|FAIL  <figures>
# Without arguments every drill runs.  `chaos/run.sh --list` lists them.
set -uo pipefail
cd "$(dirname "$0")/.."
declare -A DRILLS=(
	[leader-kill9-pause-drain]=tests/integration/test_controller_faults.sh
	[stale-leader]=tests/integration/test_controller_stale.sh
	[all-down-past-misfire]=tests/integration/test_controller_misfire.sh
	[executor-pause-kill-lost-responses]=tests/integration/test_executor_faults.sh
	[zookeeper-and-postgres-outage]=tests/integration/test_outage.sh
	[cold-start-concurrent-migrate]=tests/integration/test_migrate.sh
	[bad-targets]=tests/integration/test_executor_bad_responses.sh
	[stale-executor]=tests/integration/test_executor_stale.sh
	[rolling-upgrade]=tests/integration/test_rolling_upgrade.sh
	[clock-skew]=tests/integration/test_clock_skew.sh
	[partition]=tests/integration/test_partition.sh
)
if [ "${1:-}" = --list ]; then
	for d in "${!DRILLS[@]}"; do echo "$d -> ${DRILLS[$d]}"; done | sort
	exit 0
fi
names=("$@")
[ ${#names[@]} -eq 0 ] && names=($(printf '%s\n' "${!DRILLS[@]}" | sort))
export PALISADE_BIN=${PALISADE_BIN:-$PWD/bin}
rc=0
for d in "${names[@]}"; do
	t=${DRILLS[$d]:-}
	[ -n "$t" ] || { echo "DRILL $d: unknown (chaos/run.sh --list)"; rc=64; continue; }
	log=$(mktemp)
	if bash tests/integration/run.sh "$t" >"$log" 2>&1; then v=PASS; else v=FAIL; rc=1; fi
	figs=$(grep -E '^\s+figure:|^\s+verify:' "$log" | sed 's/^ *figure: //; s/^ *//' | paste -sd';' | cut -c1-400)
	checks=$(grep -E '^\s+[0-9]+ checks' "$log" | tail -1 | sed 's/^ *//')
	echo "DRILL $d: $v  $checks  $figs"
	[ "$v" = FAIL ] && grep -E 'FAIL' "$log" | head -5 | sed 's/^/    /'
	rm -f "$log"
done
exit $rc
