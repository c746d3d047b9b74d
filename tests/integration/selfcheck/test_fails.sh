#!/usr/bin/env bash
# Not part of the suite (tests/integration/test_*.sh only): `make
# check-runner` runs it to show that the integration runner fails a run
# whose test fails.  Every check below fails on purpose.
source tests/integration/lib.sh
guarantee "runner self-check - a failing check fails the test and the run"
fail "this check fails on purpose"
finish
