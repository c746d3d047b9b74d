#!/usr/bin/env bash
# During a roll from 0.3.0, an apply whose version takes over at the apply
# (a one-shot `at` moved, a retired job applied again; src/store/apply_takeover.c
# TAKEOVER_*) is refused while a node older than schema 42 is live: the
# apply would cancel what the old version planned after it, counting on
# the controller to activate the new version at the apply, and a 0.3.0
# controller activates it at its shard's watermark, so the new instant
# below the watermark would never be planned (a lost instant).  Checked:
# with a 0.3.0 controller leading, this release's CLI and API refuse the
# move (exit 4, 409 older-nodes, the old node named), the old instant
# stays pending (nothing lost), a change that does not take over (a cron
# job's) still goes; once the old node is gone the same move is applied
# and the one-shot has one pending row, at its new instant.
#
# Environment: PALISADE_OLD_TREE (default /tmp/palisade-0.3.0-build: the
# build tree of 0.3.0 from ops/releases/, kept as the cache).
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G1 during a roll from 0.3.0: a one-shot moved (or a retired job applied again) is refused while a 0.3.0 node is live, so its instant is not lost; applied once none is, it fires once at its new instant"
T_START=$(date +%s)
db_from_030 it_takeover_old || { finish; exit 1; }
SHARDS=1 LOOKAHEAD=90s MISFIRE=2m
write_conf "$CLUSTER_CONF"
T1=$(($(date +%s) + 75))
T2=$((T1 - 10))
url='{url: "http://127.0.0.1:9/x"}'
job() { echo "jobs:"; echo "  - {id: to.a, schedule: {at: \"$(iso "$1")\"}, target: $url}"; }
job "$T1" >"$NODE_DIR/a1.yaml"
job "$T2" >"$NODE_DIR/a2.yaml"
cron_job() { printf 'jobs:\n  - {id: %s, schedule: {cron: "%s"}, target: %s}\n' "$1" "$2" "$url"; }
cron_job to.b "0 0 * * * ?" >"$NODE_DIR/b.yaml"
cron_job to.c "0 0 * * * ?" >"$NODE_DIR/c1.yaml"
cron_job to.c "0 30 * * * ?" >"$NODE_DIR/c2.yaml"
expect_exit "to.a at T1 = $(hms "$T1"), to.b and to.c applied before any node" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a1.yaml" "$NODE_DIR/b.yaml" "$NODE_DIR/c1.yaml"

PAL=$OLD_PAL start_node o1 --roles controller
wait_until "the 0.3.0 controller plans T1" 20 \
	has "select count(*) from triggers where job_id = 'to.a' and scheduled_at = '$(iso "$T1")'" ||
	{ finish; exit 1; }
start_node n1 --roles controller
wait_until "this release's node is registered beside it" 20 bash -c \
	"[ \"\$('$PAL' status --config '$CLUSTER_CONF' --output json 2>/dev/null | jq '.nodes | length')\" = 2 ]"
expect_eq "the 0.3.0 node leads the shard" o1 "$(sql "select leader from shards where shard_id = 0")"

out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml" 2>&1); rc=$?
echo "    | $out"
expect_eq "to.a moved to T2 = $(hms "$T2") with a 0.3.0 controller leading: refused (exit 4)" 4 "$rc"
expect_match "... saying why and naming the old node, not this release's" \
	"job to.a takes over at its apply.*o1 \(0\.3\.0, schema 41\).*nothing applied" "$out"
not_n1() { ! grep -q 'n1 (' <<<"$out"; }
check "... (n1 not named)" not_n1
out=$("$PAL" apply --dry-run --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml" 2>&1); rc=$?
expect_eq "its dry run says the same (exit 4)" 4 "$rc"
"$PAL" token create --name deployer --role admin | tail -1 >"$NODE_DIR/admin.token"
code=$(curl -s -o "$NODE_DIR/api.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$NODE_DIR/admin.token")" \
	-H 'Content-Type: application/yaml' --data-binary @"$NODE_DIR/a2.yaml" "http://${NODE_ADMIN[n1]}/api/v1/apply")
expect_eq "POST /api/v1/apply of this release's node: 409 older-nodes" "409 urn:palisade:problem:older-nodes" \
	"$code $(jq -r .type "$NODE_DIR/api.json")"
expect_match "... naming the old node" "job to.a takes over at its apply.*o1 \(0\.3\.0, schema 41\)" \
	"$(jq -r .detail "$NODE_DIR/api.json")"
expect_eq "to.a: one version, its row at T1 pending (the instant is not lost)" "1 1 $(hms "$T1") 1" \
	"$(sql "select (select count(*) from job_versions where job_id = 'to.a') || ' ' || count(*) || ' ' ||
	  min(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS')) || ' ' || min(version)
	  from triggers where job_id = 'to.a' and state = 'pending'")"
expect_exit "to.c (cron) changed beside the old node: applied (it does not take over at its apply)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c2.yaml"
expect_exit "to.b deleted" 0 "$PAL" delete --config "$CLUSTER_CONF" --reason test to.b
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml" 2>&1); rc=$?
expect_eq "to.b applied again (a retired job) beside the old node: refused (exit 4)" 4 "$rc"
expect_match "... naming it and the old node" "job to.b takes over at its apply.*o1 \(0\.3\.0, schema 41\)" "$out"
expect_eq "... and it stays retired" 1 "$(sql "select count(*) from jobs where job_id = 'to.b' and retired_at is not null")"

stop_node o1
gone() { [ "$("$PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null | jq '.nodes | length')" = 1 ]; }
wait_until "o1's registration gone" 20 gone
wait_until "n1 leads the shard" 20 bash -c "[ \"\$(psql '$PALISADE_PG' -XAtqc 'select leader from shards where shard_id = 0')\" = n1 ]"
expect_exit "o1 gone: to.a moved to T2 applied" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/a2.yaml"
expect_exit "... and to.b applied again" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/b.yaml"
rows() { sql "select string_agg(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS') || ' v' || version || ' ' || state, ', ' order by scheduled_at) from triggers where job_id = 'to.a'"; }
one_at_t2() { [ "$(sql "select count(*) || ' ' || coalesce(min(to_char(scheduled_at at time zone 'UTC', 'HH24:MI:SS')), '') from triggers where job_id = 'to.a' and state = 'pending'")" = "1 $(hms "$T2")" ]; }
wait_until "to.a: one pending row, at T2" 15 one_at_t2
echo "    | to.a rows: $(rows)"
expect_eq "... and T1's row cancelled" cancelled \
	"$(sql "select state from triggers where job_id = 'to.a' and scheduled_at = '$(iso "$T1")'")"
stop_all_nodes
echo "    figure: test took $(($(date +%s) - T_START)) s"
finish
