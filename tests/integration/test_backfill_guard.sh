#!/usr/bin/env bash
# A backfill refuses what `palisade trigger` refuses, in the CLI, the API
# and a misfire ticket's backfill alike (docs/operations.md, "backfill"):
#   - an instant whose earlier trigger has an unknown outcome (here: a sink
#     outage that applied each request and dropped its answer, the docs'
#     own backfill example): a backfill's key is new, so the service would
#     apply the effect a second time; refused (exit 4, 409 unknown-outcome)
#     naming the instants, nothing written, unless --new-effect;
#   - a --to after the database clock: the scheduler runs those instants
#     under their scheduled key, a backfill would run them twice; refused
#     (exit 65, 422), nothing written;
#   - a retired job (exit 4, 409 job-retired).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G5 - a backfill never re-runs, under a new key, an instant whose effect may have happened, nor plans instants still to come; it refuses a retired job as trigger does"
T0=$SECONDS

it_db
sink_up
SHARDS=2
LOOKAHEAD=1s OVERLAP=2s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
apply_jobs apply <<YAML
jobs:
  - id: bu.sec
    schedule: {cron: "*/2 * * * * ?"}
    target: {url: "http://$SINK_ADDR/effects/bu", body: '{"at": "{scheduled_at}"}'}
    retry: {max_attempts: 1}
  - {id: bf.old, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/old"}}
YAML
lead_shards 20 n1
ran() { has "select count(*) from trigger_jobs where job_id = 'bu.sec' and state = 'succeeded'"; }
wait_until "the job runs" 20 ran
OP=$("$PAL" token create --name ops --role operator | tail -1)
api() { # PATH BODY: "HTTP-code problem-type"
	curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $OP" -H 'Content-Type: application/json' \
		--data "$2" "http://${NODE_ADMIN[n1]}/api/v1$1" |
		python3 -c 'import json,sys; b,c=sys.stdin.read().rsplit(" ",1); print(c, json.loads(b).get("type","").rsplit(":",1)[-1])'
}
rfc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
backfills() { sql "select count(*) from triggers where job_id = '$1' and source = 'backfill'"; }

echo "  -- an outage: each request applied, its answer dropped"
F=$(rfc $(($(date +%s) + 1)))
sink_faults '{"drop_after_commit_rate": 1}'
sleep 7
sink_faults '{"drop_after_commit_rate": 0}'
T=$(rfc $(($(date +%s) - 2)))
sleep 3
UNK="exists (select 1 from attempt_ledger a where a.trigger_id = t.id and a.error_class in ('reset_after_send','empty_reply','timeout_after_send','garbage_reply'))"
U=$(sql "select count(*) from trigger_jobs t where job_id = 'bu.sec' and scheduled_at between '$F' and '$T' and $UNK")
echo "    figure: $U instants in [$F, $T] whose request was applied and never answered"
check "the outage left instants with an unknown outcome" [ "$U" -ge 2 ]
AT=$(sql "select to_char(min(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs t where job_id = 'bu.sec' and scheduled_at between '$F' and '$T' and $UNK")
expect_exit "trigger --at one of them: refused (unknown outcome)" 4 "$PAL" trigger --job bu.sec --at "$AT" --reason rerun
"$PAL" backfill --job bu.sec --from "$F" --to "$T" --request-id outage-1 --reason "sink outage" >"$NODE_DIR/bf.out" 2>&1
ec=$?
echo "    backfill exit $ec: $(head -c 400 "$NODE_DIR/bf.out")"
expect_eq "backfill over the outage: refused like trigger --at (exit 4)" 4 "$ec"
expect_match "... naming the instants with an unknown outcome" "$U instant.s. had a trigger whose outcome is unknown.*$AT" "$(cat "$NODE_DIR/bf.out")"
expect_eq "... and planning nothing" 0 "$(backfills bu.sec)"
expect_eq "the API's backfill over the outage: refused" "409 unknown-outcome" \
	"$(api /jobs/bu.sec/backfill "{\"reason\": \"outage\", \"from\": \"$F\", \"to\": \"$T\"}")"
remote() { env -u PALISADE_PG PALISADE_SERVER="http://${NODE_ADMIN[n1]}" PALISADE_TOKEN="$OP" "$PAL" "$@"; }
expect_exit "... and through --server (exit 4 as the direct path)" 4 \
	remote backfill --job bu.sec --from "$F" --to "$T" --reason "sink outage"
# a misfire ticket over the same window (as a resume under policy manual
# opens one): its backfill is refused too, and the ticket stays open
TK=$(sql "insert into tickets (job_id, reason, evidence, allowed_actions) values ('bu.sec', 'misfire: test',
	jsonb_build_object('range_from', '$F', 'range_to', '$T', 'count', 3), array['backfill', 'abandon']) returning id")
expect_exit "the ticket's backfill over the outage: refused" 4 \
	"$PAL" tickets resolve "$TK" --action backfill --reason "catch up"
expect_eq "... the ticket stays open, nothing planned" "open|0" \
	"$(sql "select state from tickets where id = $TK")|$(backfills bu.sec)"
expect_eq "... the API's resolve: refused" "409 unknown-outcome" \
	"$(api "/tickets/$TK/resolve" '{"reason": "catch up", "action": "backfill"}')"
sleep 2
D=$(sql "select count(*) from (select split_part(idempotency_key, '/', 2) from sink_effects where idempotency_key like 'bu.sec/%' and split_part(idempotency_key, '/', 2) between '$F' and '$T' group by 1 having count(*) > 1) x")
expect_eq "no instant of the window has two effects at the service" 0 "$D"
# a range that leaves them out, and the same range with --new-effect
last=$(sql "select to_char(max(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs t where job_id = 'bu.sec' and scheduled_at < '$F' and state = 'succeeded' and not outcome_unknown and not $UNK")
expect_exit "a backfill of an instant before the outage (its outcome known)" 0 \
	"$PAL" backfill --job bu.sec --from "$last" --to "$last" --request-id before-1 --reason "re-run"
expect_exit "--new-effect over the outage: a second effect asked for" 0 \
	"$PAL" backfill --job bu.sec --from "$F" --to "$T" --request-id outage-2 --reason "sink outage" --new-effect --output json
expect_eq "... audited with the instants run again" "$U" \
	"$(sql "select details->>'new_effect_instants' from audit_log where action = 'backfill' and details->>'request_id' = 'outage-2'")"
expect_exit "... through --server as well" 0 \
	remote backfill --job bu.sec --from "$F" --to "$T" --request-id outage-3 --reason "sink outage" --new-effect
n2=$(sql "select count(*) from triggers where job_id = 'bu.sec' and request_id = 'outage-2'")
expect_eq "... both planned the window" "$n2" "$(sql "select count(*) from triggers where job_id = 'bu.sec' and request_id = 'outage-3'")"
check "... $n2 instants each" [ "$n2" -ge "$U" ]

echo "  -- a --to after the database clock"
NOW=$(date +%s)
n0=$(backfills bu.sec)
"$PAL" backfill --job bu.sec --from "$(rfc $((NOW - 6)))" --to "$(rfc $((NOW + 10)))" --request-id fut-1 --reason "catch up" >"$NODE_DIR/fut.out" 2>&1
ec=$?
echo "    backfill exit $ec: $(head -c 300 "$NODE_DIR/fut.out")"
expect_eq "backfill to 10 s from now: refused (exit 65)" 65 "$ec"
expect_match "... saying why" "reaches past the database clock" "$(cat "$NODE_DIR/fut.out")"
expect_eq "the API's: refused" "422 invalid" \
	"$(api /jobs/bu.sec/backfill "{\"reason\": \"x\", \"from\": \"$(rfc $((NOW - 6)))\", \"to\": \"$(rfc $((NOW + 10)))\"}")"
expect_eq "... nothing planned" "$n0" "$(backfills bu.sec)"

echo "  -- a retired job"
expect_exit "delete bf.old" 0 "$PAL" delete --reason "gone" bf.old
expect_exit "backfill of the retired job: refused like trigger (exit 4)" 4 \
	"$PAL" backfill --job bf.old --from "$(rfc $((NOW - 20)))" --to "$(rfc $((NOW - 2)))" --reason "catch up"
expect_eq "the API's: refused" "409 job-retired" \
	"$(api /jobs/bf.old/backfill "{\"reason\": \"x\", \"from\": \"$(rfc $((NOW - 20)))\", \"to\": \"$(rfc $((NOW - 2)))\"}")"
TK=$(sql "insert into tickets (job_id, reason, evidence, allowed_actions) values ('bf.old', 'misfire: test',
	jsonb_build_object('range_from', '$(rfc $((NOW - 20)))', 'range_to', '$(rfc $((NOW - 2)))', 'count', 3), array['backfill', 'abandon']) returning id")
expect_exit "its ticket's backfill: refused" 4 "$PAL" tickets resolve "$TK" --action backfill --reason "catch up"
expect_eq "... nothing planned" 0 "$(backfills bf.old)"
echo "    figure: test took $((SECONDS - T0)) s"
finish
