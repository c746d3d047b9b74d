#!/usr/bin/env bash
# A dependent job's instants are decided by the version of it that owns
# them.  Three dependent jobs of one upstream (vs.a, even seconds, whose
# call takes 5 s, so its latest instants are still running) change while
# some of vs.a's instants are not decided yet for them:
#   vs.b  re-applied with another upstream (vs.c, odd seconds);
#   vs.s  re-applied with a plain `schedule:` (one that never fires);
#   vs.d  deleted.
# Each vs.a instant up to a job's switch (its new version's
# effective_from; for vs.d the deletion) is its old version's: once vs.a
# succeeded there, it gets exactly one trigger of the old version (for
# vs.d, deleted since, a cancelled one), never a decision from vs.c's
# triggers or ranges; vs.c's instants after the switch are vs.b's new
# version's.  verify applies the same rule: it names an old version's
# instant that has no trigger.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 across a re-apply: every upstream instant owned by a dependent job's old version (re-applied with another upstream, with a schedule, or deleted) is decided by that version once the upstream ends, none by the new version's upstream; verify agrees"

fresh_db it_after_version_switch
"$PAL" migrate >/dev/null
start_badserver "target up"
SHARDS=2 LOOKAHEAD=1s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
url() { echo "{url: \"http://127.0.0.1:$port/$1\", timeout: 10s}"; }
jobs_v1() {
	cat <<YAML
jobs:
  - {id: vs.a, schedule: {cron: "*/2 * * * * ?"}, target: $(url "log/a?delay_ms=5000")}
  - {id: vs.c, schedule: {cron: "1/2 * * * * ?"}, target: $(url log/c)}
  - {id: vs.b, after: [{job: vs.a, within: 1h}], target: $(url log/b)}
  - {id: vs.s, after: [{job: vs.a, within: 1h}], target: $(url log/s)}
  - {id: vs.d, after: [{job: vs.a, within: 1h}], target: $(url log/d)}
YAML
}
jobs_v1 >"$NODE_DIR/v1.yaml"
jobs_v1 | sed -e 's/{id: vs.b, after: \[{job: vs.a, within: 1h}\]/{id: vs.b, after: [{job: vs.c, within: 1h}]/' \
	-e 's/{id: vs.s, after: \[{job: vs.a, within: 1h}\]/{id: vs.s, schedule: {cron: "0 0 0 1 1 ? 2099"}/' \
	-e '/id: vs.d,/d' >"$NODE_DIR/v2.yaml"
expect_exit "apply (vs.b, vs.s, vs.d after vs.a)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v1.yaml" ||
	{ finish; exit 1; }
FROM=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_node h1
wait_until "shards led" 20 all_shards_led &&
	wait_until "vs.b, vs.s and vs.d run after vs.a" 30 \
		has "select count(*) - 2 from (select job_id from trigger_jobs where job_id in ('vs.b', 'vs.s', 'vs.d') and state = 'succeeded' group by job_id having count(*) >= 2) x" ||
	{ finish; exit 1; }
wait_until "vs.a has an instant running" 10 \
	has "select count(*) from trigger_jobs where job_id = 'vs.a' and state = 'running'"
# The switch: vs.a's latest instants are running (5 s each), so not decided
# for the dependent jobs yet.
SWITCH=$(sql "select extract(epoch from clock_timestamp())")
expect_exit "re-apply: vs.b after vs.c, vs.s with a schedule" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/v2.yaml"
expect_exit "delete vs.d" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "version switch test" vs.d
activated() { has "select count(*) from job_versions where job_id = '$1' and version = $2 and effective_from is not null"; }
wait_until "vs.b v2, vs.s v2 and vs.d's retirement activated" 15 \
	eval 'activated vs.b 2 && activated vs.s 2 && activated vs.d 2' || { finish; exit 1; }
eff() { sql "select extract(epoch from effective_from) from job_versions where job_id = '$1' and version = $2"; }
B1=$(eff vs.b 1); EB=$(eff vs.b 2); S1=$(eff vs.s 1); ES=$(eff vs.s 2); D1=$(eff vs.d 1)
ED=$(sql "select extract(epoch from (spec -> 'schedule' ->> 'end')::timestamptz) from job_versions where job_id = 'vs.d' and version = 2")
UNDECIDED=$(sql "select count(*) from triggers t where t.job_id = 'vs.a' and t.scheduled_at <= to_timestamp($EB)
                   and not exists (select 1 from triggers b where b.job_id = 'vs.b' and b.scheduled_at = t.scheduled_at
                                     and b.created_at <= to_timestamp($SWITCH))")
echo "    figure: vs.b switched at $EB, vs.s at $ES, vs.d deleted at $ED; $UNDECIDED vs.a instants up to vs.b's switch had no vs.b trigger when the apply began"
check "some of vs.a's instants before the switch were undecided at the apply" [ "$UNDECIDED" -ge 1 ]
# vs.a's instants up to the last switch end (5 s calls)
TOP=$(awk -v a="$EB" -v b="$ES" -v c="$ED" 'BEGIN { m = a; if (b > m) m = b; if (c > m) m = c; print m }')
wait_until "vs.a's instants up to the switches ended" 20 \
	has "select (count(*) = 0)::int from triggers where job_id = 'vs.a' and scheduled_at <= to_timestamp($TOP) and state not in ('succeeded', 'failed', 'cancelled', 'skipped')"

# upstream instants owned by the old version ($1 job, $2 from, $3 to,
# $4 "<" or "<=") that vs.a finished and the job has no decision for
lost() {
	sql "select count(*) from triggers a where a.job_id = 'vs.a' and a.request_id is null
	       and a.state = 'succeeded' and a.scheduled_at > to_timestamp($2) and a.scheduled_at $4 to_timestamp($3)
	       and not exists (select 1 from triggers b where b.job_id = '$1' and b.request_id is null
	                         and b.scheduled_at = a.scheduled_at)
	       and not exists (select 1 from misfires m where m.job_id = '$1'
	                         and a.scheduled_at between m.range_from and m.range_to)"
}
none_lost() { [ "$(lost "$@")" = 0 ]; }
wait_until "vs.b: every vs.a instant up to its switch decided" 15 none_lost vs.b "$B1" "$EB" "<="
expect_eq "vs.b: vs.a instants up to the switch with no trigger and no misfire" 0 "$(lost vs.b "$B1" "$EB" "<=")"
expect_eq "vs.b: its triggers up to the switch are v1's, at vs.a's instants" 0 \
	"$(sql "select count(*) from triggers where job_id = 'vs.b' and scheduled_at <= to_timestamp($EB) and (version <> 1 or extract(second from scheduled_at)::int % 2 = 1)")"
expect_eq "vs.b: no misfire row (vs.a succeeded throughout; none from vs.c's ranges)" 0 \
	"$(sql "select count(*) from misfires where job_id = 'vs.b'")"
wait_until "vs.b v2 runs after vs.c" 15 \
	has "select count(*) - 1 from trigger_jobs where job_id = 'vs.b' and version = 2 and state = 'succeeded'"
expect_eq "vs.b: its triggers after the switch are v2's, at vs.c's instants" 0 \
	"$(sql "select count(*) from triggers where job_id = 'vs.b' and scheduled_at > to_timestamp($EB) and (version <> 2 or extract(second from scheduled_at)::int % 2 = 0)")"
wait_until "vs.s: every vs.a instant up to its switch decided" 15 none_lost vs.s "$S1" "$ES" "<="
expect_eq "vs.s: vs.a instants up to the switch to a schedule with no trigger and no misfire" 0 \
	"$(lost vs.s "$S1" "$ES" "<=")"
expect_eq "vs.s: no trigger after its switch (its schedule never fires)" 0 \
	"$(sql "select count(*) from triggers where job_id = 'vs.s' and scheduled_at > to_timestamp($ES)")"
wait_until "vs.d: every vs.a instant before its deletion decided" 15 none_lost vs.d "$D1" "$ED" "<"
expect_eq "vs.d: vs.a instants before the deletion with no trigger and no misfire" 0 "$(lost vs.d "$D1" "$ED" "<")"
LATE_D=$(sql "select count(*) from triggers t, jobs j where t.job_id = 'vs.d' and j.job_id = 'vs.d' and t.created_at > j.retired_at")
echo "    figure: $LATE_D vs.d instants before its deletion were decided after it"
check "vs.d has instants decided after its deletion" [ "$LATE_D" -ge 1 ]
expect_eq "vs.d: decided after the deletion means cancelled, never called" 0 \
	"$(sql "select count(*) from triggers t, jobs j where t.job_id = 'vs.d' and j.job_id = 'vs.d' and t.created_at > j.retired_at and t.state <> 'cancelled'")"
expect_eq "vs.d: nothing at or after the deletion" 0 \
	"$(sql "select count(*) from triggers where job_id = 'vs.d' and scheduled_at >= to_timestamp($ED)")"
wait_until "vs.s and vs.d: the watermark reached the end of their time with after (no longer looked at)" 10 \
	has "select count(*) - 1 from after_watermarks where (job_id = 'vs.s' and watermark >= to_timestamp($ES)) or (job_id = 'vs.d' and watermark >= to_timestamp($ED))"

TO=$(date -u -d "@$(( ${TOP%.*} + 1 ))" +%Y-%m-%dT%H:%M:%SZ)
expect_exit "verify over the switches" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
# verify judges vs.b's instants up to the switch by v1 (vs.a), as the
# planner does: one of them without its trigger is missing
read -r ID AT < <(sql "select id, extract(epoch from scheduled_at)::bigint from triggers where job_id = 'vs.b' and version = 1 and scheduled_at > to_timestamp($EB) - interval '6 seconds' order by scheduled_at desc limit 1" | tr '|' ' ')
if [ -z "${ID:-}" ]; then
	fail "vs.b has a v1 trigger just before the switch (to take away for verify)"
else
	sql "update triggers set job_id = 'vs.elsewhere' where id = $ID" >/dev/null
	OUT=$("$PAL" verify --config "$CLUSTER_CONF" --job vs.b --from "$FROM" --to "$TO" 2>&1); RC=$?
	echo "$OUT" | head -4 | sed 's/^/    | /'
	check "verify fails once vs.b's v1 trigger at $(date -u -d "@$AT" +%H:%M:%S) is gone (exit $RC)" [ "$RC" -ne 0 ]
	expect_eq "verify counts that one instant missing" "missing=1" "$(echo "$OUT" | grep -o 'missing=[0-9]*' | head -1)"
	expect_match "verify names that vs.a instant" "$(date -u -d "@$AT" +%Y-%m-%dT%H:%M:%S)" "$OUT"
	sql "update triggers set job_id = 'vs.b' where id = $ID" >/dev/null
fi
echo "    figure: test took $SECONDS s"
finish
