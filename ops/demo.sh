#!/usr/bin/env bash
# ops/demo.sh BIN - what `make demo` runs: the dev cluster (PostgreSQL +
# ZooKeeper under .state/), migrations, the example jobs of config/jobs/,
# the reference sink on 127.0.0.1:8089 and three nodes (controller and
# executor), then a live view of triggers being planned, claimed and applied.
# Ctrl-C stops every process this script started (by PID) and the dev
# cluster.  DEMO_SECONDS=N stops by itself after N seconds (used by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "${1:-bin}" && pwd)
PAL=$BIN/palisade
STATE=${PALISADE_STATE:-.state}
LOGS=$STATE/demo
mkdir -p "$LOGS"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
PIDS=()
cleanup() {
	trap - INT TERM EXIT
	step "stopping (Ctrl-C): nodes drain, then the sink and the dev cluster"
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	bash ops/devcluster.sh down
	echo "logs are in $LOGS/"
}
# Ctrl-C or a TERM is the way to stop the demo: once everything is stopped
# the script ends there (exit 0), rather than going on against the stopped
# cluster
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

step "dev cluster (ops/devcluster.sh up)"
eval "$(bash ops/devcluster.sh up)"
bash ops/devcluster.sh status

step "palisade migrate"
"$PAL" migrate

step "palisade validate config/jobs/*.yaml"
"$PAL" validate config/jobs/*.yaml

step "palisade plan diff config/jobs/*.yaml  (what apply would change)"
"$PAL" plan diff --count 3 config/jobs/*.yaml

step "palisade apply config/jobs/*.yaml"
"$PAL" apply --config config/palisade.yaml --reason "make demo" config/jobs/*.yaml

step "the reference sink on 127.0.0.1:8089 (admin 127.0.0.1:8090)"
"$BIN/palisade-sink" --listen 127.0.0.1:8089 --admin 127.0.0.1:8090 >"$LOGS/sink.log" 2>&1 &
PIDS+=($!)

step "three nodes: n1 n2 n3 (admin on 127.0.0.1:9464-9466, logs in $LOGS/)"
# The example jobs reference these secrets; a real deployment sets them in
# the node's environment (they are never stored resolved).
export SUMMARY_TOKEN=demo-summary-token INVENTORY_TOKEN=demo-inventory-token
# The nodes' admin token (admin.token_env's default variable): writes to the
# admin endpoint (drain) need it; the CLI sends it from the same variable.
export PALISADE_ADMIN_TOKEN=${PALISADE_ADMIN_TOKEN:-demo-admin-token}
for i in 1 2 3; do
	"$PAL" node --config config/palisade.yaml --node-id "n$i" --admin "127.0.0.1:946$((3 + i))" \
		>"$LOGS/n$i.log" 2>&1 &
	PIDS+=($!)
done
sleep 4

show() {
	clear 2>/dev/null || true
	echo "palisade demo - $(date -u +%H:%M:%SZ)   (Ctrl-C stops everything)"
	echo
	"$PAL" status | sed -n '1,4p;/^triggers/,$p'
	echo
	echo "shards per leader: $(psql "$PALISADE_PG" -XAtqc "select string_agg(leader || '=' || n, ' ') from (select leader, count(*) n from shards group by 1 order by 1) x")"
	echo
	echo "latest triggers:"
	"$PAL" triggers --job demo.heartbeat --limit 5 | cut -c1-150
	echo
	echo "sink effects: $(psql "$PALISADE_PG" -XAtqc "select count(*) from sink_effects") applied," \
		"$(curl -s --noproxy "*" http://127.0.0.1:8090/admin/stats | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["replayed"], "replayed,", s["stale"], "stale tokens refused")' 2>/dev/null)"
	psql "$PALISADE_PG" -XAtqc "select '  ' || idempotency_key || '  fence ' || fence || '  ' || to_char(applied_at, 'HH24:MI:SS') from sink_effects order by applied_at desc limit 5"
	echo
	echo "try: PALISADE_ADMIN_TOKEN=$PALISADE_ADMIN_TOKEN $PAL drain --node n2    $PAL pause --job demo.heartbeat --reason demo    open http://127.0.0.1:9464/"
}

start=$SECONDS
while :; do
	show
	if [ -n "${DEMO_SECONDS:-}" ] && [ $((SECONDS - start)) -ge "$DEMO_SECONDS" ]; then
		break
	fi
	sleep 3
done
