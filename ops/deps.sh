#!/usr/bin/env bash
# ops/deps.sh [--bench | --chaos | --check] - install the Debian packages palisade
# needs, when missing; --bench adds the load tools of `make bench` (wrk),
# --chaos Patroni and kazoo for the PostgreSQL failover drills of `make chaos`
#         (pg-failover, pg-switchover, pg-async-failover and the random drill
#         with --pg ha; kazoo named, since Patroni's dependency on a DCS
#         client is met by any of several), iptables for the zk-cutoff drill.
# --check installs nothing: it names the missing packages of the build
# (plain `make`) and the one command that installs them, and fails.
#
# Checks each package with dpkg-query and runs `apt-get install` only for the
# missing ones (through sudo when not root).  Fast and silent when everything
# is present, so the Makefile can call it before every build.
# docs/dependencies.md says why each package is here.
set -euo pipefail

PACKAGES=(
	build-essential pkg-config
	libzookeeper-mt-dev zookeeper            # ZooKeeper C client; server for dev/test
	postgresql-15 libpq-dev                  # PostgreSQL server for dev/test; libpq
	pgbouncer                                # transaction pooler of tests/integration/test_pgbouncer.sh
	libyaml-dev libjansson-dev libglib2.0-dev # YAML, JSON, time zones + SHA-256
	libcurl4-openssl-dev libmicrohttpd-dev   # HTTP client (executor), server (admin, sink)
	libsystemd-dev                           # sd_notify
	libcmocka-dev                            # unit tests
	clang-14 libclang-rt-14-dev libfuzzer-14-dev # sanitizers, fuzzing
	python3 python3-croniter tzdata          # reference checks of the cron engine
	python3-yaml                             # the importers' reference check (tests/reference/import_reference.py)
	procps iproute2 netcat-openbsd curl      # process checks, ports, tests
	libfaketime openssl                      # clock-skew drill; TLS test target
	scdoc cppcheck                           # man pages, make lint
	prometheus                               # promtool: the metrics text and the alert rules are checked in make test
	chromium                                 # headless browser of the console test (tests/integration/test_console.sh)
	systemd                                  # systemd-analyze verify of the units (make test: check-units)
	python3-jsonschema                       # the API's contract test (tests/integration/api_contract.py)
	nodejs                                   # runs @redocly/cli, the OpenAPI linter of make test (below)
)
# What plain `make` needs (compilers, headers, scdoc for the man pages is
# optional); servers and test tools come with `make deps`/`test`/`demo`.
BUILD_PACKAGES=(
	build-essential pkg-config libzookeeper-mt-dev libpq-dev libyaml-dev
	libjansson-dev libglib2.0-dev libcurl4-openssl-dev libmicrohttpd-dev
	libsystemd-dev libcmocka-dev
)
[ "${1:-}" = --bench ] && PACKAGES+=(wrk)   # make bench: the HTTP ceiling
[ "${1:-}" = --chaos ] && PACKAGES+=(patroni python3-kazoo iptables) # make chaos: PostgreSQL failover drills, zk-cutoff
[ "${1:-}" = --check ] && PACKAGES=("${BUILD_PACKAGES[@]}")

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
# @redocly/cli, the linter of docs/api/openapi.json in make test, from npm into
# build/node (a directory of the project, not system-wide), pinned; only when
# missing.  npm comes with Node.js (else Debian's npm package).
redocly() {
	[ -z "${1:-}" ] || return 0
	local dir=build/node version=2.77.0
	[ -x "$dir/node_modules/.bin/redocly" ] && return 0
	command -v npm >/dev/null || { echo "ops/deps.sh: npm missing: apt-get install npm" >&2; return 1; }
	echo "ops/deps.sh: installing @redocly/cli@$version into $dir" >&2
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --silent "@redocly/cli@$version" >&2
}
if [ ${#missing[@]} -eq 0 ]; then
	redocly "${1:-}"
	exit
fi
if [ "${1:-}" = --check ]; then
	echo "make: missing packages to build palisade: ${missing[*]}" >&2
	echo "make: install them with:  make deps   (or: sudo apt-get install -y ${missing[*]})" >&2
	exit 1
fi

echo "ops/deps.sh: installing missing packages: ${missing[*]}" >&2
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "ops/deps.sh: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
	SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
# apt-get update only when the lists are missing or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
	"${SUDO[@]}" apt-get update -qq
fi
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
redocly "${1:-}"
echo "ops/deps.sh: done" >&2
