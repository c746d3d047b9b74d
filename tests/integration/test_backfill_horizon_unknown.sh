#!/usr/bin/env bash
# A backfill (or a `trigger --at`) before the retention horizon whose range
# holds triggers palisade still keeps with an unknown outcome is refused
# naming those instants and their tickets, not for the horizon alone: the
# horizon's one hint, --new-effect, would run them a second time.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a backfill or manual-run refusal names the instants with a known unknown outcome, also before the retention horizon"
old_ranges_cluster
printf 'jobs:\n  - {id: bf.ev, schedule: {cron: "0 30 2,3 * * ?"}, target: {url: "http://%s/effects/bf"}, retry: {max_attempts: 1}}\n' "$SINK_ADDR" >"$NODE_DIR/j.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j.yaml"
expect_exit "retention round (the range of $FROM dropped)" 0 "$PAL" retention --config "$CLUSTER_CONF" --interval 1h --ahead 1d --keep 1d
lead_shards 20 n1
ts() { sql "select to_char(('$1'::timestamptz + interval '$2') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"; }
FROM=$(ts "$R2" "0 hours")
TO=$(ts "$R2" "6 hours")
backfill() { "$PAL" backfill --config "$CLUSTER_CONF" --job bf.ev --reason outage "$@"; }
echo "    figure: horizon $("$PAL" retention --config "$CLUSTER_CONF" --horizon)"
# the first backfill of the old range: --new-effect is the only way in
sink_faults '{"drop_after_commit_rate": 1}'
expect_exit "backfill BF-A --new-effect (before the horizon)" 0 backfill --from "$FROM" --to "$TO" --request-id BF-A --new-effect
settled() { [ "$(sql "select count(*) from triggers where job_id = 'bf.ev' and request_id = 'BF-A' and state in ('pending','running','retry_wait')")" = 0 ]; }
wait_until "BF-A's calls ended (applied, answers dropped)" 40 settled
sink_faults '{"drop_after_commit_rate": 0}'
sql "select id, state, outcome_unknown, scheduled_at from triggers where job_id = 'bf.ev' and request_id = 'BF-A'" | sed 's/^/    | /'
UNK=$(sql "select count(*) from triggers where job_id = 'bf.ev' and request_id = 'BF-A' and (state in ('manual','unknown') or outcome_unknown)")
check "BF-A left instants with an unknown outcome (kept, visible)" [ "$UNK" -ge 1 ]
expect_exit "backfill BF-B of the same range: refused" 4 backfill --from "$FROM" --to "$TO" --request-id BF-B
echo "$OUT" | sed 's/^/    | /'
expect_match "... the refusal names the instants whose outcome is unknown" "outcome is unknown|outcome unknown" "$OUT"
expect_match "... and points at the tickets" "palisade tickets|ticket" "$OUT"
AT=$(sql "select to_char(min(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from triggers where job_id = 'bf.ev' and request_id = 'BF-A' and (state in ('manual','unknown') or outcome_unknown)")
expect_exit "trigger --at one of those instants: refused" 4 "$PAL" trigger --config "$CLUSTER_CONF" --job bf.ev --at "$AT" --request-id M-1 --reason rerun
expect_match "... for the unknown outcome, not the horizon alone" "outcome is unknown" "$OUT"
expect_eq "nothing written by either" 0 "$(sql "select count(*) from triggers where job_id = 'bf.ev' and request_id in ('BF-B', 'M-1')")"
stop_node n1
finish
