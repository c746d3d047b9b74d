#!/usr/bin/env bash
# tests/bench/console_scale.sh [BIN] - the console at ten million triggers:
# tests/integration/test_console_scale.sh with SIZE finished triggers
# (default 10,000,000, set-based inserts, then ANALYZE) and 300 live ones,
# printing the median of 7 answers of every console route (/api/cluster,
# its jobs section searched, /console, searched, /api/job, /console/job).
# Loading takes minutes and a few GB of disk under /tmp; not part of
# `make test` (which runs the same test at 300,000) nor of `make bench`'s
# time budget.  Exits as the test does (each median under 300 ms).
set -o pipefail
cd "$(dirname "$0")/../.."
BIN=$(cd "${1:-bin}" && pwd)
SIZE=${SIZE:-10000000} PALISADE_BIN=$BIN PALISADE_ITESTS=${PALISADE_ITESTS:-$PWD/build/itests} \
	exec bash tests/integration/run.sh tests/integration/test_console_scale.sh
