#!/usr/bin/env bash
# ops/demo.sh BIN - the demo behind `make demo`: start the dev cluster
# (PostgreSQL + ZooKeeper under .state/), migrate, apply config/jobs/*.yaml,
# and show the jobs with their next fire instants.  The cluster keeps running
# afterwards; stop it with `ops/devcluster.sh down`.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin}
PAL=$BIN/palisade

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "dev cluster (ops/devcluster.sh up)"
eval "$(bash ops/devcluster.sh up)"
bash ops/devcluster.sh status
echo "PALISADE_PG=$PALISADE_PG"
echo "PALISADE_ZK=$PALISADE_ZK"

step "palisade migrate"
"$PAL" migrate

step "palisade validate config/jobs/*.yaml"
"$PAL" validate config/jobs/*.yaml

step "palisade plan diff config/jobs/*.yaml  (what apply would change)"
"$PAL" plan diff --count 3 config/jobs/*.yaml

step "palisade apply config/jobs/*.yaml"
"$PAL" apply --reason "make demo" config/jobs/*.yaml

step "palisade jobs --next 3"
"$PAL" jobs --next 3

cat <<MSG

The dev cluster keeps running.  To use it from this shell:
  eval "\$(ops/devcluster.sh env)"
  $PAL jobs --versions
Stop it with: ops/devcluster.sh down
MSG
