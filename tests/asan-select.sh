#!/usr/bin/env bash
# tests/asan-select.sh [TEST...] - which integration tests run C code that no
# other test runs: the table behind ASAN_SKIP in the Makefile (docs/testing.md).
#
# Builds the tree with gcov instrumentation into $COV_O (default build-cov),
# runs the unit tests and then each integration test (default: all of them)
# once, in one harness, each with its own GCOV_PREFIX so its line counts stay
# apart, and prints:
#   - per test: lines of src/ it runs, and lines no other test runs;
#   - the greedy order: each step takes the test that adds the most lines not
#     yet run by the unit tests and the tests taken before it.
# A whole-suite run (about as long as `make test`'s integration part): run it
# when tests were added or changed much, not in CI.
#   bash tests/asan-select.sh                      # everything
#   COV_OUT=/tmp/cov bash tests/asan-select.sh tests/integration/test_sink.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
COV_O=${COV_O:-build-cov}
OUT=${COV_OUT:-$(mktemp -d /tmp/palisade-cov.XXXXXX)}
mkdir -p "$OUT/wrap" "$OUT/data"

CFLAGS="-O1 -g --coverage" LDFLAGS="--coverage" make O="$COV_O" -j2 >"$OUT/build.log" 2>&1 ||
	{ echo "asan-select: the coverage build failed ($OUT/build.log)"; exit 1; }
GCOV_PREFIX=$OUT/data/unit bash tests/run-unit.sh "$COV_O" >"$OUT/unit.log" 2>&1 ||
	echo "asan-select: a unit test failed ($OUT/unit.log); its lines still count"

tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(tests/integration/test_*.sh)
wraps=()
for t in "${tests[@]}"; do
	n=$(basename "$t" .sh)
	# same base name as the test: run.sh keys the node log directory on it
	printf 'export GCOV_PREFIX=%q\ncd %q && exec bash %q\n' "$OUT/data/$n" "$ROOT" "$t" >"$OUT/wrap/$n.sh"
	wraps+=("$OUT/wrap/$n.sh")
done
PALISADE_BIN=$ROOT/$COV_O/bin PALISADE_ITESTS=$ROOT/$COV_O/itests \
	bash tests/integration/run.sh "${wraps[@]}" >"$OUT/integration.log" 2>&1 ||
	echo "asan-select: some tests failed ($OUT/integration.log); their lines up to the failure count"

python3 - "$ROOT" "$ROOT/$COV_O" "$OUT" <<'PY'
import glob, json, os, re, subprocess, sys
root, build, out = sys.argv[1:4]
cov = {}
for tdir in sorted(glob.glob(out + '/data/*')):
    name, tree = os.path.basename(tdir), tdir + build
    gcdas = glob.glob(tree + '/**/*.gcda', recursive=True)
    for g in gcdas:  # gcov wants the notes file beside the counts
        link, gcno = g[:-5] + '.gcno', build + g[len(tree):-5] + '.gcno'
        if os.path.exists(gcno) and not os.path.exists(link):
            os.symlink(gcno, link)
    lines = set()
    r = subprocess.run(['gcov', '-j', '-t'] + gcdas, cwd=root, capture_output=True, text=True)
    for doc in r.stdout.splitlines():
        if not doc.startswith('{'):
            continue
        for f in json.loads(doc).get('files', []):
            fn = os.path.relpath(f['file'], root) if f['file'].startswith('/') else f['file']
            if fn.startswith('src/'):
                lines.update('%s:%d' % (fn, l['line_number']) for l in f['lines'] if l['count'])
    cov[name] = lines
dur, t = {}, None
for line in open(out + '/integration.log', errors='replace'):
    m = re.match(r'== (test_\S+)', line)
    t = m.group(1) if m else t
    m = re.match(r'\s+passed in (\d+)s', line)
    if m and t:
        dur[t] = m.group(1) + 's'
unit = cov.pop('unit', set())
everything = set(unit).union(*cov.values())
print('lines of src/ run: %d by the whole suite, %d by the unit tests' % (len(everything), len(unit)))
print('%-36s %6s %6s %6s' % ('test', 'lines', 'alone', 'time'))
for t in sorted(cov):
    others = set(unit).union(*(cov[o] for o in cov if o != t))
    print('%-36s %6d %6d %6s' % (t, len(cov[t]), len(cov[t] - others), dur.get(t, 'fail')))
print('\ngreedy: lines each adds to the unit tests and the tests above it')
have, left = set(unit), dict(cov)
while left:
    t = max(left, key=lambda k: len(left[k] - have))
    add = left.pop(t) - have
    have |= add
    print('%-36s +%5d  %6.2f%%' % (t, len(add), 100.0 * len(have) / max(1, len(everything))))
PY
echo "asan-select: data in $OUT"
