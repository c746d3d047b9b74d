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
	if [ "${PALISADE_KEEP_STATE:-0}" != 1 ]; then
		bash ops/devcluster.sh destroy >/dev/null 2>&1 # stops both first
		rm -rf "$PALISADE_TEST_TMP"
	else
		bash ops/devcluster.sh down >/dev/null 2>&1
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
# PALISADE_IT_JOBS=N: run up to N tests at a time (default: 3 for a
# whole-suite run, 1 for named tests; make test runs 4, make asan 3: IT_JOBS
# in the Makefile).  Each test has its own database, ZooKeeper cluster name,
# node directory and ports, so tests share only the servers and the cores;
# those named in IT_SERIAL run alone after the others, for they stop the
# shared PostgreSQL (test_outage) or bound timings that another test's load
# would stretch (failover and handoff times, sampling rates, latency
# percentiles, watchdog pings, statement timeouts that a tick's insert or a
# console page's query must beat).  A test's lines are printed whole when
# it ends.
IT_SERIAL=" test_outage test_coord test_drain_zk_blip test_executor_race test_mixed_upgrade test_controller_faults
	test_executor_overlap test_executor_fairness test_systemd_notify
	test_partition test_clock_skew test_executor_clock_skew test_outage_long
	test_apply_scale test_console test_sink_group test_migrate_contract test_listener_limits
	test_console_scale test_console_act test_new_job_partitions_cap "
if [ $# -eq 0 ]; then JOBS=${PALISADE_IT_JOBS:-3}; else JOBS=${PALISADE_IT_JOBS:-1}; fi
# Of the tests that may share the box, those that take 20 s or more (their
# "passed in" of a whole-suite run; most of it the load or the wait their
# guarantee needs) start first, longest first, then the rest in file order:
# the run's tail, once fewer than JOBS tests are left, is then a short
# test's length rather than a long one's.  A test missing here only runs
# in its file order.
IT_LONG=" test_oneshot_switch_misfire test_leftout_version_oneshot test_new_job_lookahead test_new_job_row_cap test_new_job_deferred_late test_new_job_leader_change test_notify_v1_success test_after_manual test_after_chain test_after_backfill_undecided test_after_backfill_partition test_after_manual_upstream_pending test_after_manual_upstream_below_wm test_after_fanin_held test_target_hosts_busy_node test_target_hosts_busy_old_node test_target_hosts_nowhere test_target_hosts_roll test_target_hosts_fixed_version test_jobs_next_pending test_boundary_nominal_old test_import_move test_boundary_nominal test_after_nominal test_console_next_pending test_reapply_race test_reapply_retired_race test_reapply_newer test_reapply_unactivated_stop test_oneshot_switch_down_to test_oneshot_switch_down_from test_verify_gap test_reapply_at_moved test_rollback_resume test_reapply_rounds test_controller_handoff test_executor_faults test_shadow_cutover test_resume_ramp test_calendars test_calendar_oneshot test_shadow_oneshot_moved test_shadow_moved_after test_shadow_retired_reapplied test_shadow_retired_cut test_apply_tenant_shadow_move test_apply_tenant_move_ahead test_apply_tenant_move_race test_apply_tenant_move_passed test_verify_shadow_moved_live test_new_job_reapplied_waiting test_after_oneshot_switch test_after_manual_upstream_middle
	test_controller_quarantine test_executor_retry test_controller_misfire test_after test_idem_rollback
	test_rollback_ahead test_lock_order test_after_quarantine test_pgbouncer test_rolling_upgrade test_metrics
	test_schedule_forms test_executor_stale test_operator test_commit_plan
	test_executor_pause test_executor_host_connections test_migrate test_resume_misfire
	test_after_old_node test_controller_sqlwords test_controller_stale test_stop_live_holder
	test_after_shadow test_after_version_switch test_backfill_guard test_apply_move_tenant
	test_resume_ticket_partial test_resume_backlog test_reapply test_trigger_guard test_resume_ramp_again
	test_after_finished_cancel test_pgbouncer_readyz test_trigger_scan_scale
	test_notify_rule_removed test_notify_rule_recovered test_takeover_old_controller test_takeover_old_apply
	test_notify_latest_receiver test_notify_rule_swap  test_gates_old_executor test_migrate_zk_path
	test_migrate_next_release test_tick_lock_wait test_migrate_zk_recorded test_pause_ahead test_replace_ahead"

# run_test T: runs test T and prints its lines: "== NAME", its output, and
# "passed in Ns" or, on a failure, the last lines of each of its process logs
# and any sanitizer report whole (what CI shows of a failure is this output
# only).  Returns 1 when it failed.
run_test() {
	local t=$1 name start=$SECONDS san= f
	name=$(basename "$t" .sh)
	echo "== $name"
	# A sanitizer report in any process log of the test fails it, even
	# when every check passed: a leak or a use after free found at a
	# node's exit is a defect of the run.
	if (cd "$ROOT" && bash "$t") && ! san=$(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' \
		"$PALISADE_TEST_TMP/nodes/$name"/*.log 2>/dev/null); then
		echo "   passed in $((SECONDS - start))s"
		return 0
	fi
	[ -n "${san:-}" ] && echo "   sanitizer report in: $san"
	for f in "$PALISADE_TEST_TMP/nodes/$name"/*.log; do
		[ -f "$f" ] || continue
		echo "   --- $(basename "$f"): events $(grep -o '"event":"[^"]*"' "$f" | cut -d'"' -f4 | sort | uniq -c | sort -rn | head -12 | awk '{printf "%s=%s ", $2, $1}')"
		echo "   --- $(basename "$f") (last 8 lines)"
		tail -8 "$f" | cut -c1-400 | sed 's/^/   | /'
		if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
			echo "   --- sanitizer report in $(basename "$f")"
			grep -A40 -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -60 | sed 's/^/   | /'
		fi
	done
	return 1
}

failed=()
passed=0
# ran NAME RC: count a test's verdict.  RC is taken before the call: in
# `ran "$(basename ...)" $?` the command substitution resets $? to 0 and
# every failed test counted as passed.
ran() { if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed+=("$1"); fi; }
mkdir -p "$PALISADE_TEST_TMP/out"
# one T: runs test T in the foreground, its lines kept for the summary.
one() {
	local n
	n=$(basename "$1" .sh)
	run_test "$1" 2>&1 | tee "$PALISADE_TEST_TMP/out/$n.out"
	ran "$n" "${PIPESTATUS[0]}"
}
if [ "$JOBS" -le 1 ]; then
	for t in "${tests[@]}"; do one "$t"; done
else
	declare -A RUNNING=() # pid -> test name
	# reap: wait for one running test to end and print its lines.
	reap() {
		local p rc
		wait -n -p p "${!RUNNING[@]}"
		rc=$?
		cat "$PALISADE_TEST_TMP/out/${RUNNING[$p]}.out"
		ran "${RUNNING[$p]}" "$rc"
		unset "RUNNING[$p]"
	}
	serial=()
	ordered=()
	for n in $IT_LONG; do
		for t in "${tests[@]}"; do [ "$(basename "$t" .sh)" = "$n" ] && ordered+=("$t"); done
	done
	for t in "${tests[@]}"; do
		case " $IT_LONG " in *[[:space:]]"$(basename "$t" .sh)"[[:space:]]*) ;; *) ordered+=("$t") ;; esac
	done
	for t in "${ordered[@]}"; do
		n=$(basename "$t" .sh)
		case " $IT_SERIAL " in *[[:space:]]"$n"[[:space:]]*) serial+=("$t"); continue ;; esac
		while [ ${#RUNNING[@]} -ge "$JOBS" ]; do reap; done
		run_test "$t" >"$PALISADE_TEST_TMP/out/$n.out" 2>&1 &
		RUNNING[$!]=$n
	done
	while [ ${#RUNNING[@]} -gt 0 ]; do reap; done
	for t in "${serial[@]}"; do one "$t"; done
fi
# The failed checks again, last: a CI log is often read from its tail, which
# would otherwise show only the last test's lines and the count.  At most 4
# per test, each cut to 200 characters; the full lines are above.
for n in "${failed[@]}"; do
	f="$PALISADE_TEST_TMP/out/$n.out"
	[ -f "$f" ] || continue
	echo "  $n:"
	grep -E '^    FAIL |^   sanitizer report in' "$f" | head -4 | cut -c1-200
done
# A test that never reported (the harness broke) is a failure too.
[ $((passed + ${#failed[@]})) -eq ${#tests[@]} ] || failed+=("(only $((passed + ${#failed[@]})) of ${#tests[@]} tests reported)")
echo "integration: ${#tests[@]} tests, ${#failed[@]} failed ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
