#!/usr/bin/env bash
# Garbage, huge, redirecting, TLS-failing, slow-drip, hanging and resetting
# targets: each is classified, bounded in memory and time, and the executor
# survives them all.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "bad responses are classified (permanent, retryable or unknown then queried), bounded in memory and time, and never crash the executor"

fresh_db it_bad
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
start_badserver "bad server up"
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
{
	echo "jobs:"
	for p in garbage huge redirect drip hang reset; do
		echo "  - {id: bad.$p, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:$port/$p\", timeout: 2s, status_url: \"http://$SINK_ADDR/effects/{idempotency_key}\"}, retry: {max_attempts: 2, backoff: {initial: 100ms, max: 200ms}}}"
	done
	echo "  - {id: bad.tls, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"https://127.0.0.1:$tls/ok\", timeout: 2s}, retry: {max_attempts: 2}}"
	echo "  - {id: bad.control, schedule: {cron: \"0 0 0 1 1 ? 2099\"}, target: {url: \"http://127.0.0.1:$port/ok\", timeout: 2s}}"
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
# Proxy variables in the node's environment must not divert side effects
# (executor.proxy defaults to direct): point them at a dead port, and every
# target below must still be reached directly.
unset no_proxy NO_PROXY
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
start_node b1
unset http_proxy https_proxy HTTPS_PROXY ALL_PROXY
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
wait_until "shards led" 20 all_shards_led
for j in garbage huge redirect drip hang reset tls control; do
	"$PAL" trigger --job "bad.$j" --reason "bad response test" >/dev/null
done
settled() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'bad.%' and state not in ('succeeded', 'failed', 'manual')")" = 0 ]; }
wait_until "every bad target's trigger reaches a final or manual state" 40 settled
state() { sql "select state || ' ' || coalesce(last_error_class, '') from trigger_jobs where job_id = 'bad.$1'"; }
# Every attempt, for the record: a wrong class below is explained here.
sql "select t.job_id, a.fence, coalesce(a.outcome, '-'), coalesce(a.error_class, '-'), coalesce(a.http_status::text, '-'), a.duration_ms from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id like 'bad.%' order by 1, 2" | sed 's/^/    attempt: /'
expect_eq "control: succeeded" "succeeded " "$(state control)"
expect_eq "redirect: permanent failure, not followed" "failed redirect" "$(state redirect)"
expect_eq "tls (self-signed): permanent failure" "failed tls" "$(state tls)"
expect_eq "huge body: cut at the cap; a 2xx still counts as applied" "succeeded " "$(state huge)"
# Not HTTP after the request was sent (libcurl: unsupported protocol, the
# HTTP/0.9 refusal): the request may have been applied, so it is unknown and
# queried, never the permanent bad_url of a wrong scheme.
att() { sql "select string_agg(coalesce($2, '-'), ' ' order by a.fence) from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'bad.$1'"; }
expect_eq "garbage: each attempt's class is garbage_reply (unknown), not bad_url" \
	"garbage_reply garbage_reply" "$(att garbage a.error_class)"
expect_eq "garbage: the sink said 'not applied' (404) to each attempt's status query, so it may fail" \
	"failed garbage_reply" "$(state garbage)"
for j in garbage drip hang reset; do
	s=$(state $j)
	expect_match "$j: outcome unknown, resolved by querying the status URL (404: not applied, retried with the same key), then failed" "^failed " "$s"
	expect_eq "$j: each of its 2 attempts queried the status URL and heard 404" "{404} {404}" "$(att $j a.status_queries::text)"
	key=$(sql "select distinct a.idempotency_key from attempt_ledger a join trigger_jobs t on t.id = a.trigger_id where t.job_id = 'bad.$j'")
	check "$j: the status queries asked for the attempts' own key ($key)" \
		[ "$(grep '"event":"executor.status_query"' "$NODE_DIR/b1.log" | grep -cF "\"key\":\"$key\"")" -ge 2 ]
done
check "status queries were made after unknown outcomes" [ "$(metric b1 'palisade_executor_status_queries_total{answer="not_found"}' | cut -d. -f1)" -ge 1 ]
check "the node is still alive" node_alive b1
rss=$(awk '/VmHWM/ {print $2}' /proc/${NODE_PID[b1]}/status)
echo "    figure: node peak RSS ${rss} kB after a 50 MiB response"
check "memory stayed bounded (peak RSS < 100 MiB)" [ "$rss" -lt 102400 ]
finish
