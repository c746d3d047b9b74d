#!/usr/bin/env bash
# The release after this one (docs/upgrades.md, "Steps applied after the
# roll"): this tree built with one more migration, an expand step after the
# released after-roll step 048, which it then reads as a plain contract step
# (the tail is only the run of marked steps at the end).  Its binary
# migrates an empty database in full; on a database at 48 its node applies
# the expand step and leads; on one at 47 (048 pending) its node applies
# nothing and waits, not ready, naming 048 and `palisade migrate` (not
# "waiting for PostgreSQL"), and goes on by itself once migrate applied
# both.  This tree built with a second migration of number 048 is a list
# of migrations the binary refuses before it touches the database: migrate
# exits 65, a node logs node.migrations_invalid and exits 65.
source tests/integration/lib.sh
source tests/integration/cluster.sh
source tests/integration/releases.sh
guarantee "G8 - a release can add an expand step after a released after-roll step: nodes of it start on a database with or without that step applied (after palisade migrate); an invalid list of migrations is refused as such"

STEP=048_drop_attempts_fence
tree_schema
NX_V=$((BIN + 1))
NX_NAME=$(printf '%03d_next_expand' "$NX_V")
# one build tree per checkout and per extra migration
tree_of() { echo "/tmp/palisade-$1-build-$(pwd -P | md5sum | cut -c1-8)"; }
# sql_file DIR NAME TEXT: DIR/sql/NAME.sql holding TEXT, the only one there
sql_file() {
	mkdir -p "$1/sql"
	local f=$1/sql/$2.sql
	[ "$(cat "$f" 2>/dev/null)" = "$3" ] || echo "$3" >"$f"
	for g in "$1"/sql/[0-9]*.sql; do [ "$g" = "$f" ] || rm -f "$g"; done
	echo "$f"
}
t=$(date +%s)
NX_TREE=$(tree_of next)
NX_SQL=$(sql_file "$NX_TREE" "$NX_NAME" "-- $NX_NAME.sql - an expand step of the next release, for
-- test_migrate_next_release.sh.
--
-- compatible_from: 10
--
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS next_note text;")
build_with_migration "$NX_TREE" "$NX_SQL" ||
	{ fail "this tree builds with one more migration $NX_NAME"; finish; exit 1; }
DUP_TREE=$(tree_of dup048)
DUP_SQL=$(sql_file "$DUP_TREE" 048_dup_step "-- 048_dup_step.sql - a second migration numbered 48, for
-- test_migrate_next_release.sh.
--
-- compatible_from: 10
--
SELECT 1;")
build_with_migration "$DUP_TREE" "$DUP_SQL" ||
	{ fail "this tree builds with a second migration 048"; finish; exit 1; }
NX_PAL=$NX_TREE/bin/palisade
echo "    figure: the two builds ready in $(($(date +%s) - t)) s"
state() { echo "$(sql "select max(version) from schema_migrations") $(sql "select to_regclass('attempts_fence') is not null")"; }
readyz() { curl -s --noproxy '*' -m 2 "http://${NODE_ADMIN[$1]}/readyz"; }
SHARDS=4
write_exec_conf "$CLUSTER_CONF"

# ---- an empty database ---------------------------------------------------------------
fresh_db it_next_empty
expect_exit "the next release migrates an empty database, no ZooKeeper asked" 0 env -u PALISADE_ZK "$NX_PAL" migrate
expect_eq "to $NX_V, 048 applied" "$NX_V f" "$(state)"

# ---- a database at 48 (this release's roll finished) --------------------------------
fresh_db it_next_48
expect_exit "this tree migrates it to $BIN" 0 "$PAL" migrate
PAL=$NX_PAL start_node x1
wait_until "a node of the next release is ready on it" 30 node_ready x1
expect_eq "it applied $NX_NAME" "$NX_V f" "$(state)"
stop_node x1

# ---- a database at 47 (048 pending) ---------------------------------------------------
fresh_db it_next_47
expect_exit "this tree migrates it but for its after-roll step" 0 "$PAL" migrate --before-roll
expect_eq "schema $((BIN - 1)), attempts_fence there" "$((BIN - 1)) t" "$(state)"
PAL=$NX_PAL start_node x2
waits() { readyz x2 | grep -q "$STEP is a contract step.*palisade migrate"; }
wait_until "a node of the next release waits, /readyz naming $STEP and palisade migrate" 30 waits
check "it stays up" node_alive x2
check "its log has no node.db_unavailable" bash -c "! grep -q 'node.db_unavailable' '$NODE_DIR/x2.log'"
expect_eq "nothing applied" "$((BIN - 1)) t" "$(state)"
expect_exit "the next release's migrate applies $STEP and $NX_NAME (no older node live)" 0 \
	"$NX_PAL" migrate --config "$CLUSTER_CONF"
expect_eq "schema $NX_V, attempts_fence gone" "$NX_V f" "$(state)"
wait_until "the waiting node goes on by itself" 30 node_ready x2
stop_node x2

# ---- a list with two migrations 048 --------------------------------------------------
fresh_db it_next_dup
expect_exit "migrate of a binary with two migrations 048 refuses (exit 65)" 65 "$DUP_TREE/bin/palisade" migrate
expect_match "naming them" "list of migrations is invalid: migrations $STEP and 048_dup_step: the numbers" "$OUT"
expect_eq "nothing applied (no schema_migrations)" "f" "$(sql "select to_regclass('schema_migrations') is not null")"
PAL=$DUP_TREE/bin/palisade start_node d1
exited() { ! node_alive d1; }
wait_until "its node exits" 20 exited
stop_node d1
expect_eq "with 65" 65 "${NODE_EXIT[d1]:-}"
check "logging node.migrations_invalid" grep -q '"event":"node.migrations_invalid"' "$NODE_DIR/d1.log"
check "and no node.db_unavailable" bash -c "! grep -q 'node.db_unavailable' '$NODE_DIR/d1.log'"
finish
