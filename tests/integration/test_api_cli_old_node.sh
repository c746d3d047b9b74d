#!/usr/bin/env bash
# During a roll from 0.3.0, this release's CLI with --server pointed at a
# 0.3.0 node (or a balancer over the admin listeners): `cutover --dry-run`
# (?dry_run=true) and `apply --prune-prefix` (?prune_prefix=) name what
# 0.3.0 does not read and drops, acting for real.  The CLI asks the node's
# release first (Palisade-Version, set by 0.4.0 nodes on every answer) and
# refuses with 69, sending nothing; through a 0.4.0 node both work, and a
# dry run is printed as one from the answer's dry_run.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "cutover --dry-run through --server never takes a step, whatever node answers"
db_from_030 it_api_cli_old_node || { finish; exit 1; }
F=$PALISADE_TEST_TMP/test_api_cli_old_node.j.yaml
printf 'jobs:\n  - {id: j.imp, group: hostb, mode: shadow, schedule: {cron: "*/2 * * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$F"
expect_exit "apply (0.3.0 CLI)" 0 "$OLD_PAL" apply "$F"
SHARDS=1 write_conf "$CLUSTER_CONF"
PAL=$OLD_PAL start_node o1
start_node n1
wait_until "o1 ready" 20 node_ready o1
wait_until "n1 ready" 20 node_ready n1
expect_eq "a 0.4.0 node names its release on its answers" 1 \
	"$(curl -sI "http://${NODE_ADMIN[n1]}/api/v1/openapi.json" | grep -ci '^palisade-version: ')"
expect_eq "... a 0.3.0 node does not" 0 \
	"$(curl -sI "http://${NODE_ADMIN[o1]}/api/v1/openapi.json" | grep -ci '^palisade-version: ')"
AD=$("$PAL" token create --name ad --role admin | tail -1)
AT=$(date -u -d '+30 sec' +%FT%TZ)
out=$(env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" cutover --group hostb --reason "look first" --at "$AT" --dry-run --server "http://${NODE_ADMIN[o1]}" 2>&1); ec=$?
echo "    | exit $ec: $out" | head -8
expect_eq "cutover --dry-run through the 0.3.0 node is refused (69)" 69 "$ec"
expect_eq "... saying the release it needs" 1 "$(grep -c 'needs a node of release 0.4.0 or later' <<<"$out")"
expect_eq "the dry run took no step" 0 "$(sql "select count(*) from cutover_steps where scope = 'group:hostb'")"
expect_eq "... and audited nothing" 0 "$(sql "select count(*) from audit_log where actor = 'ad'")"
# apply --prune-prefix through --server: 0.3.0 drops ?prune_prefix= and applies without retiring
printf 'jobs:\n  - {id: team.a, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n  - {id: team.b, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/test_api_cli_old_node.t2.yaml"
expect_exit "team.a and team.b applied (0.3.0 CLI)" 0 "$OLD_PAL" apply "$PALISADE_TEST_TMP/test_api_cli_old_node.t2.yaml"
printf 'jobs:\n  - {id: team.a, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$PALISADE_TEST_TMP/test_api_cli_old_node.t1.yaml"
out=$(env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" apply --prune-prefix team --reason "team.b goes" --server "http://${NODE_ADMIN[o1]}" "$PALISADE_TEST_TMP/test_api_cli_old_node.t1.yaml" 2>&1); ec=$?
echo "    | exit $ec: $out" | head -8
expect_eq "apply --prune-prefix through the 0.3.0 node is refused (69)" 69 "$ec"
expect_eq "... and applied nothing: team.b is live" "f" \
	"$(sql "select retired_at is not null from jobs where job_id = 'team.b'")"
# through a 0.4.0 node both work
out=$(env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" cutover --group hostb --reason "look first" --at "$AT" --dry-run --server "http://${NODE_ADMIN[n1]}" 2>&1); ec=$?
echo "    | exit $ec: $out" | head -4
expect_eq "cutover --dry-run through the 0.4.0 node answers (0)" 0 "$ec"
expect_eq "... printed as a dry run" 1 "$(grep -c '^dry run, nothing changed: group:hostb' <<<"$out")"
expect_eq "... and took no step" 0 "$(sql "select count(*) from cutover_steps where scope = 'group:hostb'")"
out=$(env -u PALISADE_PG PALISADE_TOKEN="$AD" "$PAL" apply --prune-prefix team --reason "team.b goes" --server "http://${NODE_ADMIN[n1]}" "$PALISADE_TEST_TMP/test_api_cli_old_node.t1.yaml" 2>&1); ec=$?
echo "    | exit $ec: $out" | head -4
expect_eq "apply --prune-prefix through the 0.4.0 node (0)" 0 "$ec"
expect_eq "... retires team.b" "t" "$(sql "select retired_at is not null from jobs where job_id = 'team.b'")"
stop_node n1
stop_node o1
finish
