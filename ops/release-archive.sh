#!/usr/bin/env bash
# The source archive of a release: what `make bin/palisade bin/palisade-sink`
# needs at a tag (Makefile, src, include, sql, the ops/ scripts that embed
# SQL and files, and the files embedded: docs/api/openapi.json from 0.2.0
# on), as
# ops/releases/palisade-X.Y.Z.tar.xz.  The mixed-version drill builds the
# previous release from this archive, so it needs no git history or tags
# (a CI checkout may have neither).
#
#   ops/release-archive.sh v0.1.0            write the archive
#   ops/release-archive.sh --check v0.1.0    exit 1 if the archive differs
#                                            from the tag (needs the tag)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
tag=${1:?usage: ops/release-archive.sh [--check] vX.Y.Z}
ver=${tag#v}
out=ops/releases/palisade-$ver.tar.xz
git rev-parse -q --verify "$tag^{commit}" >/dev/null ||
	{ echo "release-archive: no tag $tag in this checkout" >&2; exit 2; }
paths=(Makefile src include sql ops/deps.sh ops/embed-sql.sh)
# Inputs of the build that only later releases have.
for p in ops/embed-file.sh docs/api/openapi.json; do
	git cat-file -e "$tag:$p" 2>/dev/null && paths+=("$p")
done
if [ "$check" = 1 ]; then
	[ -f "$out" ] || { echo "release-archive: $out is missing" >&2; exit 1; }
	tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/a" "$tmp/b"
	git archive --format=tar "$tag" "${paths[@]}" | tar -x -C "$tmp/a"
	tar -x -C "$tmp/b" --strip-components=1 -f "$out"
	diff -r -q "$tmp/a" "$tmp/b" >&2 || { echo "release-archive: $out differs from $tag" >&2; exit 1; }
	exit 0
fi
mkdir -p ops/releases
git archive --format=tar --prefix="palisade-$ver/" "$tag" "${paths[@]}" | xz -9e >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out: $(wc -c <"$out") bytes from $tag ($(git rev-parse "$tag^{commit}"))"
