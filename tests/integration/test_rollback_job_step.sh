#!/usr/bin/env bash
# A roll-back of one job overrides its group's cut-over step taken before
# it and planned for later (docs/migrating.md, "Roll-back"): group g in
# shadow, `cutover --group g --at F` (F 8 s ahead), then `rollback --job
# fs.a` before F.  fs.a stays shadow after F and palisade never calls it,
# while fs.b (not rolled back) goes live at F.  A step taken after the
# roll-back counts: `cutover --job fs.a` at G makes fs.a live from G on.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a roll-back of a job keeps it in shadow past a step of its group taken before it: the old system, told it runs the job's instants after the roll-back, is the only one that does"
T_START=$(date +%s)

it_db
sink_up
SHARDS=1
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 4s, heartbeat: 500ms}"
cat >"$NODE_DIR/jobs.yaml" <<Y
jobs:
  - {id: fs.a, group: g, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/fs.a", timeout: 2s}}
  - {id: fs.b, group: g, schedule: {cron: "* * * * * ?"}, target: {url: "http://$SINK_ADDR/effects/fs.b", timeout: 2s}}
Y
expect_exit "group g in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --group g --reason "moving"
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" >/dev/null
lead_shards 20 n1 || { finish; exit 1; }
effects_sql() { # JOB FROM [TO]: the query of the effects of JOB's instants in [FROM, TO)
	echo "select count(*) from sink_effects e join trigger_jobs t on t.id = e.trigger_id
	      where t.job_id = '$1' and t.scheduled_at >= to_timestamp($2) and t.scheduled_at < to_timestamp(${3:-2000000000})"
}
effects() { sql "$(effects_sql "$@")"; }
live() { sql "select palisade_trigger_live(job_id, tenant, resource_group, to_timestamp($2)) from jobs where job_id = '$1'"; }

F=$(($(date +%s) + 8))
expect_exit "group g cut over to 100 % from F (8 s ahead)" 0 "$PAL" cutover --config "$CLUSTER_CONF" --group g --at "$(date -u -d @$F +%FT%TZ)" --reason "all at F"
OUT=$("$PAL" rollback --config "$CLUSTER_CONF" --job fs.a --wait 0s --reason "fs.a stays in the old system" --output json); ec=$?
echo "    rollback: $(jq -c '{at, handed_back, later, unfinished: (.unfinished | length)}' <<<"$OUT")"
expect_eq "roll-back of fs.a before F: exit 0" 0 $ec
expect_eq "fs.a is shadow after F" "f" "$(live fs.a $((F + 2)))"
expect_eq "fs.b is live after F" "t" "$(live fs.b $((F + 2)))"
wait_until "fs.b called for 3 instants from F on" 20 has "select ($(effects_sql fs.b $F)) - 2"
expect_eq "fs.a: no call from F on" 0 "$(effects fs.a $F)"
expect_eq "fs.a: every trigger from F on shadow" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'fs.a' and scheduled_at >= to_timestamp($F) and state <> 'shadow'")"

# a step taken after the roll-back counts
G=$(($(date +%s) + 2))
expect_exit "fs.a cut over again, from G" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job fs.a --at "$(date -u -d @$G +%FT%TZ)" --reason "fs.a too now" --output json
expect_eq "... names fs.a as made live" '["fs.a"]' "$(jq -c .made_live <<<"$OUT")"
wait_until "fs.a called for 2 instants from G on" 15 has "select ($(effects_sql fs.a $G)) - 1"
expect_eq "fs.a: no call before G" 0 "$(effects fs.a $F $G)"

FROM=$(date -u -d @$T_START +%FT%TZ) TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
expect_exit "verify over the run" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
