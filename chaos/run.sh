#!/usr/bin/env bash
# chaos/run.sh [DRILL...] - scripted fault drills (chaos/README.md).  Each drill
# brings up PostgreSQL, ZooKeeper, palisade nodes (and the sink where calls
# matter) on this machine, injects its fault, heals it, and checks the
# invariants from the database itself.  It prints one verdict line:
#   DRILL <name>: PASS|FAIL  <figures>
# Without arguments every drill runs.  `chaos/run.sh --list` lists them.
# Each drill also leaves a JSON report in $CHAOS_REPORT_DIR (default
# /tmp/palisade-chaos)/<name>.json: the drill's own when it writes one to
# $PALISADE_DRILL_REPORT, else the verdict, checks and figures; a failed
# drill its whole output too, <name>.log.
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
	[random]=chaos/random.sh
	[stale-executor]=tests/integration/test_executor_stale.sh
	[rolling-upgrade]=tests/integration/test_rolling_upgrade.sh
	[mixed-version-upgrade]=tests/integration/test_mixed_upgrade.sh
	[clock-skew]=tests/integration/test_clock_skew.sh
	[partition]=tests/integration/test_partition.sh
	[zk-follower-kill]=chaos/zk_ensemble.sh
	[zk-leader-kill]=chaos/zk_ensemble.sh
	[zk-quorum-loss]=chaos/zk_ensemble.sh
	[zk-ensemble]=chaos/zk_ensemble.sh
	[zk-foreign-znode]=chaos/zk_acl.sh
	[pg-failover]=chaos/pg_failover.sh
	[pg-switchover]=chaos/pg_failover.sh
	[pg-async-failover]=chaos/pg_async_failover.sh
	[zk-cutoff]=chaos/zk_cutoff.sh
	[slow-sink]=chaos/slow_sink.sh
	[delayed-responses]=chaos/delayed_responses.sh
	[shadow-cutover-long]=chaos/shadow_cutover_long.sh
	[after-kill9]=tests/integration/test_after.sh
)
if [ "${1:-}" = --list ]; then
	for d in "${!DRILLS[@]}"; do echo "$d -> ${DRILLS[$d]}"; done | sort
	exit 0
fi
names=()
# The random drill's options (chaos/README.md): --minutes M --seed S.
while [ $# -gt 0 ]; do
	case $1 in
	--minutes | --seed | --pg) v=${1#--}; export "RANDOM_${v^^}=${2:-}"; shift 2 ;;
	*) names+=("$1"); shift ;;
	esac
done
[ ${#names[@]} -eq 0 ] && names=($(printf '%s\n' "${!DRILLS[@]}" | sort))
export PALISADE_BIN=${PALISADE_BIN:-$PWD/bin}
REPORTS=${CHAOS_REPORT_DIR:-/tmp/palisade-chaos}
mkdir -p "$REPORTS"
rc=0
for d in "${names[@]}"; do
	t=${DRILLS[$d]:-}
	[ -n "$t" ] || { echo "DRILL $d: unknown (chaos/run.sh --list)"; rc=64; continue; }
	log=$(mktemp)
	# The random drill under Patroni has a report and verdict of its own
	# (make chaos runs it after the plain one).
	label=$d
	[ "$d" = random ] && [ -n "${RANDOM_PG:-}" ] && [ "$RANDOM_PG" != none ] && label="random-pg-$RANDOM_PG"
	report=$REPORTS/$label.json
	rm -f "$report"
	if PALISADE_DRILL=$d PALISADE_DRILL_REPORT=$report bash tests/integration/run.sh "$t" >"$log" 2>&1; then v=PASS; else v=FAIL; rc=1; fi
	figs=$(grep -E '^\s+figure:|^\s+verify:' "$log" | sed 's/^ *figure: //; s/^ *//' | paste -sd';' | cut -c1-600)
	checks=$(grep -E '^\s+[0-9]+ checks' "$log" | tail -1 | sed 's/^ *//')
	grep -E '^\s+(schedule|nemesis|replay|timing|kept):' "$log" | sed 's/^ */  /' # the random drill's fault schedule, the checker's time
	echo "DRILL $label: $v  $checks  $figs"
	if [ -s "$report" ]; then
		python3 - "$report" "$v" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["verdict"] = sys.argv[2]
json.dump(r, open(sys.argv[1], "w"), indent=1)
PY
	else
		python3 - "$report" "$label" "$v" "$checks" "$figs" <<'PY'
import json, sys
f, d, v, c, figs = sys.argv[1:]
json.dump({"drill": d, "verdict": v, "checks": c, "figures": [x for x in figs.split(";") if x]},
          open(f, "w"), indent=1)
PY
	fi
	if [ "$v" = FAIL ]; then
		grep -E 'FAIL' "$log" | head -5 | sed 's/^/    /'
		# The whole output (checker lines, process logs' tails) of a failed
		# drill is kept beside its report.
		cp "$log" "$REPORTS/$label.log" && echo "    log: $REPORTS/$label.log"
	fi
	rm -f "$log"
done
exit $rc
