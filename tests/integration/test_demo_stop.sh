#!/usr/bin/env bash
# ops/demo.sh (`make demo`) stopped by a signal: it stops what it started and
# ends there, exit 0, rather than going on against the stopped dev cluster.
# Run in a scratch tree whose dev cluster, palisade, sink, psql and curl are
# stand-ins (the script's own steps are what is checked, not the cluster's).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "make demo stopped by TERM or INT stops its processes and the dev cluster, then exits 0 without running another command"
for sig in TERM INT; do
	W=$PALISADE_TEST_TMP/demo-$sig
	mkdir -p "$W/ops" "$W/bin" "$W/stub" "$W/config/jobs"
	cp ops/demo.sh "$W/ops/demo.sh"
	: >"$W/config/jobs/a.yaml"
	: >"$W/config/palisade.yaml"
	cat >"$W/ops/devcluster.sh" <<'SH'
case $1 in
up) rm -f .down; echo 'export PALISADE_PG=stub PALISADE_ZK=stub' ;;
down) touch .down; echo "devcluster down" ;;
esac
exit 0
SH
	# palisade: a node sleeps until TERM; any command once the cluster is
	# down fails as the real one does (cannot connect, exit 69)
	cat >"$W/bin/palisade" <<'SH'
#!/usr/bin/env bash
if [ "$1" = node ]; then trap 'echo stopped >>.nodes-stopped; exit 0' TERM; trap '' INT; while :; do sleep 0.2; done; fi
if [ -e .down ]; then echo "palisade $1: cannot connect to PostgreSQL" >&2; echo "$1" >>.after-down; exit 69; fi
echo "palisade $*"
SH
	cat >"$W/bin/palisade-sink" <<'SH'
#!/usr/bin/env bash
trap 'exit 0' TERM; trap '' INT; while :; do sleep 0.2; done
SH
	for t in psql curl clear; do printf '#!/bin/sh\nexit 0\n' >"$W/stub/$t"; done
	chmod +x "$W"/bin/* "$W"/stub/*
	# (a job started with & ignores INT: the demo gets it back, as from a terminal)
	(cd "$W" && PATH=$W/stub:$PATH exec python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.execvp("bash", ["bash", "ops/demo.sh", "bin"])' >demo.out 2>&1) &
	demo=$!
	wait_until "the demo ($sig) reaches its live view" 20 grep -q 'palisade demo - ' "$W/demo.out"
	sleep 1
	kill -"$sig" "$demo"
	rc=0
	wait "$demo" || rc=$?
	expect_eq "the demo stopped by $sig exits 0" 0 "$rc"
	expect_eq "... after stopping its three nodes" 3 "$(wc -l <"$W/.nodes-stopped" 2>/dev/null || echo 0)"
	check "... and the dev cluster" test -e "$W/.down"
	expect_eq "... and runs no command after that (none failed against the stopped cluster)" "" "$(cat "$W/.after-down" 2>/dev/null)"
	expect_match "... it says where the logs are" 'logs are in .*/demo/' "$(cat "$W/demo.out")"
done
finish
