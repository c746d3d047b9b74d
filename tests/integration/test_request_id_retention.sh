#!/usr/bin/env bash
# A manual run's request id outlives the run's triggers: a repeated
# `trigger --request-id` creates nothing also after retention dropped the
# range holding the first run (docs/operations.md "trigger"), until
# retention.request_ids.  With the defaults (triggers kept 14 d, the sink's
# keys 7 d) a second run would reach a sink that forgot its key, and the
# effect would be applied twice.  And `trigger --at` refuses (exit 4) an
# instant before the retention horizon, whose unknown outcome could have
# gone with its range, unless --new-effect.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a repeated request id never makes a second run within retention.request_ids, also after retention dropped the first run's triggers; a re-run before the retention horizon needs --new-effect"
old_ranges_cluster
# a manual run made before 046 (its trigger by SQL, as a 0.3.0 node makes
# it; 046 undone and applied again) is remembered from its triggers
printf 'jobs:\n  - {id: pre.j, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/pre.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$PALISADE_TEST_TMP/pre.yaml"
sql "drop table request_ids; delete from schema_migrations where version = 46" >/dev/null
sql "insert into triggers (job_id, version, scheduled_at, partition, source, request_id, tenant, resource_group, state, due_at, shard)
     select job_id, 1, date_trunc('second', now()), 0, 'manual', 'OLD-1', tenant, resource_group, 'succeeded', now(), shard
     from jobs where job_id = 'pre.j'" >/dev/null
expect_exit "migrate applies 046" 0 "$PAL" migrate
expect_eq "046 remembers the earlier manual run's request id" "1 $(sql "select id from triggers where request_id = 'OLD-1'")" \
	"$(sql "select version || ' ' || array_to_string(trigger_ids, ',') from request_ids where job_id = 'pre.j' and request_id = 'OLD-1'")"
{
	echo jobs:
	printf '  - {id: rq.ev, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://%s/effects/rq"}}\n' "$SINK_ADDR"
	printf '  - {id: uk.j, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}}\n'
} >"$NODE_DIR/j.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/j.yaml"
lead_shards 20 n1
AT=$(sql "select to_char(('$R2'::timestamptz + interval '1 hour') at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
applied() { sql "select count(*) from sink_ledger where idempotency_key like 'rq.ev/%'"; }
expect_exit "the event: trigger --at $AT --request-id EVT-1" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job rq.ev --at "$AT" --request-id EVT-1 --reason event
IDS1=$(sql "select string_agg(id::text, ',' order by id) from trigger_jobs where job_id = 'rq.ev'")
done1() { has "select count(*) from trigger_jobs where job_id = 'rq.ev' and state = 'succeeded'"; }
wait_until "it ran" 30 done1
expect_eq "the request id is remembered apart from the triggers" "$AT 1 {$IDS1}" \
	"$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || ' ' || version || ' ' || trigger_ids::text from request_ids where job_id = 'rq.ev' and request_id = 'EVT-1'")"
expect_exit "the event retried" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job rq.ev --at "$AT" --request-id EVT-1 --reason event
expect_match "... already exists" "already exists" "$OUT"
# an instant with an unknown outcome (failed, outcome_unknown: as a stop
# made for a lost executor leaves it), in the same old range
sql "insert into triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, state, due_at, shard, finished_at, outcome_unknown)
     select job_id, 1, '$AT', 0, 'schedule', tenant, resource_group, 'failed', '$AT', shard, '$AT'::timestamptz + interval '5 minutes', true
     from jobs where job_id = 'uk.j'" >/dev/null
expect_exit "re-run of an instant with an unknown outcome: refused" 4 "$PAL" trigger --config "$CLUSTER_CONF" --job uk.j --at "$AT" --reason rerun
# time passes: the range is past retention.triggers (here --keep 1d, as 14 d
# later with the defaults), the sink's key past its 7 d
expect_exit "retention round" 0 "$PAL" retention --config "$CLUSTER_CONF" --interval 1h --ahead 1d --keep 1d
echo "$OUT" | grep -E "^(dropped|deleted [0-9]+ request_ids)" | sed 's/^/    | /'
expect_eq "the run's triggers are gone" 0 "$(sql "select count(*) from trigger_jobs where job_id in ('rq.ev', 'uk.j')")"
expect_match "the round trims request ids by retention.request_ids (90d)" "deleted 0 request_ids rows used more than 90d ago" "$OUT"
A1=$(applied)
sql "update sink_keys set seen_at = now() - interval '15 days', applied_at = now() - interval '15 days'" >/dev/null
expect_exit "the sink's key retention (7 d)" 0 "$SINK" --retention-once --key-retention 7d --pg "$PALISADE_PG"
expect_exit "the event retried once more" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job rq.ev --at "$AT" --request-id EVT-1 --reason event
echo "$OUT" | sed 's/^/    | /'
expect_match "... already exists, naming the first run" "already exists \\(v1 at $AT\\); nothing created; triggers: $IDS1\$" "$OUT"
expect_exit "the same id at another instant: refused as before" 65 "$PAL" trigger --config "$CLUSTER_CONF" --job rq.ev --request-id EVT-1 --at "$(date -u -d '-1 hour' +%Y-%m-%dT%H:00:00Z)" --reason event
sleep 6
A2=$(applied)
echo "    figure: runs of EVT-1 now: $(sql "select count(*) from trigger_jobs where job_id = 'rq.ev'"); effects applied at the sink: $A1 before the key was forgotten + $A2 after"
expect_eq "one effect for the event" 1 "$((A1 + A2))"
H=$("$PAL" retention --config "$CLUSTER_CONF" --horizon)
echo "    figure: retention horizon $H"
expect_exit "the same re-run after retention: refused (before the horizon)" 4 "$PAL" trigger --config "$CLUSTER_CONF" --job uk.j --at "$AT" --reason rerun
expect_match "... naming the horizon and --new-effect" "before the retention horizon $H.*--new-effect" "$(echo $OUT)"
expect_exit "with --new-effect it runs" 0 "$PAL" trigger --config "$CLUSTER_CONF" --job uk.j --at "$AT" --new-effect --reason rerun
# retention.request_ids bounds the memory
sql "update request_ids set used_at = now() - interval '91 days' where request_id = 'EVT-1'" >/dev/null
expect_exit "retention round" 0 "$PAL" retention --config "$CLUSTER_CONF" --interval 1h --ahead 1d --keep 1d
expect_match "... deletes the request id used 91 days ago" "deleted 1 request_ids rows used more than 90d ago" "$OUT"
expect_eq "EVT-1 forgotten, the others kept" "0 2" "$(sql "select count(*) filter (where request_id = 'EVT-1') || ' ' || count(*) filter (where request_id <> 'EVT-1') from request_ids")"
finish
