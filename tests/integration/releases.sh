# tests/integration/releases.sh - binaries of other releases for the upgrade
# tests.  Sourced after lib.sh.
#
#   build_release TAG ARCHIVE TREE    the release TAG's palisade and
#       palisade-sink, built from its source archive ARCHIVE (ops/releases/,
#       written by ops/release-archive.sh) in the build tree TREE, whose bin/
#       is the cache (rebuilt when the archive changes; flock'd, so tests
#       running at once build it once).  Built from the archive, not from
#       git: a CI checkout may have no tags or history; where the tag is
#       present the archive is first checked against it.
#   db_from_030 DB    0.3.0 built (its palisade in OLD_PAL; the build tree
#       PALISADE_OLD_TREE, default /tmp/palisade-0.3.0-build) and a fresh
#       database DB migrated by it, then by this tree (--before-roll): the
#       schema of a roll from 0.3.0.  A failure is a failed check; returns 1 when 0.3.0 does
#       not build.
#   old_release VERSION    the release VERSION's palisade (and
#       palisade-sink) built by build_release in OLD_TREE
#       (PALISADE_OLD_TREE, default /tmp/palisade-VERSION-build), its
#       palisade in OLD_PAL.  When it does not build, a failed check
#       ("VERSION builds from its release archive") and status 1.
#   tree_schema    this tree's schema range from sql/: BIN its highest
#       migration, MIN the highest before its after-roll steps (its minimum)
#   iso EPOCH, hms EPOCH    an instant as a job file's `at` takes it, and as
#       the tests print it (UTC).
#   build_with_migration DIR SQLFILE  this tree's palisade with one more
#       migration (SQLFILE, named NNN_name.sql) in DIR/bin/palisade: a
#       build of its own under DIR (make O=DIR, kept as the cache), starting
#       from the objects of the build under test ($PALISADE_ITESTS/..)
#       when it has them, so that only the migrations are compiled again
build_release() {
	local tag=$1 archive=$2 tree=$3
	[ -f "$archive" ] || { echo "no release archive $archive"; return 1; }
	if git rev-parse -q --verify "$tag^{commit}" >/dev/null 2>&1; then
		ops/release-archive.sh --check "$tag" || return 1
	fi
	local want; want=$(sha256sum "$archive" | cut -d' ' -f1)
	(
		flock 9
		if [ -x "$tree/bin/palisade" ] && [ -x "$tree/bin/palisade-sink" ] &&
			[ "$(cat "$tree/bin/.built-from" 2>/dev/null)" = "$want" ]; then
			exit 0
		fi
		rm -rf "$tree" && mkdir -p "$tree" &&
			tar -x -C "$tree" --strip-components=1 -f "$archive" || exit 1
		make -C "$tree" O=build -j2 bin/palisade bin/palisade-sink >"$tree.build.log" 2>&1 ||
			{ tail -5 "$tree.build.log"; exit 1; }
		echo "$want" >"$tree/bin/.built-from"
	) 9>"$tree.lock"
}

db_from_030() {
	local tree=${PALISADE_OLD_TREE:-/tmp/palisade-0.3.0-build}
	build_release v0.3.0 ops/releases/palisade-0.3.0.tar.xz "$tree" ||
		{ fail "0.3.0 builds from its release archive"; return 1; }
	OLD_PAL=$tree/bin/palisade
	fresh_db "$1"
	expect_exit "0.3.0 migrates the empty database" 0 "$OLD_PAL" migrate
	expect_exit "this tree migrates it further (but for its after-roll steps)" 0 \
		"$PAL" migrate --before-roll --backfill-batches 0
}

old_release() {
	OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-$1-build}
	build_release "v$1" "ops/releases/palisade-$1.tar.xz" "$OLD_TREE" ||
		{ fail "$1 builds from its release archive"; return 1; }
	OLD_PAL=$OLD_TREE/bin/palisade
}

tree_schema() {
	MIN=$(grep -L '^-- applied: after the roll' sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n | tail -1)
	BIN=$(ls sql/[0-9]*.sql | sed 's|.*/0*\([0-9]*\)_.*|\1|' | sort -n | tail -1)
}

# old_leader_db DB: a fresh database DB migrated by the 0.3.0 release
# (old_release first), the 0.3.0 node o1 leading every one of its 4 shards
# ($CLUSTER_CONF, SHARDS=4), then this tree's `migrate --before-roll`
# (tree_schema first): the database at $MIN, the after-roll steps pending.
old_leader_db() {
	fresh_db "$1"
	expect_exit "0.3.0 migrates the empty database" 0 "$OLD_PAL" migrate
	SHARDS=4
	write_exec_conf "$CLUSTER_CONF"
	PAL=$OLD_PAL start_node o1
	_old_led() { [ "$(sql "select count(*) from shards where leader = 'o1'")" = "$SHARDS" ]; }
	wait_until "the 0.3.0 node o1 leads every shard" 30 _old_led
	expect_exit "--before-roll: this tree's minimum, the after-roll steps left pending" 0 \
		"$PAL" migrate --before-roll
}

iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
hms() { date -u -d "@$1" +%H:%M:%S; }

build_with_migration() {
	local dir=$1 extra=$2 main san= flavour=plain syms
	local -a cov=()
	main=$(dirname "${PALISADE_ITESTS:-/nonexistent/itests}")
	mkdir -p "$dir"
	(
		flock 9
		# The objects of the build under test, when there is one: only the
		# embedded migrations are compiled again, and the program linked.
		# Their flavour: ASan (make asan) or gcov (tests/asan-select.sh:
		# such objects link only with --coverage, and count into the
		# build under test's files).
		if [ -f "$main/libpalisade.a" ]; then
			syms=$(nm -A "$main/libpalisade.a" 2>/dev/null)
			if grep -q __asan_init <<<"$syms"; then
				san=1 flavour=1
			elif grep -q __gcov_merge_add <<<"$syms"; then
				cov=(CFLAGS="-O1 -g --coverage" LDFLAGS=--coverage) flavour=gcov
			fi
		fi
		# Objects of another flavour (an ASan run before a plain one, or
		# back) are never linked with these: make and `cp -u` would keep
		# them as up to date.
		if [ "$(cat "$dir/.flavour" 2>/dev/null)" != "$flavour" ]; then
			rm -rf "$dir/src" "$dir/gen" "$dir/bin" "$dir/libpalisade.a"
			echo "$flavour" >"$dir/.flavour"
		fi
		if [ -f "$main/libpalisade.a" ]; then
			(cd "$main" && find src -name '*.[od]' -print0 | xargs -0 -r cp -pu --parents -t "$dir") || exit 1
			cp -p "$main"/.deps-* "$dir"/ 2>/dev/null
		fi
		env "${cov[@]}" make --no-print-directory O="$dir" SAN="$san" -j2 \
			SQL="$(ls sql/[0-9]*.sql | sort | tr '\n' ' ') $extra" \
			"$dir/bin/palisade" >"$dir.build.log" 2>&1 || { tail -5 "$dir.build.log"; exit 1; }
	) 9>"$dir.lock"
}
