# tests/integration/sink_lib.sh - helpers of the palisade-sink tests
# (test_sink.sh, test_sink_group.sh), sourced after lib.sh: sinks started on
# free ports and tracked by PID (stopped at exit), one-request helpers that
# set CODE, HDR and BODY, and ledger / stats readers.  Work files go under
# $W ($PALISADE_TEST_TMP/<the test's name>).
SINK=${PALISADE_BIN:-bin}/palisade-sink
W=$PALISADE_TEST_TMP/$(basename "$0" .sh)
mkdir -p "$W"
SINK_PID=
declare -a ALL_PIDS=()

source "$(dirname "${BASH_SOURCE[0]}")/../ports.sh" # free_port

cleanup() {
	local p
	for p in "${ALL_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
	for p in "${ALL_PIDS[@]}"; do wait "$p" 2>/dev/null; done
}
trap cleanup EXIT

# start_sink LOGNAME ARGS...: start a sink on free ports; sets SINK_PID, URL
# (effects) and ADM (admin); fails the test when it does not come up.
start_sink() {
	local name=$1 rc; shift
	: >"$W/$name.log"
	launch_sink "$SINK" "$W/$name.log" "" "$@"
	rc=$?
	ALL_PIDS+=("$SINK_PID")
	URL=http://127.0.0.1:$SINK_PORT
	ADM=http://127.0.0.1:$SINK_ADMIN_PORT
	[ $rc = 0 ] && return 0
	fail "sink $name did not start: $(tail -3 "$W/$name.log")"
	finish
	exit 1
}

# stop_sink: SIGTERM, wait at most 10 s; sets STOP_RC (137 when it had to be killed).
stop_sink() {
	kill -TERM "$SINK_PID" 2>/dev/null
	for _ in $(seq 1 100); do kill -0 "$SINK_PID" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$SINK_PID" 2>/dev/null
	wait "$SINK_PID" 2>/dev/null
	STOP_RC=$?
}

# req METHOD KEY TOKEN BODY [curl args...]: one apply request.
# Sets CODE (000 when no response), HDR (response headers), BODY, CURL_RC.
# KEY or TOKEN "-" leaves that header out; REQ_PATH overrides the path.
req() {
	local m=$1 key=$2 tok=$3 body=$4; shift 4
	local h=()
	[ "$key" != - ] && h+=(-H "Idempotency-Key: $key")
	[ "$tok" != - ] && h+=(-H "Palisade-Fencing-Token: $tok")
	local f=$W/req.$BASHPID # requests may run in background subshells at once
	CODE=$(curl -s -o "$f.body" -D "$f.hdr" -w '%{http_code}' -X "$m" "${h[@]}" "$@" \
		--data-binary "$body" "$URL${REQ_PATH:-/effects/orders}")
	CURL_RC=$?
	HDR=$(tr -d '\r' <"$f.hdr" 2>/dev/null)
	BODY=$(cat "$f.body" 2>/dev/null)
	rm -f "$f.hdr" "$f.body"
}
post() { req POST "$@"; }
get_key() { # get_key ENCODED_KEY: GET /effects/<key>
	CODE=$(curl -s -o "$W/body" -w '%{http_code}' "$URL/effects/$1")
	BODY=$(cat "$W/body"); rm -f "$W/body"
}
hdr() { sed -n "s/^$1: //Ip" <<<"$HDR"; }
ledger() { sql "select count(*) from sink_ledger where idempotency_key = '$1'"; }
effects() { sql "select count(*) from sink_effects where idempotency_key = '$1'"; }
faults() { curl -s -X POST --data-binary "$1" "$ADM/admin/faults" >/dev/null; }
stat() { curl -s "$ADM/admin/stats" | jq -r ".$1"; }
