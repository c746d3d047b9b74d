#!/usr/bin/env bash
# `palisade rollback` (the emergency brake) of a scope holding a job with
# spread or jitter goes ahead when the live nodes cannot be read (a CLI
# with the database only, ZooKeeper not answering), with a warning, as does
# a cut-over's dry run; shadow and a real cut-over are still refused then,
# as an apply that needs every controller's release is.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the emergency brake (rollback) is never refused for want of ZooKeeper; what needs to know the controllers' release says so"
it_db
SHARDS=1
write_conf "$CLUSTER_CONF"
cat >"$NODE_DIR/jobs.yaml" <<'JOBS'
jobs:
  - {id: rb.spread, group: rb, schedule: {every: 20s, start: "2026-01-01T00:00:00Z", spread: 19s}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: rb.plain, group: pl, schedule: {every: 20s, start: "2026-01-01T00:00:00Z"}, target: {url: "http://127.0.0.1:9/x"}}
JOBS
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
T1=$(($(date +%s) + 600)); T2=$((T1 - 60))
printf 'jobs:\n  - {id: to.a, schedule: {at: "%s"}, target: {url: "http://127.0.0.1:9/x"}}\n' "$(iso $T1)" >"$NODE_DIR/a1.yaml"
printf 'jobs:\n  - {id: to.a, schedule: {at: "%s"}, target: {url: "http://127.0.0.1:9/x"}}\n' "$(iso $T2)" >"$NODE_DIR/a2.yaml"
expect_exit "apply a one-shot" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a1.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node n1 --roles controller
wait_until "n1 plans" 30 has "select count(*) from triggers where job_id = 'rb.spread'" || { finish; exit 1; }
# the operator's CLI with the database only (PALISADE_PG), as docs/migrating.md shows it
expect_exit "rollback --group pl (plain) with the database only" 0 \
	env -u PALISADE_ZK "$PAL" rollback --group pl --reason brake --wait 0s
expect_exit "rollback --group rb (spread) with the database only: the brake works" 0 \
	env -u PALISADE_ZK "$PAL" rollback --group rb --reason brake --wait 0s
expect_match "... with a warning that the live nodes were not read" "warning: rollback of group:rb goes ahead without knowing the live nodes" "$OUT"
expect_exit "rollback --job rb.spread while ZooKeeper does not answer: the brake works" 0 \
	env PALISADE_ZK=127.0.0.1:1 "$PAL" rollback --job rb.spread --reason brake --wait 0s
AT=$(iso $(($(date +%s) + 120)))
expect_exit "cutover --dry-run of rb with the database only: answers" 0 \
	env -u PALISADE_ZK "$PAL" cutover --group rb --at "$AT" --reason dry --dry-run
expect_exit "a real cutover of rb with the database only: refused (exit 69)" 69 \
	env -u PALISADE_ZK "$PAL" cutover --group rb --at "$AT" --reason go
expect_exit "apply: the one-shot moved, with the database only: refused (exit 69), saying why" 69 \
	env -u PALISADE_ZK "$PAL" apply "$NODE_DIR/a2.yaml"
expect_match "... the live nodes cannot be read" "the live nodes cannot be read \(no ZooKeeper connect string is known\)" "$OUT"
expect_exit "... with --config (ZooKeeper known): applied" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml"
stop_node n1
finish
