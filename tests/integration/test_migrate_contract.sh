#!/usr/bin/env bash
# Contract steps and live older nodes (docs/upgrades.md, "When a contract step
# is allowed").  `palisade migrate` refuses to apply a migration whose
# compatible_from is above the database's (a contract step for the nodes
# running on it) while a live node - registered in ZooKeeper, nodes/<id> -
# advertises an older schema, and while it cannot read the live nodes; with
# --force it applies it and writes an audit_log row.
#
# The binaries: 0.1.0 (from ops/releases/, schema 10, cached like
# test_mixed_upgrade's), this tree (expand steps only beyond 10),
# and this tree plus one contract step (a migration NNN = this tree's
# newest + 1 without a compatible_from line), built under
# $PALISADE_CONTRACT_TREE (default /tmp/palisade-contract-build-HASH, HASH
# of the checkout's path, kept as the
# cache).  The old node is 0.1.0 on purpose, not the previous release: the
# oldest node a contract step can meet, live while every expand step since
# (0.2.0's and this tree's) is applied beside it, and the one release whose
# nodes advertise their schema but no range (schema_min, compatible_from);
# test_mixed_upgrade rolls from the previous release.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G6 + G8 - a contract step is not applied while a node of an older schema is live (unless forced, audited); expand steps are"

NEW_PAL=$PAL
OLD_TAG=${PALISADE_CONTRACT_OLD_TAG:-v0.1.0}
OLD_ARCHIVE=ops/releases/palisade-${OLD_TAG#v}.tar.xz
OLD_TREE=/tmp/palisade-${OLD_TAG#v}-build
# one build tree per checkout: make keeps objects by time, and another
# checkout's would be linked as they are
CT_TREE=${PALISADE_CONTRACT_TREE:-/tmp/palisade-contract-build-$(pwd -P | md5sum | cut -c1-8)}

t=$(date +%s)
build_release "$OLD_TAG" "$OLD_ARCHIVE" "$OLD_TREE" ||
	{ fail "release $OLD_TAG builds in $OLD_TREE"; finish; exit 1; }
OLD_PAL=$OLD_TREE/bin/palisade
NEW_SCHEMA=$(ls sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n | tail -1)
# this tree's highest migration before its after-roll steps (its minimum)
NEW_MIN=$(grep -L '^-- applied: after the roll' sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n | tail -1)
CT_V=$((NEW_SCHEMA + 1))
CT_NAME=$(printf '%03d_contract_drill' "$CT_V")
mkdir -p "$CT_TREE/sql"
CT_SQL=$CT_TREE/sql/$CT_NAME.sql
want='-- '"$CT_NAME"'.sql - a contract step for test_migrate_contract.sh: no
-- compatible_from line, so compatible only with binaries that carry it.
COMMENT ON TABLE schema_migrations IS '"'"'contract drill'"'"';'
[ "$(cat "$CT_SQL" 2>/dev/null)" = "$want" ] || echo "$want" >"$CT_SQL"
for f in "$CT_TREE"/sql/[0-9]*.sql; do [ "$f" = "$CT_SQL" ] || rm -f "$f"; done
build_with_migration "$CT_TREE" "$CT_SQL" ||
	{ fail "this tree builds with one more migration $CT_NAME in $CT_TREE"; finish; exit 1; }
CT_PAL=$CT_TREE/bin/palisade
echo "    figure: binaries $OLD_TAG, schema $NEW_SCHEMA (this tree) and $CT_V (with $CT_NAME) ready in $(($(date +%s) - t)) s"

live_ids() { "$NEW_PAL" status --config "$CLUSTER_CONF" --output json 2>/dev/null |
	python3 -c "import json,sys; print(' '.join(sorted(n['id'] for n in json.load(sys.stdin).get('nodes', []))))"; }
registered() { [[ " $(live_ids) " == *" $1 "* ]]; }
gone() { ! registered "$1"; }
schema() { sql "select max(version) from schema_migrations"; }
all_shards_led_by() { [ "$(sql "select count(*) from shards where leader = '$1'")" = "$SHARDS" ]; }

# ---- an empty database: nothing runs on it, no ZooKeeper needed --------------------
fresh_db it_contract_empty
expect_exit "the contract binary migrates an empty database without ZooKeeper" 0 \
	env -u PALISADE_ZK "$CT_PAL" migrate
expect_eq "to its schema $CT_V" "$CT_V" "$(schema)"

# ---- a cluster of 0.1.0 ------------------------------------------------------------
fresh_db it_contract
expect_exit "$OLD_TAG migrates a new database" 0 "$OLD_PAL" migrate
OLD_SCHEMA=$(schema)
SHARDS=4
write_conf "$CLUSTER_CONF"
PAL=$OLD_PAL start_node o1
wait_wall "the $OLD_TAG node o1 leads every shard (registered in ZooKeeper)" 40 all_shards_led

# Expand steps only (this tree beyond 10, but for its after-roll steps):
# applied with o1 live.
expect_exit "this tree's migrate --before-roll applies its expand steps while $OLD_TAG node o1 is live" 0 \
	"$NEW_PAL" migrate --config "$CLUSTER_CONF" --before-roll
expect_eq "schema $OLD_SCHEMA -> $NEW_MIN" "$NEW_MIN" "$(schema)"
expect_eq "and nothing was forced" 0 "$(sql "select count(*) from audit_log where action = 'schema.contract_forced'")"
check "o1 keeps running on the expanded schema" node_alive o1
start_node n1
wait_wall "this tree's node n1 is live in ZooKeeper" 40 registered n1

# ---- the contract step -------------------------------------------------------------
expect_exit "the contract step is refused while o1 ($OLD_TAG) and n1 (schema $NEW_SCHEMA) are live" 4 \
	"$CT_PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming the step, its compatible_from and both nodes" \
	"refusing contract step $CT_NAME \\(compatible_from $CT_V.*o1 \\(${OLD_TAG#v}, schema $OLD_SCHEMA\\).*n1 \\([^,]*, schema $NEW_SCHEMA\\)" "$OUT"
expect_eq "nothing applied" "$NEW_MIN" "$(schema)"
expect_exit "refused when the live nodes cannot be read (no ZooKeeper known)" 64 \
	env -u PALISADE_ZK "$CT_PAL" migrate
expect_match "saying why" "cannot tell whether nodes older than schema $CT_V are live; nothing applied" "$OUT"
expect_exit "refused when ZooKeeper does not answer" 69 \
	"$CT_PAL" migrate --config "$CLUSTER_CONF" --zk "127.0.0.1:$(free_port)"
expect_eq "still nothing applied" "$NEW_MIN" "$(schema)"
expect_exit "--reason without --force is a usage error" 64 "$CT_PAL" migrate --reason x

stop_node o1
wait_wall "o1 has left" 20 gone o1
expect_exit "o1 gone, the step is still refused for n1" 4 "$CT_PAL" migrate --config "$CLUSTER_CONF"
expect_match "naming n1 only" "older than schema $CT_V: n1 \\([^,]*, schema $NEW_SCHEMA\\); roll it" "$OUT"
expect_eq "nothing applied" "$NEW_MIN" "$(schema)"

# A node of the contract binary does not apply the step itself when it starts.
PAL=$CT_PAL start_node c1
wait_wall "a node of schema $CT_V started on it refuses to apply the step" 30 \
	grep -q '"event":"node.schema_refused".*migration '"$CT_NAME"' is a contract step.*is not applied by a node' "$NODE_DIR/c1.log"
expect_match "readyz says why" "$CT_NAME is a contract step.*palisade migrate" "$(curl -s "http://${NODE_ADMIN[c1]}/readyz")"
expect_eq "nothing applied" "$NEW_MIN" "$(schema)"
check "c1 is not registered (it joins ZooKeeper only once the schema is ready)" gone c1

# ---- --force: applied and audited ----------------------------------------------------
expect_exit "--force applies it" 0 env PALISADE_ACTOR=contract-test "$CT_PAL" migrate \
	--config "$CLUSTER_CONF" --force --reason "contract drill: n1 rolled next"
expect_match "warning about n1" "applying contract step $CT_NAME .*n1" "$OUT"
expect_eq "schema $CT_V" "$CT_V" "$(schema)"
expect_eq "one audit row schema.contract_forced by the actor, with the reason" \
	"contract-test|contract drill: n1 rolled next|$CT_NAME|$CT_V|n1" \
	"$(sql "select actor || '|' || reason || '|' || (details->>'step') || '|' || (details->>'compatible_from') || '|' || (select string_agg(e->>'id', ',') from jsonb_array_elements(details->'older_nodes') e) from audit_log where action = 'schema.contract_forced'")"
wait_wall "n1 (schema $NEW_SCHEMA) resigns under the contract step" 40 bash -c "! kill -0 ${NODE_PID[n1]} 2>/dev/null"
stop_node n1
expect_eq "n1 exited 70 (out of its schema range: drained and exited)" 70 "${NODE_EXIT[n1]:-}"
wait_wall "c1 (schema $CT_V) proceeds once the step is applied and leads" 40 all_shards_led_by c1
expect_exit "a second run finds no contract step pending and needs no ZooKeeper" 0 \
	env -u PALISADE_ZK "$CT_PAL" migrate
expect_match "and applies nothing" "applied 0 migrations; schema at version $CT_V" "$OUT"
stop_node c1
finish
