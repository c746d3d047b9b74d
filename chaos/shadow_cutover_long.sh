#!/usr/bin/env bash
# chaos/shadow_cutover_long.sh - drill shadow-cutover-long (chaos/run.sh):
# the migration path of docs/migrating.md at the pace an operator takes it,
# where test_shadow_cutover (make test) keeps each stage to a few seconds.
# A group of 8 jobs every 2 s, two in each bucket range of the steps (0-9,
# 10-24, 25-49, 50-99), in shadow for SHADOW_S seconds (default 75): planned
# and never called; shadow diff of the whole shadow window against the
# record of what "the old system" fired (the shadow plan itself) is equal.
# Then the staged cut-over, 10 -> 25 -> 50 -> 100 %, STEP_S seconds apart
# (default 12), each widening checked against its stop lines (with the
# sink's ledger) and accepted; then a roll-back with due triggers waiting
# (the group paused): exactly those handed back, with their keys, and no
# call after it.
#
# Checked: no effect of any job before its own step's instant and none in
# shadow; one effect per key; verify clean over the whole run; shadow diff
# equal (exit 0); every widening accepted (exit 0); the roll-back's list is
# the triggers it handed back, and nothing calls after it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source chaos/lib.sh
guarantee "shadow and cut-over, long: a minute and more in shadow without a call, the staged cut-over 10/25/50/100 % with effects only from each job's step on and never twice, a roll-back that hands back exactly the unfinished triggers"
declare -A FIG
SHADOW_S=${SHADOW_S:-75}
STEP_S=${STEP_S:-12}
T_START=$(date +%s)
iso() { date -u -d "@$1" +%FT%TZ; }

fresh_db it_shadow_long
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=4
write_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
# two jobs of each step's bucket range, by the database's hash
pick() { sql "select string_agg(n, ' ') from (select 'long.' || g AS n from generate_series(1, 400) g
	where palisade_job_bucket('long.' || g) >= $1 and palisade_job_bucket('long.' || g) < $2 order by g limit 2) x"; }
STEPS=(10 25 50 100)
JOBS=() LOW=0
for p in "${STEPS[@]}"; do JOBS+=($(pick $LOW "$p")); LOW=$p; done
expect_eq "two jobs in each step's bucket range" 8 "${#JOBS[@]}"
{ echo "jobs:"; for j in "${JOBS[@]}"; do printf '  - id: %s\n    group: long\n    schedule: {cron: "*/2 * * * * ?"}\n    target: {url: "http://%s/effects/%s", timeout: 2s}\n' "$j" "$SINK_ADDR" "$j"; done; } >"$NODE_DIR/jobs.yaml"
expect_exit "the group in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --group long --reason "long drill"
expect_exit "apply its jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node l1
start_node l2
wait_until "shards led" 30 all_shards_led
effects() { sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id like 'long.%' ${1:+and $1}"; }

# in shadow for SHADOW_S seconds
S0=$(( $(date +%s) + 1 ))
sleep "$SHADOW_S"
S1=$(( $(date +%s) - 1 ))
FIG[shadow_s]=$((S1 - S0))
FIG[shadow_instants]=$(sql "select count(*) from trigger_jobs where job_id like 'long.%' and scheduled_at between to_timestamp($S0) and to_timestamp($S1)")
expect_eq "in shadow ${FIG[shadow_s]} s: no call of the group" 0 "$(effects)"
expect_eq "... its instants planned, all shadow" "shadow" "$(sql "select string_agg(distinct state, ',') from trigger_jobs where job_id like 'long.%'")"
check "... every instant of the window (${FIG[shadow_instants]}, 8 jobs every 2 s)" \
	test "${FIG[shadow_instants]}" -ge $(( 8 * (FIG[shadow_s] / 2) ))
expect_exit "verify of the shadow window: clean" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$(iso $S0)" --to "$(iso $S1)"
sql "select job_id || ',' || to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs
	where job_id like 'long.%' and scheduled_at >= to_timestamp($S0) and scheduled_at < to_timestamp($S1)" >"$NODE_DIR/record.csv"
expect_exit "shadow diff of the window against the old system's record: equal" 0 \
	"$PAL" shadow diff --config "$CLUSTER_CONF" --group long --from "$(iso $S0)" --to "$(iso $S1)" --against "$NODE_DIR/record.csv"

# the staged cut-over, each step STEP_S seconds after the one before
declare -A AT
for p in "${STEPS[@]}"; do
	AT[$p]=$(( ($(date +%s) + 3) / 2 * 2 ))
	expect_exit "cut-over to $p % from $(iso "${AT[$p]}") (stop lines checked with the sink's ledger)" 0 \
		"$PAL" cutover --config "$CLUSTER_CONF" --group long --percent "$p" --at "$(iso "${AT[$p]}")" \
		--max-pending-age 10s --sink-pg "$PALISADE_PG" --reason "step $p"
	sleep "$STEP_S"
done
sleep 3
LOW=0 early=0 late=0
for p in "${STEPS[@]}"; do
	for j in $(sql "select string_agg(job_id, ' ') from jobs where job_id like 'long.%' and palisade_job_bucket(job_id) >= $LOW and palisade_job_bucket(job_id) < $p"); do
		early=$(( early + $(effects "t.job_id = '$j' and t.scheduled_at < to_timestamp(${AT[$p]})") ))
		[ "$(effects "t.job_id = '$j' and t.scheduled_at >= to_timestamp(${AT[$p]})")" -ge 2 ] || late=$((late + 1))
	done
	LOW=$p
done
FIG[effects_before_step]=$early
expect_eq "no job called before its own step's instant" 0 "$early"
expect_eq "every job calls from its step on" 0 "$late"
FIG[effects]=$(effects)
expect_eq "one effect per trigger, none doubled" "${FIG[effects]}" "$(sql "select count(distinct e.trigger_id) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id like 'long.%'")"

# roll-back with due triggers waiting
expect_exit "pause the group" 0 "$PAL" pause --config "$CLUSTER_CONF" --group long --reason "trouble"
waiting() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'long.%' and state = 'pending' and due_at < now()")" -ge 8 ]; }
wait_until "due triggers wait" 30 waiting
out=$("$PAL" rollback --config "$CLUSTER_CONF" --group long --wait 5s --reason "back to the old system" --output json); ec=$?
expect_eq "rollback: exit 0" 0 $ec
RB=$(date -u -d "$(jq -r .at <<<"$out")" +%s)
FIG[handed_back]=$(jq -r .handed_back <<<"$out")
want=$(sql "select string_agg(id::text, ',' order by scheduled_at, job_id, partition) from trigger_jobs where job_id like 'long.%' and last_error_class = 'rolled_back' and scheduled_at <= to_timestamp($RB)")
expect_eq "... lists exactly the due triggers it handed back (${FIG[handed_back]})" "$want" "$(jq -r '[.unfinished[].id] | join(",")' <<<"$out")"
expect_eq "... each with the key its calls send" "" \
	"$(jq -r '.unfinished[] | select(.idempotency_key != "\(.job_id)/\(.scheduled_at)/\(.partition)") | .id' <<<"$out")"
expect_exit "resume the group" 0 "$PAL" resume --config "$CLUSTER_CONF" --group long --reason "gate off"
sleep 6
FIG[effects_after_rollback]=$(effects "e.applied_at > to_timestamp($RB)")
expect_eq "no call of the group after the roll-back" 0 "${FIG[effects_after_rollback]}"
check "... its later instants planned shadow" test "$(sql "select count(*) from trigger_jobs where job_id like 'long.%' and scheduled_at > to_timestamp($RB) and state = 'shadow'")" -ge 8
expect_exit "verify over the whole run: clean" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$(iso $S0)" --to "$(iso $((RB - 1)))"
FIG[took_s]=$(( $(date +%s) - T_START ))
echo "    figure: ${FIG[shadow_s]} s in shadow (${FIG[shadow_instants]} instants, 0 calls), steps 10/25/50/100 % ${STEP_S} s apart, ${FIG[effects]} effects (${FIG[effects_before_step]} before a job's step), ${FIG[handed_back]} handed back, ${FIG[effects_after_rollback]} calls after the roll-back; took ${FIG[took_s]} s"
write_report shadow-cutover-long "step_s=$STEP_S"
finish
