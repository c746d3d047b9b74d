#!/usr/bin/env bash
# tests/asan-select.sh [TEST...] - which integration tests `make asan` runs:
# the table behind ASAN_SKIP in the Makefile (docs/testing.md, "What runs
# under ASan").
#
# Builds the tree with gcov instrumentation into $COV_O (default build-cov),
# runs the unit tests and then each integration test (default: all of them)
# once, in one harness (PALISADE_IT_JOBS at a time, IT_SERIAL alone), each
# with its own GCOV_PREFIX so its line counts stay apart, and prints:
#   - per test: lines of src/ it runs, lines no other test runs, its length;
#   - the selection: a weighted greedy set cover.  Each step takes the test
#     that adds the most lines not yet run (by the unit tests and the tests
#     taken before it) per second of its CI cost, and the steps stop when no
#     test adds a line, so the selection runs every line the suite runs (or,
#     with ASAN_SELECT_RATE=R, when the best adds fewer than R lines per
#     second: what the Makefile's selection does to fit CI's budget).  A
#     test's CI cost is its length ("passed in", or the figure of
#     $ASAN_SELECT_TIMES, lines "NAME SECONDS") divided by the tests that run
#     at a time ($ASAN_SELECT_JOBS, default 3) unless it is in IT_SERIAL,
#     whose tests run alone;
#   - ASAN_SKIP: the tests the selection leaves out, for the Makefile.
# A whole-suite run (about as long as `make test`'s integration part): run it
# when tests were added or changed much, not in CI.  COV_REUSE=1 only reads
# the counts and lengths a run left in $COV_OUT (to weigh them again).
#   PALISADE_IT_JOBS=3 COV_OUT=/tmp/cov bash tests/asan-select.sh   # everything
#   COV_OUT=/tmp/cov bash tests/asan-select.sh tests/integration/test_sink.sh
#   COV_REUSE=1 COV_OUT=/tmp/cov ASAN_SELECT_TIMES=asan-lengths bash tests/asan-select.sh
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
COV_O=${COV_O:-build-cov}
OUT=${COV_OUT:-$(mktemp -d /tmp/palisade-cov.XXXXXX)}
mkdir -p "$OUT/wrap" "$OUT/data"

if [ "${COV_REUSE:-0}" != 1 ]; then
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
fi
SERIAL=$(sed -n '/^IT_SERIAL="/,/"$/p' tests/integration/run.sh | tr -d '"' | sed 's/^IT_SERIAL=//')

python3 - "$ROOT" "$ROOT/$COV_O" "$OUT" "$SERIAL" "${ASAN_SELECT_JOBS:-3}" "${ASAN_SELECT_TIMES:-}" "${ASAN_SELECT_RATE:-0}" <<'PY'
import collections, glob, json, os, re, subprocess, sys
root, build, out, serial, jobs, times, min_rate = sys.argv[1:8]
serial, jobs, min_rate = set(serial.split()), int(jobs), float(min_rate)
# Per test: its length ("passed in") and whether it has ended (its lines
# are printed when it ends, or at its start when one runs at a time: then
# the next one's start or the run's last line ends it).  A suite split
# over several runs of run.sh leaves one integration*.log each.
dur, ended = {}, {'unit'}
for log in sorted(glob.glob(out + '/integration*.log')):
    t = None
    for line in open(log, errors='replace'):
        m = re.match(r'== (test_\S+)', line)
        if m:
            ended.add(t)
            t = m.group(1)
        m = re.match(r'\s+passed in (\d+)s', line)
        if m and t:
            dur[t] = int(m.group(1))
            ended.add(t)
        if line.startswith('integration: ') and ' tests, ' in line:
            ended.add(t)

# lines(TDIR): the lines of src/ one test's counts ran, kept beside the data
# once the test has ended (a run read again with COV_REUSE=1 reads the
# cache, not gcov; a run still under way reads what has ended so far).
def lines(tdir):
    name, tree = os.path.basename(tdir), tdir + build
    cache = out + '/lines/' + name
    if os.path.exists(cache):
        return set(open(cache).read().split())
    gcdas = glob.glob(tree + '/**/*.gcda', recursive=True)
    for g in gcdas:  # gcov wants the notes file beside the counts
        link, gcno = g[:-5] + '.gcno', build + g[len(tree):-5] + '.gcno'
        if os.path.exists(gcno) and not os.path.exists(link):
            os.symlink(gcno, link)
    got = set()
    r = subprocess.run(['gcov', '-j', '-t'] + gcdas, cwd=root, capture_output=True, text=True)
    for doc in r.stdout.splitlines():
        if not doc.startswith('{'):
            continue
        for f in json.loads(doc).get('files', []):
            fn = os.path.relpath(f['file'], root) if f['file'].startswith('/') else f['file']
            if fn.startswith('src/'):
                got.update('%s:%d' % (fn, l['line_number']) for l in f['lines'] if l['count'])
    if name in ended:
        os.makedirs(out + '/lines', exist_ok=True)
        open(cache, 'w').write('\n'.join(sorted(got)))
    return got

cov = {os.path.basename(d): lines(d) for d in sorted(glob.glob(out + '/data/*')) if os.path.basename(d) in ended}
if times:  # lengths of another run (an ASan one) where it has them
    for line in open(times):
        f = line.split()
        if len(f) >= 2 and f[0] in cov:
            dur[f[0]] = int(f[1].rstrip('s'))
unit = cov.pop('unit', set())
everything = set(unit).union(*cov.values())
print('lines of src/ run: %d by the whole suite, %d by the unit tests' % (len(everything), len(unit)))
print('%-36s %6s %6s %6s' % ('test', 'lines', 'alone', 'time'))
runs = collections.Counter(l for t in cov for l in cov[t])  # tests that run each line
for t in sorted(cov):
    alone = sum(1 for l in cov[t] if runs[l] == 1 and l not in unit)
    print('%-36s %6d %6d %6s' % (t, len(cov[t]), alone, '%ds' % dur[t] if t in dur else 'fail'))

# A failed test has no length: it is weighed as the longest one that passed.
longest = max(dur.values(), default=60)
def cost(t):
    return max(1, dur.get(t, longest)) / (1 if t in serial else jobs)

print('\nselection (weighted greedy): lines each adds to the unit tests and the tests above it,')
print('its CI cost (length, divided by %d unless serial), lines per second of cost, and the totals' % jobs)
have, left, total, kept = set(unit), dict(cov), 0.0, []
while left:
    t = max(sorted(left), key=lambda k: len(left[k] - have) / cost(k))
    add = left[t] - have
    if not add or len(add) / cost(t) < min_rate:
        break
    del left[t]
    have |= add
    total += cost(t)
    kept.append(t)
    print('%-36s +%5d %6.1fs %7.1f  %6.2f%% %7.1fs' % (t, len(add), cost(t), len(add) / cost(t),
                                                    100.0 * len(have) / max(1, len(everything)), total))
print('%d tests kept, CI cost %.0f s, %d of %d lines; left out: %d tests, CI cost %.0f s' % (
    len(kept), total, len(have), len(everything), len(left), sum(cost(t) for t in left)))
print('\nASAN_SKIP := ' + ' '.join(sorted(left)))
PY
echo "asan-select: data in $OUT"
