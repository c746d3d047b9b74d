# chaos/lib.sh - helpers for the drills of chaos/ (sourced after
# tests/integration/lib.sh).
#
#   declare -A FIG; FIG[name]=number ...
#   write_report NAME [KEY=JSONVALUE...]   the drill's JSON report, into the
#       file $PALISADE_DRILL_REPORT names (chaos/run.sh sets it; nothing
#       when unset): drill, checks, failed, every FIG entry, extra keys.
write_report() {
	[ -n "${PALISADE_DRILL_REPORT:-}" ] || return 0
	local name=$1 k
	shift
	{
		echo "{\"drill\": \"$name\", \"checks\": $T_CHECKS, \"failed\": $T_FAILS"
		for k in $(printf '%s\n' "${!FIG[@]}" | sort); do echo ", \"$k\": ${FIG[$k]:-null}"; done
		for k in "$@"; do echo ", \"${k%%=*}\": ${k#*=}"; done
		echo "}"
	} >"$PALISADE_DRILL_REPORT"
}

# drill_load SHARDS SESSION LEASE HEARTBEAT NJOBS PREFIX: the sink, a node
# config (controller + executor) and NJOBS sink jobs every 2 s, applied.
# Sets SHARDS.  Fails the drill (and exits) when the sink does not start.
drill_load() {
	SHARDS=$1
	start_sink || { fail "sink starts"; finish; exit 1; }
	ZK_SESSION=$2 write_conf "$CLUSTER_CONF" "executor: {lease: $3, heartbeat: $4}"
	sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
	gen_sink_jobs "$NODE_DIR/jobs.yaml" "$5" "*/2 * * * * ?" t1 "$6"
	expect_exit "apply $5 jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
}

# check_window T0 T1: every trigger of [T0, T1] ends succeeded; palisade
# verify is clean; no instant planned twice; one effect per key at the sink.
# FIG[triggers], FIG[missing], FIG[planned_twice], FIG[effects_doubled].
# The sink's ledger is read with $SINK_SQL (a function or command taking
# one query; default sql: the sink's tables in the palisade database).
check_window() {
	local t0=$1 t1=$2
	window_settled() { [ "$(sql "select count(*) from triggers where scheduled_at between '$t0' and '$t1' and state <> 'succeeded'")" = 0 ]; }
	if ! wait_until "every trigger of the window ends succeeded" 90 window_settled; then
		# what is left, for the diagnosis
		sql "select t.id, t.job_id, t.scheduled_at, t.state, t.attempt_count, t.next_attempt_at,
		            t.lease_owner, t.lease_until, t.last_error_class,
		            (select string_agg(a.fence || ':' || coalesce(a.outcome, '-') || '@' || a.node ||
		                    coalesce('/' || a.error_class, ''), ', ' order by a.fence)
		               from attempt_ledger a where a.trigger_id = t.id and a.scheduled_at = t.scheduled_at)
		       from trigger_jobs t where scheduled_at between '$t0' and '$t1' and state <> 'succeeded'
		      order by t.id limit 10" 2>&1 | sed 's/^/    left: /'
	fi
	expect_exit "verify: nothing missing or doubled over the window" 0 "$PAL" verify --from "$t0" --to "$t1"
	echo "    $(echo "$OUT" | head -1)"
	FIG[missing]=$(sed -n 's/.* missing=\([0-9]*\).*/\1/p' <<<"$OUT" | head -1)
	FIG[triggers]=$(sql "select count(*) from triggers where scheduled_at between '$t0' and '$t1'")
	FIG[planned_twice]=$(sql "select count(*) from (select 1 from trigger_jobs where scheduled_at between '$t0' and '$t1' group by job_id, scheduled_at, partition having count(*) > 1) d")
	FIG[effects_doubled]=$(${SINK_SQL:-sql} "select count(*) from (select idempotency_key from sink_ledger group by 1 having count(*) > 1) d")
	expect_eq "no instant planned twice" 0 "${FIG[planned_twice]}"
	expect_eq "one effect per key at the sink" 0 "${FIG[effects_doubled]}"
	echo "    figure: ${FIG[triggers]} triggers in the window, missing ${FIG[missing]:-?}, planned twice ${FIG[planned_twice]}, effects doubled ${FIG[effects_doubled]}"
}
