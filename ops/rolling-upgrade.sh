#!/usr/bin/env bash
# ops/rolling-upgrade.sh - restart a palisade cluster one node at a time
# (to roll out a new binary or configuration) without losing or doubling an
# instant.  For each node: check the cluster is healthy, drain the node
# (`palisade drain --wait`: its shards are handed off at once, its executor
# finishes or hands back its calls, it exits 0), wait until every shard is led
# again, run the restart command, wait until the node is back, ready and
# leading its share.  Stops at the first step that does not complete.  Then,
# with --migrate, `palisade migrate`: the release's after-roll schema steps,
# which its nodes run with or without and leave pending (docs/upgrades.md);
# without it, says which are pending.
set -uo pipefail

usage() {
	cat <<'EOF'
usage: ops/rolling-upgrade.sh --restart CMD [--config FILE] [--palisade BIN]
                              [--timeout SECONDS] [--max-lag SECONDS] [--migrate]
                              [NODE...]
Restart the given nodes (default: every live node, in id order) one at a time.
  --restart CMD     shell command that starts a drained node again, with {node}
                    replaced by its id, e.g. 'systemctl start palisade@{node}'
  --config FILE     node config (PostgreSQL and ZooKeeper settings), passed to
                    palisade; otherwise PALISADE_PG and PALISADE_ZK are used
  --palisade BIN    the palisade binary used for status and drain (default:
                    palisade on PATH, else bin/palisade)
  --timeout S       limit for each wait (default 120)
  --max-lag S       a shard counts as led when its watermark lags now by less
                    than this (default 3)
  --migrate         once every node is back, run 'palisade migrate' (with
                    --config): it applies the release's after-roll schema
                    steps, and refuses (exit 4) while a node of an older
                    release is live.  Without it, the pending steps are named.
                    Needs the new release's palisade (--palisade): with an
                    older one (no schema.pending_after_roll in its status)
                    it refuses before touching a node.
Exit: 0 every node restarted (and migrated), 1 a step did not complete (the
remaining nodes are left alone) or the final migrate failed, 64 usage (or
--migrate with an older release's palisade), 69 the cluster is unreachable or
unhealthy.
EOF
}

RESTART= CONFIG= PAL= TIMEOUT=120 MAX_LAG=3 MIGRATE=0
NODES=()
while [ $# -gt 0 ]; do
	case $1 in
	--restart) RESTART=${2:-}; shift 2 ;;
	--config) CONFIG=${2:-}; shift 2 ;;
	--palisade) PAL=${2:-}; shift 2 ;;
	--timeout) TIMEOUT=${2:-}; shift 2 ;;
	--max-lag) MAX_LAG=${2:-}; shift 2 ;;
	--migrate) MIGRATE=1; shift ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; exit 64 ;;
	*) NODES+=("$1"); shift ;;
	esac
done
[ -n "$RESTART" ] || { echo "rolling-upgrade: --restart is required" >&2; usage >&2; exit 64; }
[[ $TIMEOUT =~ ^[0-9]+$ && $MAX_LAG =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
	{ echo "rolling-upgrade: --timeout and --max-lag take seconds" >&2; exit 64; }
if [ -z "$PAL" ]; then
	PAL=$(command -v palisade || echo "$(dirname "$0")/../bin/palisade")
fi
CONF_ARGS=()
[ -n "$CONFIG" ] && CONF_ARGS=(--config "$CONFIG")

log() { echo "rolling-upgrade: $*"; }
now_ms() { date +%s%3N; }

# One `palisade status --output json`, summarised by a Python helper into
# shell-readable lines.  status QUERY [ARG]
status() {
	"$PAL" status --output json "${CONF_ARGS[@]}" 2>/dev/null |
		python3 -c '
import json, sys
q, arg, lag = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    s = json.load(sys.stdin)
except ValueError:
    sys.exit(2)
nodes = {n["id"]: (n.get("info") or {}) for n in s.get("nodes", [])}
shards = s.get("shards", [])
led = lambda sh: sh.get("leader") and sh.get("lag_s") is not None and sh["lag_s"] < lag
if q == "nodes":
    print(" ".join(sorted(nodes)))
elif q == "healthy":            # every shard led
    sys.exit(0 if shards and all(led(sh) for sh in shards) else 1)
elif q == "unled":
    print(",".join(str(sh["shard"]) for sh in shards if not led(sh)))
elif q == "live":               # node ARG registered in ZooKeeper
    sys.exit(0 if arg in nodes else 1)
elif q == "admin":
    print(nodes.get(arg, {}).get("admin", ""))
elif q == "version":
    print(nodes.get(arg, {}).get("version", "?"))
elif q == "controller":
    sys.exit(0 if "controller" in nodes.get(arg, {}).get("roles", []) else 1)
elif q == "controllers":
    print(sum(1 for i in nodes.values() if "controller" in i.get("roles", [])))
elif q == "nshards":
    print(len(shards))
elif q == "knows_after_roll":   # a CLI of a release with after-roll steps
    sys.exit(0 if "pending_after_roll" in (s.get("schema") or {}) else 1)
elif q == "pending":            # after-roll schema steps the database lacks
    print(", ".join((s.get("schema") or {}).get("pending_after_roll") or []))
elif q == "leads":              # shards led by ARG
    print(sum(1 for sh in shards if sh.get("leader") == arg and led(sh)))
' "$1" "${2:-}" "$MAX_LAG"
}

# wait_for DESC CMD...: poll CMD every 0.2 s up to TIMEOUT; prints elapsed ms.
wait_for() {
	local desc=$1; shift
	local t0; t0=$(now_ms)
	while ! "$@" >/dev/null 2>&1; do
		if [ $(($(now_ms) - t0)) -ge $((TIMEOUT * 1000)) ]; then
			log "FAILED: $desc not within ${TIMEOUT}s"
			return 1
		fi
		sleep 0.2
	done
	echo $(($(now_ms) - t0))
}

ready() {
	local admin; admin=$(status admin "$1")
	[ -n "$admin" ] && curl -sf --noproxy '*' -m 2 "http://$admin/readyz" >/dev/null
}
leads_some() { [ "$(status leads "$1")" -ge 1 ]; }

if ! out=$("$PAL" status --output json "${CONF_ARGS[@]}" 2>&1 >/dev/null); then
	log "cannot read the cluster's status: $out"
	exit 69
fi
# An older release's CLI (on PATH while the roll from it goes on) shows no
# pending after-roll steps, and its migrate knows neither this release's
# migrations nor which are after-roll ones: it would report success with
# them pending.  Refused before any node is touched.
if ! status knows_after_roll; then
	if [ "$MIGRATE" = 1 ]; then
		log "refusing --migrate: $PAL ($("$PAL" --version 2>/dev/null | head -1)) shows no schema.pending_after_roll in its status: the CLI of an older release, whose migrate would leave the new release's after-roll steps pending and report success; pass --palisade with the palisade of the release being rolled out; nothing done"
		exit 64
	fi
	log "warning: $PAL shows no schema.pending_after_roll (an older release's CLI): the after-roll steps left pending cannot be named; use --palisade with the new release's binary"
fi
[ ${#NODES[@]} -gt 0 ] || read -r -a NODES <<<"$(status nodes)"
[ ${#NODES[@]} -gt 0 ] || { log "no live node in the cluster"; exit 69; }
for n in "${NODES[@]}"; do
	status live "$n" || { log "node $n is not live in the cluster"; exit 69; }
done
if [ "$(status controllers)" -lt 2 ]; then
	log "warning: fewer than two controllers; while one restarts, its shards wait for it (instants due meanwhile are planned late or handled by the misfire policy)"
fi
log "nodes: ${NODES[*]}"

for n in "${NODES[@]}"; do
	if ! status healthy; then
		log "cluster unhealthy before $n (shards not led: $(status unled)); stopping"
		exit 69
	fi
	was_controller=0
	status controller "$n" && was_controller=1
	old_version=$(status version "$n")
	t0=$(now_ms)
	if ! "$PAL" drain --node "$n" --wait "$TIMEOUT" "${CONF_ARGS[@]}"; then
		log "FAILED: drain of $n"
		exit 1
	fi
	drain_ms=$(($(now_ms) - t0))
	led_ms=$(wait_for "every shard led after $n left" status healthy) || exit 1
	cmd=${RESTART//\{node\}/$n}
	t1=$(now_ms)
	if ! bash -c "$cmd"; then
		log "FAILED: restart command for $n: $cmd"
		exit 1
	fi
	back_ms=$(wait_for "$n back in the cluster and ready" ready "$n") || exit 1
	back_ms=$(($(now_ms) - t1))
	share=
	if status controller "$n" && [ "$(status nshards)" -ge "$(status controllers)" ]; then
		share_ms=$(wait_for "$n leading its share of the shards" leads_some "$n") || exit 1
		share=", leads $(status leads "$n") shards after ${share_ms} ms"
	fi
	wait_for "every shard led after $n came back" status healthy >/dev/null || exit 1
	log "$n: drained in ${drain_ms} ms (controller: $was_controller), all shards led ${led_ms} ms later; restarted $old_version -> $(status version "$n"), ready after ${back_ms} ms${share}"
done
log "done: ${#NODES[@]} nodes restarted"
if [ "$MIGRATE" = 1 ]; then
	out=$("$PAL" migrate "${CONF_ARGS[@]}" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/rolling-upgrade: /'
	[ "$rc" = 0 ] || { log "FAILED: the final palisade migrate (exit $rc)"; exit 1; }
else
	pending=$(status pending)
	[ -z "$pending" ] ||
		log "after-roll schema steps pending: $pending; once every node runs this release, run 'palisade migrate' (or this script with --migrate)"
fi
