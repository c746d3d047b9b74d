#!/usr/bin/env bash
# A backfill's request id outlives the backfill's triggers, as a manual
# run's does (docs/operations.md "backfill"): once retention dropped the
# range holding them and the sink forgot their keys, the same backfill again
# is refused (exit 4) unless --new-effect, instead of running every instant a
# second time.  A backfill with an instant before the retention horizon is
# refused the same way (whether it ran there can no longer be told), and a
# request id stays one request's across kinds after retention too.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a repeated backfill request id makes no second run within retention.request_ids, also after retention dropped its triggers; a backfill before the retention horizon needs --new-effect"
old_ranges_cluster
# two instants a day, at 02:30 and 03:30 UTC
printf 'jobs:\n  - {id: bf.ev, schedule: {cron: "0 30 2,3 * * ?"}, target: {url: "http://%s/effects/bf"}}\n' "$SINK_ADDR" >"$NODE_DIR/j.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j.yaml"
lead_shards 20 n1
ts() { sql "select to_char(('$1'::timestamptz + interval '$2') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"; }
FROM=$(ts "$R2" "0 hours")
TO=$(ts "$R2" "6 hours")
applied() { sql "select count(*) from sink_ledger where idempotency_key like 'bf.ev/%/BF-1'"; }
backfill() { "$PAL" backfill --config "$CLUSTER_CONF" --job bf.ev --reason outage "$@"; }
expect_exit "backfill [$FROM, $TO] --request-id BF-1" 0 backfill --from "$FROM" --to "$TO" --request-id BF-1
expect_match "... 2 instants, 2 triggers created" "2 instants, 2 triggers created" "$OUT"
IDS1=$(sql "select string_agg(id::text, ',' order by id) from trigger_jobs where job_id = 'bf.ev' and request_id = 'BF-1'")
# a manual run in the same range, under its own id
expect_exit "a manual run: trigger --at $(ts "$R2" "1 hour") --request-id MR-1" 0 \
	"$PAL" trigger --config "$CLUSTER_CONF" --job bf.ev --at "$(ts "$R2" "1 hour")" --request-id MR-1 --reason event
done1() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'bf.ev' and state = 'succeeded'")" = 3 ]; }
wait_until "they ran" 30 done1
expect_eq "the backfill's request id is remembered apart from its triggers (version 0: a backfill)" "$FROM 0 {$IDS1}" \
	"$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || ' ' || version || ' ' || trigger_ids::text from request_ids where job_id = 'bf.ev' and request_id = 'BF-1'")"
expect_exit "the backfill repeated while its triggers are kept" 0 backfill --from "$FROM" --to "$TO" --request-id BF-1
expect_match "... creates nothing" "0 triggers created, 2 already existed" "$OUT"
# time passes: the range is past retention.triggers (here --keep 1d, as 14 d
# later with the defaults), the sink's keys past their 7 d
expect_exit "retention round" 0 "$PAL" retention --config "$CLUSTER_CONF" --interval 1h --ahead 1d --keep 1d
expect_eq "the backfill's and the manual run's triggers are gone" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'bf.ev'")"
A1=$(applied)
sql "update sink_keys set seen_at = now() - interval '15 days', applied_at = now() - interval '15 days'" >/dev/null
expect_exit "the sink's key retention (7 d)" 0 "$SINK" --retention-once --key-retention 7d --pg "$PALISADE_PG"
expect_exit "the backfill repeated after retention: refused" 4 backfill --from "$FROM" --to "$TO" --request-id BF-1
echo "$OUT" | sed 's/^/    | /'
expect_match "... naming the first backfill and --new-effect" "request id \"BF-1\" was used by a backfill from $FROM \\(2 triggers.*retention has dropped.*--new-effect" "$(echo $OUT)"
expect_exit "... a wider range under the same id: refused" 4 backfill --from "$FROM" --to "$(ts "$R2" "1 day")" --request-id BF-1
expect_eq "nothing planned" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'bf.ev'")"
sleep 3
A2=$(applied)
echo "    figure: effects of BF-1 at the sink: $A1 before its keys were forgotten + $A2 after"
expect_eq "one effect per instant" 2 "$((A1 + A2))"
expect_exit "a manual run under the backfill's id: refused" 65 "$PAL" trigger --config "$CLUSTER_CONF" --job bf.ev --request-id BF-1 --reason event
expect_match "... already used by a backfill" "already used by a backfill" "$OUT"
expect_exit "a backfill under the manual run's id: refused" 65 backfill --from "$FROM" --to "$TO" --request-id MR-1
expect_match "... already used by a manual run" "already used by a manual run" "$OUT"
H=$("$PAL" retention --config "$CLUSTER_CONF" --horizon)
echo "    figure: retention horizon $H"
expect_exit "another backfill of the dropped range: refused (before the horizon)" 4 backfill --from "$FROM" --to "$TO" --request-id BF-2
expect_match "... naming the horizon and --new-effect" "2 instant\\(s\\), the first at $(ts "$R2" "150 minutes"), are before the retention horizon $H.*--new-effect" "$(echo $OUT)"
expect_eq "nothing planned" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'bf.ev'")"
expect_exit "a backfill of the kept range runs" 0 backfill --from "$(ts "$R3" "0 hours")" --to "$(ts "$R3" "6 hours")" --request-id BF-3
expect_match "... 2 triggers created" "2 instants, 2 triggers created" "$OUT"
expect_exit "BF-1 again with --new-effect runs" 0 backfill --from "$FROM" --to "$TO" --request-id BF-1 --new-effect
expect_match "... 2 triggers created" "2 instants, 2 triggers created" "$OUT"
expect_eq "... remembered with both runs' triggers, used now" "4 true" \
	"$(sql "select cardinality(trigger_ids) || ' ' || (used_at > now() - interval '1 minute') from request_ids where request_id = 'BF-1'")"
# retention.request_ids bounds the memory
sql "update request_ids set used_at = now() - interval '91 days' where request_id = 'BF-3'" >/dev/null
expect_exit "retention round" 0 "$PAL" retention --config "$CLUSTER_CONF" --interval 1h --ahead 1d --keep 1d
expect_match "... deletes the backfill's request id used 91 days ago" "deleted 1 request_ids rows used more than 90d ago" "$OUT"
finish
