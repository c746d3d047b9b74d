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
