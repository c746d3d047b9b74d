#!/usr/bin/env bash
# libcurl's own resend (docs/executor.md, "Connections are reused"): the
# executor keeps its connection to a service alive, and when a reused
# connection dies before any answer byte, libcurl sends the request again on
# a fresh connection by itself.  badserver.py's /resend answers the first
# request on a connection, closes a later one without an answer (a COMMIT
# whose fate the service lost) and answers the resend 503 (its database
# still away).  The first copy may have been applied: the executor classes
# the call unknown (reset_after_send), and with the budget spent the trigger
# ends `manual` with a ticket, never `failed` "not applied" - which would
# let an operator's re-run of the instant make a second effect.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a request libcurl resent after a reused connection died is never read as not applied"
it_db
start_badserver "bad server up"
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - id: rs
    schedule: {cron: "0 0 0 1 1 ? 2099"}
    target: {url: "http://127.0.0.1:$port/resend", timeout: 5s}
    retry: {max_attempts: 1}
Y
expect_exit "apply" 0 "$PAL" apply "$NODE_DIR/jobs.yaml"
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 3s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [executor]/' "$CLUSTER_CONF"
start_node ex
st() { sql "select state || '|' || outcome_unknown::char from trigger_jobs where job_id = 'rs' and request_id = '$1'"; }
ended() { case "$(st "$1")" in failed* | manual* | succeeded*) return 0 ;; esac; return 1; }
# r0 opens the connection the executor keeps alive; r1 goes out on it
AT0=$(date -u -d "@$(($(date +%s) - 6))" +%Y-%m-%dT%H:%M:%SZ)
"$PAL" trigger --job rs --at "$AT0" --request-id r0 --reason test >/dev/null
wait_until "r0 ends" 30 ended r0
AT1=$(date -u -d "@$(($(date +%s) - 5))" +%Y-%m-%dT%H:%M:%SZ)
"$PAL" trigger --job rs --at "$AT1" --request-id r1 --reason test >/dev/null
wait_until "r1 ends" 30 ended r1
stop_node ex
expect_eq "r0 succeeded" "succeeded|f" "$(st r0)"
expect_eq "r1 went out on the kept-alive connection, got no answer, and libcurl sent it again" \
	"$AT1 0,$AT1 503" "$(grep '^req /resend' "$NODE_DIR/bad.log" | awk -v at="$AT1" '$3 == at { printf "%s%s %s", sep, $3, $5; sep = "," }')"
expect_match "the resend's 503 is classed unknown (reset_after_send), not http_503" \
	'"phase":"request","http":503,"class":"reset_after_send"' "$(grep '"event":"executor.call"' "$NODE_DIR/ex.log")"
expect_eq "r1 ends manual with its outcome unknown, not failed" "manual|t" "$(st r1)"
"$PAL" trigger --job rs --at "$AT1" --request-id r2 --reason rerun >/dev/null 2>&1
expect_eq "a re-run of r1's instant is refused (its outcome is unknown), exit 4" 4 "$?"
finish
