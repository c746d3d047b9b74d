#!/usr/bin/env bash
# tests/bench/hotpath.sh [BUILD_DIR [N...]] - in-process timings of hot paths,
# no servers: the planner's shard load (typed versions, as pal_store_shard_jobs
# hands them over), full reload, removals, one full tick and an idle tick for
# N jobs, with the memory per job (bench_planner.c, default 10000 and 50000;
# 62500 is a 1M-job shard of 16), and the result matching
# of pal_store_commit_results (bench_match.c).  BUILD_DIR (default build) must
# hold a built libpalisade.a; headers come from $PAL_SRC (default this tree),
# so the same programs measure an older checkout:
#
#   git worktree add --detach /tmp/old COMMIT && make -C /tmp/old -j2 O=build-old
#   PAL_SRC=/tmp/old bash tests/bench/hotpath.sh /tmp/old/build-old
#   bash tests/bench/hotpath.sh build
#
# Prints figures; asserts nothing.  Not part of `make bench` (which needs
# PostgreSQL); the machine is shared, so compare runs made back to back.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
shift || true
SRC=${PAL_SRC:-$(cd "$here/../.." && pwd)}
PKGS="glib-2.0 libpq yaml-0.1 libcurl jansson libmicrohttpd libsystemd"
CFL="-std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE"
mkdir -p "$B/bench"
# shellcheck disable=SC2046,SC2086
cc $CFL -I"$SRC/include" $(pkg-config --cflags $PKGS) -o "$B/bench/bench_planner" \
	"$here/bench_planner.c" "$B/libpalisade.a" $(pkg-config --libs $PKGS) \
	-lzookeeper_mt -lm -lpthread
# bench_match runs the store's own matching functions: a library older than
# them has none to run
match=false
if nm "$B/libpalisade.a" 2>/dev/null | grep ' T pal__id_refs_sort$' >/dev/null; then
	# shellcheck disable=SC2046,SC2086
	cc $CFL -I"$SRC/include" $(pkg-config --cflags $PKGS) -o "$B/bench/bench_match" \
		"$here/bench_match.c" "$B/libpalisade.a" $(pkg-config --libs $PKGS) \
		-lzookeeper_mt -lm -lpthread
	match=true
fi
echo "bench: hot paths, $(nproc) cores, library $B/libpalisade.a"
"$B/bench/bench_planner" "$@"
if $match; then
	"$B/bench/bench_match"
else
	echo "bench: commit match skipped ($B/libpalisade.a has no pal__id_refs_sort)"
fi
