#!/usr/bin/env bash
# Dependent jobs (after:) and shadow (docs/jobs.md "after", docs/migrating.md
# "Chains of jobs").  as.up runs live every second; after it:
#   * as.spec (mode: shadow): every trigger shadow, no call;
#   * as.op, put in shadow with `palisade shadow --job` while it runs, and
#     as.back, rolled back with `palisade rollback --job`: every trigger of
#     an instant after the command shadow, no call for one;
# and as.src, in shadow (mode: shadow), with the live as.follow after it:
# as.follow follows each shadow instant of as.src into shadow (the old
# system ran it): shadow triggers, no call, no upstream_late although
# `within` (3 s) passes; after a cut-over of as.src at T, as.src and
# as.follow are called from T on, and as.follow never before T.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow for dependent jobs (G1) - a dependent job in shadow (its spec, the shadow command, a roll-back) is planned shadow and makes no call; a live dependent job follows a shadow upstream instant into shadow (no call, no upstream_late) and goes live with its upstream's cut-over"
T_START=$(date +%s)

it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
apply_jobs apply <<YAML || { finish; exit 1; }
jobs:
  - {id: as.up, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/up", timeout: 2s}}
  - {id: as.spec, mode: shadow, after: [{job: as.up}], target: {url: "http://$SINK_ADDR/effects/spec", timeout: 2s}}
  - {id: as.op, after: [{job: as.up}], target: {url: "http://$SINK_ADDR/effects/op", timeout: 2s}}
  - {id: as.back, after: [{job: as.up}], target: {url: "http://$SINK_ADDR/effects/back", timeout: 2s}}
  - {id: as.src, mode: shadow, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/src", timeout: 2s}}
  - {id: as.follow, after: [{job: as.src, within: 3s}], target: {url: "http://$SINK_ADDR/effects/follow", timeout: 2s}}
  - {id: as.head, mode: shadow, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://$SINK_ADDR/effects/head", timeout: 2s}}
  - {id: as.tail, mode: shadow, after: [{job: as.head}], target: {url: "http://$SINK_ADDR/effects/tail", timeout: 2s}}
YAML
lead_shards 20 n1 &&
	wait_until "as.op and as.back called (live)" 15 \
		has "select count(*) - 1 from triggers where job_id in ('as.op', 'as.back') and state = 'succeeded'" ||
	{ finish; exit 1; }
expect_exit "shadow --job as.op" 0 "$PAL" shadow --config "$CLUSTER_CONF" --job as.op --reason "after shadow test"
OP_AT=$(sql "select now()")
expect_exit "rollback --job as.back" 0 "$PAL" rollback --config "$CLUSTER_CONF" --job as.back --wait 2s --reason "after shadow test"
CMD_AT=$(sql "select now()")
wait_until "4 triggers of each of as.op and as.back planned after the commands" 15 \
	has "select min(n) - 3 from (select count(*) n from triggers where job_id in ('as.op', 'as.back') and created_at > '$CMD_AT' group by job_id) x having count(*) = 2"
wait_until "as.follow has 4 triggers" 15 has "select count(*) - 3 from triggers where job_id = 'as.follow'"

# An instant before the command keeps its rule (live) even when planned
# after it: the checks look at the instants after the command.
shadow_only() { # JOB [SINCE]: "shadow N" when every trigger of JOB (of an instant after SINCE) is shadow
	sql "select string_agg(state || ' ' || n, ',' order by state) from (select state, count(*) n from triggers
	      where job_id = '$1' and scheduled_at > '${2:--infinity}' group by state) x"
}
calls() { # JOB [SINCE]: attempts made for JOB (for an instant after SINCE)
	sql "select count(*) from attempt_ledger a join triggers t on t.id = a.trigger_id
	      where t.job_id = '$1' and t.scheduled_at > '${2:--infinity}'"
}
expect_match "as.spec (mode: shadow): every trigger shadow" '^shadow [0-9]+$' "$(shadow_only as.spec)"
expect_eq "as.spec: no call" 0 "$(calls as.spec)"
expect_match "as.op (shadow --job): every trigger of an instant after it shadow" '^shadow [0-9]+$' "$(shadow_only as.op "$OP_AT")"
expect_eq "as.op: no call for an instant after the command" 0 "$(calls as.op "$OP_AT")"
expect_match "as.back (rollback): every trigger of an instant after it shadow" '^shadow [0-9]+$' "$(shadow_only as.back "$CMD_AT")"
expect_eq "as.back: no call for an instant after the roll-back" 0 "$(calls as.back "$CMD_AT")"
expect_match "as.follow (live, after the shadow as.src): every trigger shadow" '^shadow [0-9]+$' "$(shadow_only as.follow)"
expect_eq "as.follow: no call" 0 "$(calls as.follow)"
expect_eq "as.follow: no misfire (no upstream_late although within passed)" 0 \
	"$(sql "select count(*) from misfires where job_id = 'as.follow'")"
expect_eq "as.follow: a trigger for each as.src instant it decided" 0 \
	"$(sql "select count(*) from triggers u join after_watermarks w on w.job_id = 'as.follow'
	         where u.job_id = 'as.src' and u.scheduled_at <= w.watermark
	           and u.scheduled_at > (select effective_from from job_versions where job_id = 'as.follow')
	           and not exists (select 1 from triggers d where d.job_id = 'as.follow' and d.scheduled_at = u.scheduled_at)")"

# The chain's head cut over: the follower goes live with it.
T=$(($(date +%s) + 2))
expect_exit "cut-over of as.src at T" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job as.src --at "$(date -u -d @$T +%FT%TZ)" --reason "after shadow test" --output json
expect_eq "... leaves no chain split" "[]" "$(jq -c .split_chains <<<"$OUT")"
wait_until "as.follow called for 3 instants from T on" 20 \
	has "select count(*) - 2 from triggers where job_id = 'as.follow' and state = 'succeeded' and scheduled_at >= to_timestamp($T)"
expect_eq "as.follow: no live trigger before T, no shadow one from T on" 0 \
	"$(sql "select count(*) from triggers where job_id = 'as.follow'
	         and ((scheduled_at < to_timestamp($T)) = (state <> 'shadow'))")"
expect_eq "as.follow: still no misfire" 0 "$(sql "select count(*) from misfires where job_id = 'as.follow'")"

# An upstream cut over before the job after it is named; the job then too: none.
AT=$(date -u -d @$(($(date +%s) + 1)) +%FT%TZ)
expect_exit "cut-over of as.head alone" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job as.head --at "$AT" --reason "after shadow test"
expect_match "... warns that as.tail, after it, stays in shadow" "warning: as.head is live but as.tail, which runs after it, is in shadow" "$OUT"
expect_exit "cut-over of as.tail" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job as.tail --at "$AT" --reason "after shadow test" --output json
expect_eq "... the chain is whole again" "[]" "$(jq -c .split_chains <<<"$OUT")"

FROM=$(date -u -d @$T_START +%FT%TZ) TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
expect_exit "verify over the run" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
