#!/usr/bin/env bash
# A controller of the previous release (0.2.0, built from its archive as
# the mixed-version drill does) leading the shards of jobs that use the
# schedule forms it does not know.  job_versions.cron holds "@palisade;..."
# for `every` and `spread`, which its cron parser refuses: it must
# quarantine those jobs, never plan them with a wrong rule; an `H` job is
# stored resolved, an ordinary cron to it, and must be planned at the
# instants this release computes.  Then this release's node takes over and,
# once released, plans the quarantined job on its grid.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G2 - a 0.2.0 controller quarantines a job whose schedule form it cannot read instead of planning it wrongly, and plans an H job as this release does"
T_START=$(date +%s)

OLD_TAG=${PALISADE_OLD_TAG:-v0.2.0}
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-${OLD_TAG#v}-build}
build_release "$OLD_TAG" "ops/releases/palisade-${OLD_TAG#v}.tar.xz" "$OLD_TREE" ||
	{ fail "release $OLD_TAG builds in $OLD_TREE"; finish; exit 1; }
OLD_PAL=$OLD_TREE/bin/palisade

fresh_db it_sched_old
"$PAL" migrate --before-roll >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
SHARDS=2
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
gen_sink_jobs "$NODE_DIR/every.yaml" 1 "unused" t1 so.every
sed -i "s|schedule: {cron: \"unused\"}|schedule: {every: 2s}|" "$NODE_DIR/every.yaml"
gen_sink_jobs "$NODE_DIR/spread.yaml" 1 "unused" t1 so.spread
sed -i 's|schedule: {cron: "unused"}|schedule: {cron: "*/2 * * * * ?", spread: 1s}|' "$NODE_DIR/spread.yaml"
gen_sink_jobs "$NODE_DIR/h.yaml" 1 "H/3 * * * * ?" t1 so.hash
expect_exit "this release applies the three" 0 "$PAL" apply --config "$CLUSTER_CONF" \
	"$NODE_DIR/every.yaml" "$NODE_DIR/spread.yaml" "$NODE_DIR/h.yaml"
expect_exit "the old CLI refuses such a file (unknown key)" 65 "$OLD_PAL" validate "$NODE_DIR/every.yaml"

PAL=$OLD_PAL start_node o1
wait_until "the old node leads both shards" 20 all_shards_led
quarantined() { [ "$(sql "select count(*) from quarantine where job_id in ('so.every.job-1', 'so.spread.job-1')")" = 2 ]; }
wait_until "it quarantines the every and spread jobs" 15 quarantined
sleep 4
expect_eq "and plans none of their instants" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id in ('so.every.job-1', 'so.spread.job-1')")"
expect_match "saying why in its log" '"event":"controller.bad_job".*so.every.job-1' "$(cat "$NODE_DIR/o1.log")"
H_CRON=$(sql "select cron from job_versions where job_id = 'so.hash.job-1'")
H0=${H_CRON%%-*}
off_grid=$(sql "select count(*) from trigger_jobs where job_id = 'so.hash.job-1' and
	(extract(epoch from scheduled_at)::bigint % 60 - $H0) % 3 <> 0")
n_h=$(sql "select count(*) from trigger_jobs where job_id = 'so.hash.job-1'")
check "it plans the H job ($H_CRON) on this release's instants ($n_h planned, $off_grid off the grid)" \
	[ "$n_h" -ge 2 -a "$off_grid" = 0 ]
stop_node o1

start_node n1
wait_until "this release's node leads" 20 all_shards_led
expect_exit "release the every job" 0 "$PAL" release so.every.job-1 --reason "rolled to this release"
every_planned() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'so.every.job-1'")" -ge 2 ]; }
wait_until "this release plans it" 20 every_planned
ACT=$(sql "select floor(extract(epoch from effective_from))::bigint from job_versions where job_id = 'so.every.job-1'")
expect_eq "every 2 s from its activation" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'so.every.job-1' and (extract(epoch from scheduled_at)::bigint - $ACT) % 2 <> 0")"
stop_node n1
echo "    took $(($(date +%s) - T_START)) s"
finish
