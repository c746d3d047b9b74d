#!/usr/bin/env bash
# A 0.3.0 executor node at its in-flight limit still counts as live for the
# rule that a job no live executor node can send goes `manual`
# (docs/executor.md, "A secret missing on one node"; docs/upgrades.md,
# "Render skips during a roll from 0.3.0"): test_target_hosts_busy_node.sh
# with x2 a node of 0.3.0, built from ops/releases/.  It marks itself seen
# (executor_nodes.seen_at) at its claims only, and sends none while its one
# call is held, so its seen_at ages past the minute that liveness looks
# back; the lease of that call, which it renews, keeps it live.  It knows no
# executor.target_hosts and sends the job that x1 does not.
#
# Environment: PALISADE_OLD_TREE (default /tmp/palisade-0.3.0-build: the
# build tree of 0.3.0 from ops/releases/).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a live 0.3.0 executor node at its in-flight limit that can send a job keeps the job's instants out of manual"
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-0.3.0-build}
source tests/integration/releases.sh
build_release v0.3.0 ops/releases/palisade-0.3.0.tar.xz "$OLD_TREE" ||
	{ fail "0.3.0 builds from its release archive"; finish; exit 1; }
fresh_db it_target_hosts_busy_old_node
BUSY_OLD_PAL=$OLD_TREE/bin/palisade
source tests/integration/test_target_hosts_busy_node.sh
