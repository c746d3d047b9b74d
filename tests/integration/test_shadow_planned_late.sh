#!/usr/bin/env bash
# A scope that was live and never in shadow, put in shadow by `palisade
# rollback` (group ch) or `palisade shadow` (group sh) (docs/migrating.md,
# "Roll-back", "Shadow"): an instant before the command that palisade plans
# only after it keeps the rule it had, live.  Here the dependent job's
# instant T, whose upstream palisade ran at T before the command while the
# controller was a few ticks behind (SIGSTOP): it is planned pending and
# called by palisade once, not planned shadow (then neither system would
# run it: the old system takes over from the command on, or the listed
# instants and those after the roll-back's `at`).  Instants after the
# command are shadow and never called; verify is clean.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow and roll-back of a live scope leave no instant before the command run by neither system: one planned after the command (a dependent job's) stays live and is called once"
T_START=$(date +%s)

fresh_db it_shadow_planned_late
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=1; ZK_SESSION=10s
write_conf "$CLUSTER_CONF" "executor: {lease: 6s, heartbeat: 500ms}"
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - {id: ch.up, group: ch, schedule: {cron: "*/5 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/ch.up", timeout: 5s}}
  - {id: ch.down, group: ch, after: [{job: ch.up}], target: {url: "http://$SINK_ADDR/effects/ch.down", timeout: 5s}}
  - {id: sh.up, group: sh, schedule: {cron: "*/5 * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/sh.up", timeout: 5s}}
  - {id: sh.down, group: sh, after: [{job: sh.up}], target: {url: "http://$SINK_ADDR/effects/sh.down", timeout: 5s}}
Y
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
start_node c1 --roles controller
start_node e1 --roles executor
wait_until "shards led" 20 all_shards_led &&
	wait_until "both chains run (a dependent effect each)" 30 \
		has "select count(distinct t.job_id) - 1 from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id in ('ch.down', 'sh.down')" &&
# T is read by the poll that finds it: read again after the wait, on a slow
# box the instant could be under 2 s ahead or claimed by then, T empty.
T=
ahead() { T=$(sql "select to_char(min(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = 'ch.up' and state = 'pending' and scheduled_at > now() + interval '2 s'"); [ -n "$T" ]; }
wait_until "the upstream triggers planned 2 s or more ahead" 20 ahead || { finish; exit 1; }
pause_node c1 # the controller a few ticks behind (a GC pause, a slow tick)
wait_until "both upstreams at $T succeeded (executor e1)" 15 \
	has "select count(*) - 1 from trigger_jobs where job_id in ('ch.up', 'sh.up') and scheduled_at = '$T' and state = 'succeeded'"
expect_eq "neither dependent instant at $T is planned yet" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id in ('ch.down', 'sh.down') and scheduled_at = '$T'")"
BACK=$("$PAL" rollback --config "$CLUSTER_CONF" --group ch --reason "back to the old system" --wait 0s --output json)
expect_eq "rollback --group ch: exit 0" 0 $?
SHADOW=$("$PAL" shadow --config "$CLUSTER_CONF" --group sh --reason "back to the old system" --output json)
expect_eq "shadow --group sh: exit 0" 0 $?
echo "    rollback: $(jq -c '{at, handed_back, later, rows: [.unfinished[] | "\(.job_id) \(.scheduled_at) \(.state)"]}' <<<"$BACK")"
echo "    shadow: $(jq -c '{since, moved, rows: [.in_flight[] | "\(.job_id) \(.scheduled_at) \(.state)"]}' <<<"$SHADOW")"
AT=$(jq -r .at <<<"$BACK") SINCE=$(jq -r .since <<<"$SHADOW")
check "$T is up to the roll-back's at ($AT)" test "$(date -d "$T" +%s)" -le "$(date -d "$AT" +%s)"
check "$T is before the shadow's since ($SINCE)" test "$(date -d "$T" +%s)" -lt "$(date -d "$SINCE" +%s)"
resume_node c1
for j in ch.down sh.down; do
	wait_until "$j at $T called by palisade" 15 \
		has "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$j' and t.scheduled_at = '$T'"
	expect_eq "$j at $T: succeeded, one effect" "succeeded 1" \
		"$(sql "select t.state || ' ' || (select count(*) from sink_effects e where e.trigger_id = t.id) from trigger_jobs t where t.job_id = '$j' and t.scheduled_at = '$T'")"
done
expect_eq "... not listed by the roll-back (palisade runs it)" 0 \
	"$(jq --arg t "$T" '[.unfinished[] | select(.job_id == "ch.down" and .scheduled_at == $t)] | length' <<<"$BACK")"
wait_until "an instant of each upstream after the commands planned" 15 \
	has "select count(distinct job_id) - 1 from trigger_jobs where job_id in ('ch.up', 'sh.up') and scheduled_at > greatest('$AT'::timestamptz, '$SINCE')"
sleep 2
expect_eq "no trigger of either group after the commands is live" 0 \
	"$(sql "select count(*) from trigger_jobs where resource_group in ('ch', 'sh') and state <> 'shadow'
	         and scheduled_at > greatest('$AT'::timestamptz, '$SINCE')")"
expect_eq "... nor called" 0 \
	"$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id
	         where t.resource_group in ('ch', 'sh') and t.scheduled_at > greatest('$AT'::timestamptz, '$SINCE')")"

FROM=$(date -u -d @$T_START +%FT%TZ) TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
expect_exit "verify over the run" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
