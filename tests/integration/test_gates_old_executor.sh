#!/usr/bin/env bash
# During a roll from 0.3.0, a live 0.3.0 node that runs only the executor
# role plans nothing (no row planned or judged on the moved instant, no
# version activated at a watermark): shadow and rollback of a spread scope
# and the apply of a moved one-shot, which need every controller of this
# release, go ahead beside it.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "a 0.3.0 node without the controller role does not block shadow, rollback or a one-shot move"
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-0.3.0-build}
build_release v0.3.0 ops/releases/palisade-0.3.0.tar.xz "$OLD_TREE" || { fail "0.3.0 builds"; finish; exit 1; }
OLD_PAL=$OLD_TREE/bin/palisade
fresh_db it_gates_old_executor
expect_exit "0.3.0 migrates" 0 "$OLD_PAL" migrate
expect_exit "this tree migrates further" 0 "$PAL" migrate --before-roll --backfill-batches 0
SHARDS=1 LOOKAHEAD=60s MISFIRE=2m
write_conf "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
T1=$(($(date +%s) + 300)); T2=$((T1 - 60))
cat >"$NODE_DIR/jobs.yaml" <<'JOBS'
jobs:
  - {id: co.spread1, group: co, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: sh.spread, group: sh, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://127.0.0.1:9/x"}}
JOBS
printf 'jobs:\n  - {id: to.a, schedule: {at: "%s"}, target: {url: "http://127.0.0.1:9/x"}}\n' "$(iso $T1)" >"$NODE_DIR/a1.yaml"
printf 'jobs:\n  - {id: to.a, schedule: {at: "%s"}, target: {url: "http://127.0.0.1:9/x"}}\n' "$(iso $T2)" >"$NODE_DIR/a2.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml" "$NODE_DIR/a1.yaml"
start_node n1 --roles controller
wait_until "this release's controller plans" 30 has "select count(*) from triggers where job_id = 'co.spread1'" || { finish; exit 1; }
PAL=$OLD_PAL start_node o1 --roles executor
wait_until "the 0.3.0 executor-only node is registered" 30 bash -c \
	"[ \"\$('$PAL' status --config '$CLUSTER_CONF' --output json 2>/dev/null | jq '.nodes | length')\" = 2 ]"
echo "    | nodes: $("$PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null | jq -c '[.nodes[] | {id, roles: .info.roles, schema: .info.schema}]')"
expect_exit "shadow --group sh beside a 0.3.0 executor-only node" 0 \
	"$PAL" shadow --config "$CLUSTER_CONF" --group sh --reason back
echo "    | $OUT" | head -2
expect_exit "rollback --group co beside a 0.3.0 executor-only node" 0 \
	"$PAL" rollback --config "$CLUSTER_CONF" --group co --reason back --wait 0s
echo "    | $OUT" | head -2
expect_exit "to.a moved (one-shot) beside a 0.3.0 executor-only node: applied" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml"
echo "    | $OUT" | head -2
expect_eq "to.a's stored schedule is the moved one" 1 "$(sql "select count(*) from job_versions where job_id = 'to.a' and spec::text like '%$(iso $T2)%'")"
stop_node o1
stop_node n1
finish
