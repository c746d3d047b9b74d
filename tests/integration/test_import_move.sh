#!/usr/bin/env bash
# The move of docs/migrating.md, from a crontab: `import crontab --group`
# writes every job in the group and in shadow (`mode: shadow`, the
# default), so after `apply` palisade plans the entry's instants and calls
# none while the cron line still runs them; `cutover --group --at T` makes
# the instants from T on palisade's, at which the cron line is removed.
# Every instant is run by exactly one of the two: those before T are shadow
# (cron's) and never called, those from T on are called once each.
# A re-apply of the same file after the cut-over does not put the job back
# in shadow.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "an imported crontab moves at one instant: before the cut-over's T only cron runs it, from T only palisade, each instant once"
it_db
sink_up
SHARDS=2
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 1s}"
printf '%s\n' '* * * * * /usr/local/bin/sync-orders' >"$NODE_DIR/crontab"
"$PAL" import crontab --prefix hosta --group hosta --timezone UTC \
	--target-url "http://$SINK_ADDR/effects/{job}" "$NODE_DIR/crontab" >"$NODE_DIR/jobs.yaml" 2>"$NODE_DIR/report"
expect_eq "import: exact" 0 $?
J=$(awk -F'"' '/- id:/ {print $2}' "$NODE_DIR/jobs.yaml")
check "the job is in the group given" grep -qx '    group: "hosta"' "$NODE_DIR/jobs.yaml"
check "... and in shadow" grep -qx '    mode: shadow' "$NODE_DIR/jobs.yaml"
check "the report says how to move it" grep -q 'cutover --group hosta --at T' "$NODE_DIR/report"
expect_exit "validate" 0 "$PAL" validate "$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" --reason "moving from cron on host-a" "$NODE_DIR/jobs.yaml"
check "... puts the job in shadow" grep -qE "^shadow +$J " <<<"$OUT"
lead_shards 20 s1
due() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at <= now() - interval '3 seconds'")" -ge 1 ]; }
wait_wall "an instant came due while the cron line still runs it" 70 due
expect_eq "its instants are shadow" "shadow" "$(sql "select string_agg(distinct state, ',') from trigger_jobs where job_id = '$J'")"
effects() { sql "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$J' ${1:+and $1}"; }
expect_eq "palisade made no call" 0 "$(effects)"

# the cut-over at the next minute (at least 5 s ahead)
T=$(( ($(date +%s) + 5 + 59) / 60 * 60 ))
TS=$(date -u -d @$T +%FT%TZ)
out=$("$PAL" cutover --config "$CLUSTER_CONF" --group hosta --at "$TS" --reason "cron on host-a hands over"); ec=$?
expect_eq "cutover --group hosta --at $TS" 0 $ec
check "... names the job it makes live (the cron line to remove at T)" grep -q "$J" <<<"$out"
ran_t() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at = to_timestamp($T) and state = 'succeeded'")" = 1 ]; }
wait_wall "the instant at T called" 80 ran_t
expect_exit "a re-apply of the same file after the cut-over" 0 "$PAL" apply --config "$CLUSTER_CONF" --reason "again" "$NODE_DIR/jobs.yaml"
check "... does not put the job back in shadow" bash -c "! grep -qE '^shadow ' <<<\"\$1\"" _ "$OUT"
sql "select scheduled_at, state from trigger_jobs where job_id = '$J' order by scheduled_at" | sed 's/^/      /'
expect_eq "every instant before T shadow (cron ran it), none of them called" "0|0" \
	"$(sql "select count(*) filter (where state <> 'shadow'), (select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$J' and t.scheduled_at < to_timestamp($T)) from trigger_jobs where job_id = '$J' and scheduled_at < to_timestamp($T)")"
check "... and there was at least one" test "$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at < to_timestamp($T)")" -ge 1
expect_eq "every due instant from T on called by palisade, once" "0|$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at >= to_timestamp($T) and state = 'succeeded'")" \
	"$(sql "select count(*) filter (where state = 'shadow'), (select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$J' and t.scheduled_at >= to_timestamp($T)) from trigger_jobs where job_id = '$J' and scheduled_at >= to_timestamp($T)")"
expect_eq "one effect per instant" "0" "$(sql "select count(*) from (select e.scheduled_at from sink_effects e join trigger_jobs t on t.id = e.trigger_id where t.job_id = '$J' group by 1 having count(*) > 1) d")"
stop_all_nodes
finish
