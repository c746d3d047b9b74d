#!/usr/bin/env bash
# An executor whose wall clock steps at run time (libfaketime reading its
# offset from a file, as chaos/random.sh does for n4; monotonic time left
# alone, as an NTP step would): +10 min for a few seconds, then back.  The
# sink answers half of the calls 503, so retries are decided all the time.
# Every instant the executor writes or waits for (next_attempt_at of a
# retry, a deferred trigger or an unknown outcome's status query, a claimed
# trigger's wait for its instant) and every budget (max_age) must follow the
# database's clock: no retry parked 10 minutes into the future, no trigger
# failed on its max_age, no claimed trigger held 10 minutes when the clock
# steps back.  Before the fix the executor's estimate of the database clock
# was its wall clock plus an offset measured once a second, so for up to a
# second after each step it was 10 minutes off (the random drill, seed
# 895823325: 3 triggers left in retry_wait past the drain bound).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 + G3 under a +10 min step of one executor's clock and back: retry instants, budgets and claim-ahead waits follow the database clock; nothing parked, failed early or held; every trigger ends succeeded"

FT=$(faketime_lib)
if [ -z "$FT" ]; then
	fail "libfaketime is installed (ops/deps.sh installs the libfaketime package)"
	finish
	exit 1
fi

it_db exec_skew
sink_up --error-rate 0.15
SHARDS=4
write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
EXE_CONF=$NODE_DIR/executor.yaml
sed 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF" >"$EXE_CONF"
# Two sets of 20 jobs every second, backoff 200ms..1s: max_age 10m (a retry
# judged 10 min late spends it) and 30m (as in the random drill: such a
# retry is parked instead).
gen_sink_jobs "$NODE_DIR/age10.yaml" 20 "* * * * * ?" t1 age10
gen_sink_jobs "$NODE_DIR/age30.yaml" 20 "* * * * * ?" t1 age30
{ cat "$NODE_DIR/age10.yaml"; sed '1d; s/max_age: 10m/max_age: 30m/' "$NODE_DIR/age30.yaml"; } >"$NODE_DIR/jobs.yaml"
expect_exit "apply 40 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
CLOCK=$NODE_DIR/clock.faketime
echo "+0" >"$CLOCK"
start_node ctl
CLUSTER_CONF=$EXE_CONF LD_PRELOAD=$FT FAKETIME_TIMESTAMP_FILE=$CLOCK FAKETIME_CACHE_DURATION=1 \
	FAKETIME_DONT_FAKE_MONOTONIC=1 start_node jumpy
wait_until "all shards led" 30 all_shards_led
retries() { [ "$(sql "select count(*) from attempt_ledger where node = 'jumpy' and outcome = 'retry_wait'")" -ge 20 ]; }
wait_until "the jumping executor schedules retries" 30 retries

# parked: waiting triggers whose next attempt lies further ahead than any
# backoff (1 s) or deferral (1 s) allows, by the database's clock.
PARKED_SQL="select count(*) from triggers where state in ('retry_wait', 'pending', 'unknown') and next_attempt_at > clock_timestamp() + interval '20 seconds'"
sample_parked() { # sample_parked SECONDS: the largest parked count seen (wall clock)
	local most=0 n end=$((SECONDS + $1))
	while [ "$SECONDS" -lt "$end" ]; do
		n=$(sql "$PARKED_SQL")
		[ "${n:-0}" -gt "$most" ] && most=$n
		sleep 0.25
	done
	echo "$most"
}
T0=$(now_rfc3339)
echo "+10m" >"$CLOCK"
p_fwd=$(sample_parked 6)
echo "+0" >"$CLOCK"
p_back=$(sample_parked 4)
T1=$(now_rfc3339)
offset=$(metric jumpy palisade_executor_clock_offset_seconds)
echo "    figure: the executor's measured offset (database - wall clock) after the step back: ${offset} s"
echo "    figure: triggers parked > 20 s ahead of the database clock: at most $p_fwd while +10m, $p_back after the step back"
expect_eq "no retry or deferral parked past its backoff while the clock runs 10 min fast" 0 "$p_fwd"
expect_eq "none parked after the clock stepped back" 0 "$p_back"
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= '$T1' and state not in ('succeeded', 'failed', 'manual', 'cancelled', 'skipped')")" = 0 ]; }
wait_wall "every trigger up to the step back is terminal within 25 s (backoff at most 1 s)" 25 settled
echo "    states: $(sql "select string_agg(state || coalesce('/' || last_error_class, '') || '=' || n, ' ') from (select state, last_error_class, count(*) n from triggers where scheduled_at between '$T0' and '$T1' group by 1, 2) x")"
echo "    not terminal: $(sql "select coalesce(string_agg(job_id || '@' || scheduled_at || ' ' || state || ' next ' || coalesce(next_attempt_at::text, '-'), '; '), 'none') from (select * from trigger_jobs where scheduled_at <= '$T1' and state not in ('succeeded', 'failed', 'manual', 'cancelled', 'skipped') order by id limit 5) x")"
expect_eq "no trigger failed or went to manual (max_age judged by the database clock)" 0 \
	"$(sql "select count(*) from triggers where state in ('failed', 'manual')")"
check "the jumping executor ran attempts during the jump" \
	[ "$(sql "select count(*) from attempt_ledger where node = 'jumpy' and claimed_at between '$T0' and '$T1'")" -gt 0 ]
expect_exit "verify: no instant missing or doubled" 0 "$PAL" verify --from "$T0" --to "$T1"
finish
