#!/usr/bin/env bash
# Not part of the suite: `make check-runner` runs it to show that a query
# that fails fails its test, though the check it feeds passes on the empty
# output (sql runs in a command substitution).  Its one check passes; the
# recorded failure must fail the test.
source tests/integration/lib.sh
guarantee "runner self-check - a query that fails fails the test"
fresh_db selfcheck_sql_fails
expect_eq "a broken query's rows: none" "" "$(sql "SELECT no_such_column FROM pg_class WHERE false")"
finish
