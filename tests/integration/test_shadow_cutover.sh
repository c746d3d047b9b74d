#!/usr/bin/env bash
# Shadow, cut-over, roll-back (docs/migrating.md).  A group in shadow is
# planned (triggers in the state shadow) and never called; shadow diff
# against a record of the shadow triggers with one instant removed and one
# added finds exactly those two; a cut-over at 10 % then at 100 % gives
# effects only from each step's instant on, none doubled, verify clean; a
# widening while a stop line of the previous step is crossed (a pending
# trigger older than the bound, under a pause) is refused and names the
# line; a roll-back hands back exactly the due triggers waiting, each with
# its idempotency key, and later instants are shadow again; a step before
# the latest one is refused, a roll-back overrides a step planned for later,
# a step names the jobs it makes live and a dry run changes nothing,
# and leaves alone a job another scope keeps live; a cut-over makes no
# instant of a retired job live.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "shadow and cut-over - a shadow scope makes no call, a cut-over step makes effects only from its instant on and never twice, a crossed stop line refuses the next step, a roll-back hands back exactly the unfinished triggers"
T_START=$(date +%s)

fresh_db it_shadowcut
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2
write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
# one job in the first 10 % (bucket < 10), two beyond, by the database's hash
pick() { sql "select string_agg(n, ' ') from (select 'mig.' || g AS n from generate_series(1, 400) g where palisade_job_bucket('mig.' || g) $1 order by g limit $2) x"; }
J10=$(pick "< 10" 1); read -r JA JB <<<"$(pick ">= 10" 2)"
expect_eq "the buckets: one job under 10, two over" "1 2" "$(wc -w <<<"$J10") $(wc -w <<<"$JA $JB")"
job() { # ID GROUP CRON
	cat <<YAML
  - id: $1
    group: $2
    schedule: {cron: "$3"}
    target: {url: "http://$SINK_ADDR/effects/$1", timeout: 2s}
    retry: {max_attempts: 5, backoff: {initial: 200ms, max: 1s}, max_age: 5m}
YAML
}
{ echo "jobs:"; for j in $J10 $JA $JB; do job "$j" mig "*/2 * * * * ?"; done; job live.one other "* * * * * ?"
  job spec.one other "* * * * * ?"; echo "    mode: shadow"; } >"$NODE_DIR/jobs.yaml"
expect_exit "the group in shadow before its jobs exist" 0 "$PAL" shadow --config "$CLUSTER_CONF" --group mig --reason "moving from quartz"
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"); ec=$?
expect_eq "apply" 0 $ec
check "... reports the job its file puts in shadow" grep -qE "^shadow +spec.one \(mode: shadow" <<<"$out"
start_node s1
wait_until "shards led" 20 all_shards_led
live_ran() { [ "$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'live.one'")" -ge 4 ]; }
wait_until "the live job outside the group runs" 30 live_ran
effects() { sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id like 'mig.%' ${1:+and $1}"; }
expect_eq "the shadow group made no call" 0 "$(effects)"
expect_eq "nor the job whose file says mode: shadow, planned in shadow" "0|shadow" \
	"$(sql "select count(e.*), string_agg(distinct t.state, ',') from trigger_jobs t left join sink_effects e on e.trigger_id = t.id where t.job_id = 'spec.one'")"
expect_eq "... its instants are planned, all in shadow" "shadow" "$(sql "select string_agg(distinct state, ',') from trigger_jobs where job_id like 'mig.%'")"
check "... and there are some" test "$(sql "select count(*) from trigger_jobs where job_id like 'mig.%' and scheduled_at <= now()")" -ge 3
expect_exit "verify of a shadow job: clean (its instants are planned)" 0 "$PAL" verify --config "$CLUSTER_CONF" --job "$J10" --from "$(date -u -d @$((T_START)) +%FT%TZ)" --to "$(date -u -d @$(( $(date +%s) - 1 )) +%FT%TZ)"

# shadow diff: the shadow triggers as the old system's record, one removed, one added
three_past() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J10' and scheduled_at < now() - interval '1 second'")" -ge 3 ]; }
wait_until "three past instants of $J10 planned" 30 three_past
A=$(sql "select to_char(min(scheduled_at) at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = '$J10'")
B=$(date -u -d @$(( $(date +%s) - 1 )) +%FT%TZ)
sql "select job_id || ',' || to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = '$J10' and scheduled_at >= '$A' and scheduled_at < '$B' order by scheduled_at" >"$NODE_DIR/rec.csv"
DROP=$(sed -n 2p "$NODE_DIR/rec.csv" | cut -d, -f2)
ODD=$(date -u -d "@$(( $(date -u -d "$DROP" +%s) + 1 ))" +%FT%TZ)
{ grep -v ",$DROP\$" "$NODE_DIR/rec.csv"; echo "$J10,$ODD"; } >"$NODE_DIR/rec2.csv"
out=$("$PAL" shadow diff --config "$CLUSTER_CONF" --from "$A" --to "$B" --job "$J10" --against "$NODE_DIR/rec2.csv" --output json); ec=$?
expect_eq "shadow diff: exit 2" 2 $ec
expect_eq "... exactly the instant removed and the one added" "palisade $DROP not_fired|old $ODD schedule" \
	"$(jq -r '[.differences[] | "\(.only) \(.at) \(.reason)"] | join("|")' <<<"$out")"

# 10 %: the first job live from T1 on
T1=$(( ($(date +%s) + 4) / 2 * 2 ))
steps() { sql "select count(*) from cutover_steps where scope = 'group:mig'"; }
out=$("$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 10 --at "$(date -u -d @$T1 +%FT%TZ)" --reason "try" --dry-run --output json); ec=$?
expect_eq "a dry run of the 10 % step: exit 0" 0 $ec
expect_eq "... names the one job it would make live, as a dry run" "$J10|true|1" "$(jq -r '"\(.made_live | join(" "))|\(.dry_run)|\(.live_jobs)"' <<<"$out")"
expect_eq "... and changes nothing: no step, no audit row, every trigger still shadow" "0|0|shadow" \
	"$(steps)|$(sql "select count(*) from audit_log where action = 'cutover'")|$(sql "select string_agg(distinct state, ',') from trigger_jobs where job_id like 'mig.%'")"
out=$("$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 10 --at "$(date -u -d @$T1 +%FT%TZ)" --reason "first step"); ec=$?
expect_eq "cut-over of 10 % from T1" 0 $ec
expect_eq "... lists the job it makes live, alone" "  $J10" "$(grep '^  ' <<<"$out")"
past_t1() { [ "$(effects "t.job_id = '$J10'")" -ge 3 ]; }
wait_until "the 10 % job calls from T1 on" 30 past_t1
expect_eq "... no effect of it before T1" 0 "$(effects "t.job_id = '$J10' and t.scheduled_at < to_timestamp($T1)")"
expect_eq "... none of the other two" 0 "$(effects "t.job_id in ('$JA', '$JB')")"
expect_eq "... its instants before T1 stay shadow" "shadow" "$(sql "select string_agg(distinct state, ',') from trigger_jobs where job_id = '$J10' and scheduled_at < to_timestamp($T1)")"

# a stop line: the group paused, the 10 % job's triggers wait past the bound
expect_exit "pause the group" 0 "$PAL" pause --config "$CLUSTER_CONF" --group mig --reason "stop line drill"
old_pending() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J10' and state = 'pending' and due_at < now() - interval '2 seconds'")" -ge 1 ]; }
wait_until "a pending trigger of the live part is older than 2 s" 30 old_pending
err=$("$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 100 --at "$(date -u -d @$(( $(date +%s) + 3 )) +%FT%TZ)" --max-pending-age 1s --reason "too early" 2>&1); ec=$?
expect_eq "widening with a crossed stop line: refused (4)" 4 $ec
check "... naming the line" grep -q "stop line crossed since the 10 % step: oldest_pending_s" <<<"$err"
expect_eq "... no step written" 1 "$(sql "select count(*) from cutover_steps where scope = 'group:mig'")"
expect_exit "resume the group" 0 "$PAL" resume --config "$CLUSTER_CONF" --group mig --reason "drill over"
drained() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J10' and state = 'pending' and due_at < now() - interval '1 second'")" = 0 ]; }
wait_until "the held triggers ran" 30 drained

# 100 % from T2
T2=$(( ($(date +%s) + 4) / 2 * 2 ))
out=$("$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 100 --at "$(date -u -d @$T2 +%FT%TZ)" --max-pending-age 5s --reason "all in" --output json); ec=$?
expect_eq "cut-over of 100 % from T2" 0 $ec
expect_eq "... makes live the two other jobs, not the one live already" "$(printf '%s\n' "$JA" "$JB" | sort | paste -sd' ')|false" \
	"$(jq -r '"\(.made_live | join(" "))|\(.dry_run)"' <<<"$out")"
expect_exit "a narrowing step is refused (64)" 64 "$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 50 --at "$(date -u -d @$(( T2 + 10 )) +%FT%TZ)" --reason "no"
past_t2() { [ "$(effects "t.job_id in ('$JA', '$JB')")" -ge 4 ]; }
wait_until "the other jobs call from T2 on" 30 past_t2
expect_eq "... none of theirs before T2" 0 "$(effects "t.job_id in ('$JA', '$JB') and t.scheduled_at < to_timestamp($T2)")"
expect_eq "no key applied twice, one effect per trigger" "$(effects)" "$(sql "select count(distinct e.trigger_id) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id like 'mig.%'")"
T3=$(( $(date +%s) - 2 ))
expect_exit "verify of the group's jobs over the whole run: clean" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$(date -u -d @$T_START +%FT%TZ)" --to "$(date -u -d @$T3 +%FT%TZ)"

# roll-back: the group paused so that due triggers wait, then handed back
expect_exit "pause the group again" 0 "$PAL" pause --config "$CLUSTER_CONF" --group mig --reason "trouble"
waiting() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'mig.%' and state = 'pending' and due_at < now()")" -ge 3 ]; }
wait_until "due triggers wait" 30 waiting
out=$("$PAL" rollback --config "$CLUSTER_CONF" --group mig --wait 5s --reason "back to quartz" --output json); ec=$?
expect_eq "rollback: exit 0" 0 $ec
want=$(sql "select string_agg(id::text, ',' order by scheduled_at, job_id, partition) from trigger_jobs where job_id like 'mig.%' and last_error_class = 'rolled_back' and scheduled_at <= '$(jq -r .at <<<"$out")'")
expect_eq "... lists exactly the due triggers it handed back" "$want" "$(jq -r '[.unfinished[].id] | join(",")' <<<"$out")"
expect_eq "... as many as it says" "$(jq -r .handed_back <<<"$out")" "$(jq -r '.unfinished | length' <<<"$out")"
check "... the three or more that were waiting" test "$(jq -r .handed_back <<<"$out")" -ge 3
expect_eq "... each with the key its calls send (job/instant/partition)" "" \
	"$(jq -r '.unfinished[] | select(.idempotency_key != "\(.job_id)/\(.scheduled_at)/\(.partition)") | .id' <<<"$out")"
expect_exit "resume the group" 0 "$PAL" resume --config "$CLUSTER_CONF" --group mig --reason "gate off"
RB=$(date -u -d "$(jq -r .at <<<"$out")" +%s)
sleep 3
expect_eq "after the roll-back no call of the group" 0 "$(effects "t.scheduled_at > to_timestamp($RB - 1) and e.applied_at > to_timestamp($RB)")"
check "... its later instants are planned shadow" test "$(sql "select count(*) from trigger_jobs where job_id like 'mig.%' and scheduled_at > to_timestamp($RB) and state = 'shadow'")" -ge 3
expect_eq "shadow list shows the scopes and the steps" "group:mig operator 0 3|job:spec.one spec 0 0" "$("$PAL" shadow list --config "$CLUSTER_CONF" --output json | jq -r '[.[] | "\(.scope) \(.source) \(.percent) \(.steps | length)"] | join("|")')"
sed -i '/mode: shadow/d' "$NODE_DIR/jobs.yaml"
expect_exit "the file without mode: shadow applied" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
sleep 2
expect_eq "... takes nothing out of shadow: still no call" "0|shadow" \
	"$(sql "select count(e.*), string_agg(distinct t.state, ',') from trigger_jobs t left join sink_effects e on e.trigger_id = t.id where t.job_id = 'spec.one'")"
expect_eq "audited" "cutover,cutover,rollback,shadow,shadow" "$(sql "select string_agg(action, ',' order by action) from audit_log where action in ('shadow', 'cutover', 'rollback')")"

# the order of steps: a step never before the latest one; a roll-back
# overrides a cut-over planned for later (the last step taken governs)
F=$(( $(date +%s) + 300 ))
expect_exit "a step of 50 % planned for later" 0 "$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 50 --at "$(date -u -d @$F +%FT%TZ)" --reason "later"
expect_exit "... a wider step before it is refused (64)" 64 "$PAL" cutover --config "$CLUSTER_CONF" --group mig --percent 100 --at "$(date -u -d @$(( F - 240 )) +%FT%TZ)" --reason "earlier"
expect_exit "roll back before the planned step" 0 "$PAL" rollback --config "$CLUSTER_CONF" --group mig --wait 0s --reason "not yet"
expect_eq "... overrides it: after its instant the group stays shadow" "f" \
	"$(sql "select palisade_trigger_live(job_id, tenant, resource_group, to_timestamp($F + 60)) from jobs where job_id = '$J10'")"

# a roll-back leaves alone a job that another scope keeps live
expect_exit "the other group in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --group other --reason "second move"
expect_exit "... live.one cut over on its own" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job live.one --at "$(date -u -d @$(( $(date +%s) + 1 )) +%FT%TZ)" --reason "first"
ahead() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'live.one' and state = 'pending' and scheduled_at > now()")" -ge 1 ]; }
wait_until "live.one has a live instant planned ahead" 20 ahead
out=$("$PAL" rollback --config "$CLUSTER_CONF" --group other --wait 0s --reason "back" --output json); ec=$?
expect_eq "roll-back of the other group: exit 0" 0 $ec
expect_eq "... hands back none of live.one's triggers" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'live.one' and last_error_class = 'rolled_back'")"
expect_eq "... nor lists any" "" "$(jq -r '.unfinished[] | select(.job_id == "live.one") | .id' <<<"$out")"
RB2=$(date +%s)
live_after() { [ "$(sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = 'live.one' and t.scheduled_at > to_timestamp($RB2)")" -ge 2 ]; }
wait_until "... and live.one keeps calling" 20 live_after

# the console counts the shadow triggers (estimated, as the finished ones)
sql "ANALYZE triggers" >/dev/null
view=$(curl -s "http://${NODE_ADMIN[s1]}/api/cluster")
check "the console shows the shadow triggers, marked as an estimate" \
	test "$(jq -r '"\((.triggers.shadow // 0) > 0) \(.triggers_estimated | index("shadow") != null)"' <<<"$view")" = "true true"

# a retired job's instants planned ahead in shadow stay shadow at a cut-over
expect_exit "retire spec.one (in shadow, instants planned ahead)" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason "gone" spec.one
check "... its shadow instants after now are still there" test "$(sql "select count(*) from trigger_jobs where job_id = 'spec.one' and state = 'shadow' and scheduled_at > now() + interval '1 second'")" -ge 1
expect_exit "cut-over of the retired job" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job spec.one --at "$(date -u -d @$(( $(date +%s) + 1 )) +%FT%TZ)" --reason "late"
expect_eq "... makes none of them live" 0 "$(sql "select count(*) from trigger_jobs where job_id = 'spec.one' and state not in ('shadow', 'cancelled')")"
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
