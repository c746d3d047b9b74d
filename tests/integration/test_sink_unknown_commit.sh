#!/usr/bin/env bash
# A COMMIT whose fate the sink lost (docs/sink.md, "A COMMIT whose fate is
# unknown"): the sink's connection to PostgreSQL breaks after the COMMIT
# was sent and before its confirmation came back.  503 would say "not
# applied" (docs/protocol.md, rule 8), and the executor would read it so:
# the trigger would end `failed` with its effect committed, and an
# operator's re-run at the instant would be let through without a warning
# (nothing unknown) and apply the effect twice.  The sink answers nothing
# instead (the protocol's "reset after the request was sent": unknown), and
# the status query tells the truth.  A proxy between the sink and
# PostgreSQL (pg_cutproxy.py) loses the one answer: a group's result rows
# (sent after its implicit COMMIT) or a COMMIT's command tag (a request
# applied alone).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - an effect whose COMMIT's fate the service lost is never answered 'not applied': the status query resolves it, and its trigger never ends failed"
fresh_db it_sink_unknown_commit
"$PAL" migrate >/dev/null
PP=$(free_port)
ARM=$NODE_DIR/arm
python3 tests/integration/pg_cutproxy.py "$PP" 127.0.0.1 "$PALISADE_PG_PORT" "$ARM" >"$NODE_DIR/proxy.log" 2>&1 &
PROXY=$!
trap 'kill $PROXY 2>/dev/null; stop_all_nodes; stop_sink' EXIT
for _ in $(seq 1 50); do grep -q ready "$NODE_DIR/proxy.log" && break; sleep 0.1; done
start_sink --pg "$PALISADE_PG port=$PP" --threads 2 --group-committers 1 ||
	{ fail "sink starts"; finish; exit 1; }
U=http://$SINK_ADDR
cuts() { grep -c cut "$NODE_DIR/proxy.log"; }
# apply KEY: one apply; CODE (000: no answer) and CURL_RC
apply() {
	CODE=$(curl -s -o "$NODE_DIR/$1.body" -w '%{http_code}' -X POST -H "Idempotency-Key: $1" \
		-H 'Palisade-Fencing-Token: 1' --data-binary x "$U/effects/o")
	CURL_RC=$?
}
effects() { sql "select count(*) from sink_effects where idempotency_key = '$1'"; }
status() { curl -s -o /dev/null -w '%{http_code}' "$U/effects/$1"; }

# ---- a group's call: its rows (after its implicit COMMIT) lost ------------------------
echo applied >"$ARM"
apply g1
expect_eq "the proxy lost the answer of the group's call" 1 "$(cuts)"
expect_eq "the group committed all the same" 1 "$(effects g1)"
expect_eq "the sink answers nothing (curl: empty reply, exit 52), not 503 'not applied'" "000 52" "$CODE $CURL_RC"
expect_eq "the status query then answers 200 (applied)" 200 "$(status g1)"
expect_eq "counted commit_unknown" 1 "$(sink_stat commit_unknown)"
expect_match "logged sink.commit_unknown with the key" '"event":"sink.commit_unknown","key":"g1"' \
	"$(grep sink.commit_unknown "$NODE_DIR/sink.log")"
hdr=$(curl -s -o /dev/null -D - -X POST -H 'Idempotency-Key: g1' -H 'Palisade-Fencing-Token: 1' \
	--data-binary x "$U/effects/o" | tr -d '\r')
expect_eq "a retry of the key is a replay (the sink reconnected)" "201 true" \
	"$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' <<<"$hdr") $(sed -n 's/^Idempotent-Replayed: //Ip' <<<"$hdr")"

# ---- a request applied alone (a delay in force): its COMMIT's answer lost ---------------
sink_faults '{"delay_ms": 1}'
echo COMMIT >"$ARM"
apply a1
expect_eq "the proxy lost the answer of the COMMIT" 2 "$(cuts)"
expect_eq "the request committed all the same" 1 "$(effects a1)"
expect_eq "the sink answers nothing, not 503" "000 52" "$CODE $CURL_RC"
expect_eq "the status query then answers 200" 200 "$(status a1)"
expect_eq "counted commit_unknown" 2 "$(sink_stat commit_unknown)"
sink_faults '{"delay_ms": 0}'

# ---- end to end: the executor resolves it with the status query ----------------------
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - id: cu
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "$U/effects/cu", body: '{"at": "{scheduled_at}"}', timeout: 5s,
             status_url: "$U/effects/{idempotency_key}"}
    retry: {max_attempts: 1}
Y
expect_exit "apply" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
AT=$(date -u -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%SZ)
"$PAL" trigger --job cu --at "$AT" --request-id s1 --reason test >/dev/null
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
echo applied >"$ARM"
start_node ex
st() { sql "select state || '|' || outcome_unknown::char from trigger_jobs where job_id = 'cu' and request_id = '${1:-s1}'"; }
ended() { case "$(st "$@")" in failed*|manual*|succeeded*) return 0;; esac; return 1; }
wait_until "the trigger ends" 30 ended
expect_eq "the proxy lost the answer of the executor's request" 3 "$(cuts)"
expect_eq "the instant's effect committed once" 1 \
	"$(sql "select count(*) from sink_effects where idempotency_key like 'cu/$AT/%'")"
expect_eq "the trigger succeeded (the status query found the effect), not failed with max_attempts 1" "succeeded|f" "$(st)"
expect_match "the executor's request had no answer (unknown: empty_reply), not 503 (not applied)" \
	'"phase":"request","http":0,"class":"empty_reply"' "$(grep '"event":"executor.call"' "$NODE_DIR/ex.log")"
expect_eq "... and its attempt was resolved by the status query" "resolved_by_query" \
	"$(sql "select string_agg(distinct a.error_class, ',') from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'cu'")"

# ---- end to end on a kept-alive connection, in a failover ---------------------------
# The executor keeps its connection to the sink (the status query's) alive,
# and s2's request goes out on it.  The cut is a failover: every connection
# to PostgreSQL dropped, new ones refused for 3 s.  The sink closes the HTTP
# connection without an answer, libcurl sends the request again on a fresh
# connection by itself.  PostgreSQL is still away, and the sink remembers
# that s2's COMMIT's fate was lost: 409 in_progress, not 503 "not applied";
# the executor, which saw the resend, classes the call unknown
# (reset_after_send) either way (test_executor_resend: a service that
# answers the resend 503).
printf 'applied\n3\n' >"$ARM"
AT2=$(date -u -d "@$(($(date +%s) - 4))" +%Y-%m-%dT%H:%M:%SZ)
"$PAL" trigger --job cu --at "$AT2" --request-id s2 --reason test >/dev/null
wait_until "s2 ends" 30 ended s2
stop_node ex
expect_eq "the proxy lost the answer of s2's request, and dropped every connection" 4 "$(cuts)"
expect_eq "s2's effect committed once" 1 \
	"$(sql "select count(*) from sink_effects where idempotency_key like 'cu/$AT2/%'")"
expect_eq "s2 is not failed with its outcome known (succeeded by the query, or manual)" ok \
	"$(case "$(st s2)" in succeeded*|manual*) echo ok;; *) st s2;; esac)"
expect_match "libcurl's resend of s2 was answered 409, and the call classed unknown (reset_after_send)" \
	'"phase":"request","http":409,"class":"reset_after_send"' "$(grep '"event":"executor.call"' "$NODE_DIR/ex.log")"
case "$(st s2)" in
succeeded*) ;; # resolved: a re-run would be a deliberate new effect
*)
	"$PAL" trigger --job cu --at "$AT2" --request-id s3 --reason rerun >/dev/null 2>&1
	expect_eq "a re-run of s2's instant is refused (its outcome is unknown), exit 4" 4 "$?"
	;;
esac

# ---- any client on a kept-alive connection: the sink's own part ---------------------
# The same failover under a client that does not know of libcurl's resend
# (curl's command line): k1 goes out on the connection a health check
# opened, gets no answer, and curl sends it again at once.  PostgreSQL is
# still away, but the sink remembers that k1's COMMIT's fate was lost:
# 409 in_progress, not 503 "not applied".
wait_until "the sink reaches its database again" 15 eval '[ "$(status g1)" = 200 ]'
printf 'applied\n3\n' >"$ARM"
out=$(curl -sv -o /dev/null -w '%{http_code}\n' "$U/healthz" --next -o /dev/null \
	-w '%{http_code}\n' -X POST -H 'Idempotency-Key: k1' -H 'Palisade-Fencing-Token: 1' \
	--data-binary x "$U/effects/o" 2>"$NODE_DIR/curl.err")
expect_eq "the proxy lost the answer of k1's group call" 5 "$(cuts)"
expect_match "curl sent k1 again on a fresh connection" "retrying a fresh connect" \
	"$(cat "$NODE_DIR/curl.err")"
expect_eq "k1's resend is answered 409 in_progress, not 503 'not applied'" "200 409" "$(echo $out)"
expect_eq "k1 committed" 1 "$(effects k1)"
wait_until "the sink reaches its database again" 15 eval '[ "$(status k1)" = 200 ]'
apply k1
expect_eq "once it does, k1 is a replay" 201 "$CODE"
finish
