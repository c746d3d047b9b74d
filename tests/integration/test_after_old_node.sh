#!/usr/bin/env bash
# While a node of 0.2.0 is live, apply refuses jobs that set keys it would
# ignore (`after`, `notify`, `target.keep_body`, `target.keep_headers`):
# through the CLI and through the API, their dry runs too, naming the old
# node; a job without them, and an unchanged one, still go.  Once the old node is gone, the
# same files are applied.
#
# Environment: PALISADE_OLD_TREE (default /tmp/palisade-0.2.0-build: the
# build tree of 0.2.0 from ops/releases/, shared with test_mixed_upgrade's
# and test_calendars_old_node's cache).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1 during a roll from 0.2.0: a job whose after:, notify: or keep_* an old node would ignore is refused while one is live (CLI and API), applied once none is"
T_START=$(date +%s)
source tests/integration/releases.sh
old_release 0.2.0 || { finish; exit 1; }

it_db after_old --before-roll
SHARDS=2
write_conf "$CLUSTER_CONF"
url='{url: "http://127.0.0.1:9/x"}'
cat >"$NODE_DIR/plain.yaml" <<YAML
jobs:
  - {id: old.a, schedule: {cron: "0 0 * * * ?"}, target: $url}
YAML
cat >"$NODE_DIR/after.yaml" <<YAML
jobs:
  - {id: old.a, schedule: {cron: "0 0 * * * ?"}, target: $url}
  - {id: old.b, after: [{job: old.a}], target: $url}
YAML
export OLD_HOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
cat >"$NODE_DIR/notify.yaml" <<YAML
jobs:
  - {id: old.n, schedule: {cron: "0 0 * * * ?"}, target: $url, notify: [{on: [failed], url: "http://127.0.0.1:9/hook", secret: "\${OLD_HOOK_SECRET}"}]}
YAML
cat >"$NODE_DIR/keep.yaml" <<YAML
jobs:
  - {id: old.k, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x", keep_body: 0}}
  - {id: old.h, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x", keep_headers: [X-Request-Id]}}
YAML
expect_exit "before any node: a job with notify: is applied (no live node ignores it)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/notify.yaml"

PAL=$OLD_PAL start_node o1
start_node n1
wait_until "the 0.2.0 node and this release's node are registered" 20 bash -c \
	"[ \"\$('$PAL' status --config '$CLUSTER_CONF' --output json 2>/dev/null | jq '.nodes | length')\" = 2 ]"
expect_match "o1 advertises 0.2.0, schema 28" '"version": *"0\.2\.0".*"schema": *28|"schema": *28.*"version": *"0\.2\.0"' \
	"$("$PAL" status --config "$CLUSTER_CONF" --output json | jq -c '.nodes[] | select(.id == "o1") | .info')"
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/after.yaml" 2>&1); rc=$?
expect_eq "after: refused while a 0.2.0 node is live (exit 4)" 4 "$rc"
expect_match "... naming the job, the key and the old node" \
	"job old.b sets after, which nodes older than schema 35 ignore .*o1 \(0\.2\.0, schema 28\).*nothing applied" "$out"
not_n1() { ! grep -q 'n1 (' <<<"$out"; }
check "... and not the node of this release" not_n1
expect_eq "nothing of the file stored (old.a neither)" 0 "$(sql "select count(*) from jobs where job_id in ('old.a', 'old.b')")"
out=$("$PAL" apply --dry-run --config "$CLUSTER_CONF" "$NODE_DIR/after.yaml" 2>&1); rc=$?
expect_eq "a dry run says the same (exit 4)" 4 "$rc"
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/keep.yaml" 2>&1); rc=$?
expect_eq "target.keep_headers / keep_body refused (exit 4)" 4 "$rc"
expect_match "... naming it (schema 34)" "sets target.keep_(headers|body), which nodes older than schema 34 ignore" "$out"
expect_exit "the stored notify job applied again unchanged: accepted (nothing new for o1 to ignore)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/notify.yaml"
sed -i 's/failed\]/failed, manual]/' "$NODE_DIR/notify.yaml"
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/notify.yaml" 2>&1); rc=$?
expect_eq "the notify job changed: refused (exit 4)" 4 "$rc"
expect_match "... naming notify (schema 33)" "job old.n sets notify, which nodes older than schema 33 ignore" "$out"
expect_exit "a job without those keys is applied beside the old node" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/plain.yaml"
# the API (this release's node n1) refuses the same, 409
"$PAL" token create --name deployer --role admin | tail -1 >"$NODE_DIR/admin.token"
remote() { env -u PALISADE_PG PALISADE_SERVER="http://${NODE_ADMIN[n1]}" \
	"$PAL" "$@" --token-file "$NODE_DIR/admin.token"; }
out=$(remote apply "$NODE_DIR/after.yaml" 2>&1); rc=$?
expect_eq "through the API: refused, 409 (exit 4)" 4 "$rc"
expect_match "... naming the old node" "job old.b sets after.*o1 \(0\.2\.0, schema 28\)" "$out"
out=$(remote apply --dry-run "$NODE_DIR/after.yaml" 2>&1); rc=$?
expect_eq "a dry run through the API refuses it as the CLI's dry run does: 409 (exit 4)" 4 "$rc"
expect_match "... with the same message" "job old.b sets after, which nodes older than schema 35 ignore .*o1 \(0\.2\.0, schema 28\).*nothing applied" "$out"
code=$(curl -s -o "$NODE_DIR/dry.json" -w '%{http_code}' -X POST -H "Authorization: Bearer $(cat "$NODE_DIR/admin.token")" \
	-H 'Content-Type: application/yaml' --data-binary @"$NODE_DIR/after.yaml" "http://${NODE_ADMIN[n1]}/api/v1/apply?dry_run=true")
expect_eq "... a problem of its own type" "409 urn:palisade:problem:older-nodes" "$code $(jq -r .type "$NODE_DIR/dry.json")"
expect_exit "a dry run of a file without those keys through the API: 0" 0 remote apply --dry-run "$NODE_DIR/plain.yaml"

stop_node o1
gone() { [ "$("$PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null | jq '.nodes | length')" = 1 ]; }
wait_until "o1's registration gone" 20 gone
expect_exit "o1 gone: the API applies the after: file" 0 remote apply "$NODE_DIR/after.yaml"
expect_exit "... and the CLI the keep_* file" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/keep.yaml"
expect_exit "... and the changed notify job" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/notify.yaml"
expect_eq "all stored" 5 "$(sql "select count(*) from jobs where job_id in ('old.a', 'old.b', 'old.k', 'old.h', 'old.n')")"
stop_all_nodes
echo "    figure: test took $(( $(date +%s) - T_START )) s"
finish
