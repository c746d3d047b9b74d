#!/usr/bin/env bash
# The sink's status query while an apply request for the key waits inside
# the sink before its transaction (docs/sink.md, "Query"): queued for a
# group's committer, or paused.  The transaction's advisory lock cannot show
# such a request, and 404 would say "not applied" while it commits a moment
# later (docs/protocol.md, rule 6).  The sink keeps the keys of its requests
# in flight and answers 409 in_progress for them.  End to end: a slow
# service (requests waiting), the executor's call times out, its status
# query must not clear the unknown outcome: the trigger ends in a manual
# ticket, never `failed`, and a re-run with a new key is refused.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a status query never answers 404 for a key whose apply request is in flight in the service"
fresh_db it_sink_query_inflight
"$PAL" migrate >/dev/null
start_sink --group-wait-ms 1000 --group-committers 1 || { fail "sink starts"; finish; exit 1; }
U=http://$SINK_ADDR
# bg_apply KEY: one apply in the background; its status code lands in $NODE_DIR/KEY.code
bg_apply() {
	( curl -s -o /dev/null -w '%{http_code}' -X POST -H "Idempotency-Key: $1" -H 'Palisade-Fencing-Token: 1' \
		--data-binary x "$U/effects/q" >"$NODE_DIR/$1.code" ) &
	BG=$!
}
status() { curl -s -o "$NODE_DIR/status.body" -w '%{http_code}' "$U/effects/$1"; }
# in_flight: until the sink has one apply request in flight (polled with jq:
# the group window is 1 s)
in_flight() {
	for _ in $(seq 1 100); do
		[ "$(curl -s "http://$SINK_ADMIN/admin/stats" | jq -r .inflight)" = 1 ] && break
		sleep 0.05
	done
}
# waiting KEY WHERE RELEASE...: an apply for KEY waits in the sink (WHERE)
# while a status query asks for it; RELEASE lets it go
waiting() {
	local key=$1 where=$2; shift 2
	bg_apply "$key"
	in_flight
	expect_eq "a status query for a request $where: 409 in_progress" "409 in_progress" \
		"$(status "$key") $(jq -r .error "$NODE_DIR/status.body")"
	"$@"
	wait $BG
	expect_eq "the request $where then applies" 201 "$(cat "$NODE_DIR/$key.code")"
	expect_eq "... and its key leaves the set with its answer: the status query finds it (200)" 200 "$(status "$key")"
}
# a request queued for its group (a window of 1 s): it goes by itself
waiting gq "queued for its group" true
# a paused request; before it is unpaused, a key with nothing in flight
unpause() {
	expect_eq "a status query for another key, nothing in flight for it: 404" 404 "$(status other)"
	sink_faults '{"paused": false}'
}
sink_faults '{"paused": true}'
waiting pz "paused" unpause
# a replay in flight for an effect already complete: the record still answers 200
sink_faults '{"paused": true}'
bg_apply pz
in_flight
expect_eq "a complete effect answers 200 while a replay of it is in flight" 200 "$(status pz)"
sink_faults '{"paused": false}'
wait $BG
expect_eq "the status queries answered 409 are counted" 2 "$(sink_stat query_in_progress)"

# ---- end to end ---------------------------------------------------------------------
# one attempt, a 1 s timeout, the status URL: the executor's call times out
# while its request waits in the sink, and its status query decides
printf 'jobs:\n  - {id: qq, schedule: {cron: "0 0 0 1 1 ? 2099"}, retry: {max_attempts: 1},\n     target: {url: "%s", body: "{}", timeout: 1s, status_url: "%s"}}\n' \
	"$U/effects/qq" "$U/effects/{idempotency_key}" >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
sink_faults '{"paused": true}' # a slow service: requests wait
AT=$(date -u -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%SZ)
"$PAL" trigger --job qq --at "$AT" --request-id s1 --reason test >/dev/null
start_node ex
st() { sql "select state || '|' || outcome_unknown::char from trigger_jobs where job_id = 'qq' and request_id = 's1'"; }
ended() { case "$(st)" in failed*|manual*|succeeded*) return 0;; esac; return 1; }
wait_until "the trigger ends" 30 ended
stop_node ex
expect_eq "the trigger whose request is still waiting in the sink ends in a manual ticket, outcome unknown (not failed)" \
	"manual|t" "$(st)"
sink_faults '{"paused": false}' # the service catches up: the waiting request applies
effect() { [ "$(sql "select count(*) from sink_effects where idempotency_key like 'qq/$AT/%'")" = 1 ]; }
wait_until "the waiting request applies" 10 effect
expect_exit "an operator's re-run at the instant with a new key is refused" 4 \
	"$PAL" trigger --job qq --at "$AT" --request-id s2 --reason rerun
expect_eq "one effect at the instant" 1 "$(sql "select count(*) from sink_effects where idempotency_key like 'qq/$AT/%'")"
finish
