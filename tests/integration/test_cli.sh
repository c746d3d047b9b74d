#!/usr/bin/env bash
# The cluster-free commands: cron next and validate, as a user runs them.
source tests/integration/lib.sh
guarantee "cron next prints RFC 3339 UTC instants across DST; invalid expressions and job files exit 65 with a pointer to the fault"

expect_exit "cron next, Quartz, Berlin, across spring-forward" 0 \
	"$PAL" cron next "0 30 2 * * ?" --tz Europe/Berlin --from 2026-03-28T00:00:00Z --count 3
expect_eq "fires 01:30Z, then at the transition (01:00Z), then 00:30Z" \
	"2026-03-28T01:30:00Z 2026-03-29T01:00:00Z 2026-03-30T00:30:00Z" "$(echo $OUT)"
expect_exit "cron next, 5-field" 0 "$PAL" cron next "*/15 * * * *" --from 2026-01-01T00:00:00Z --count 2
expect_eq "every 15 minutes, strictly after --from" "2026-01-01T00:15:00Z 2026-01-01T00:30:00Z" "$(echo $OUT)"
expect_exit "cron next stops early when instants run out" 0 "$PAL" cron next "0 0 0 1 1 ? 2026" --from 2025-06-01T00:00:00Z --count 5
expect_eq "one instant only on stdout" "2026-01-01T00:00:00Z" "$("$PAL" cron next "0 0 0 1 1 ? 2026" --from 2025-06-01T00:00:00Z --count 5 2>/dev/null)"
expect_exit "invalid hour exits 65" 65 "$PAL" cron next "0 0 25 * * ?"
expect_match "naming the field" "hour" "$OUT"
expect_exit "unknown zone exits 65" 65 "$PAL" cron next "0 0 * * *" --tz Mars/Olympus
expect_exit "missing expression exits 64" 64 "$PAL" cron next

D=$PALISADE_TEST_TMP/cli
mkdir -p "$D"
cat >"$D/bad.yaml" <<'YAML'
jobs:
  - id: a.job
    schedule: {cron: "0 0 * * *", timezon: UTC}
    misfire: {policy: fire_twice}
    target: {url: "ftp://x"}
  - id: a.job
    schedule: {cron: "0 0 * * *"}
    target: {url: http://127.0.0.1/x}
YAML
expect_exit "validate rejects the file" 65 "$PAL" validate "$D/bad.yaml"
expect_match "unknown key with did-you-mean, at line:col" "bad.yaml:3:[0-9]+: .*timezon.*did you mean .*timezone" "$OUT"
expect_match "bad misfire policy" "bad.yaml:4:[0-9]+: .*fire_twice" "$OUT"
expect_match "bad URL" "bad.yaml:5:[0-9]+: .*ftp" "$OUT"
expect_match "duplicate id" "bad.yaml:6:[0-9]+: .*a.job" "$OUT"
expect_exit "validate accepts the example jobs" 0 "$PAL" validate config/jobs/*.yaml
expect_exit "validate without files is a usage error" 64 "$PAL" validate
env -u PALISADE_PG "$PAL" validate config/jobs/*.yaml >/dev/null 2>&1
expect_eq "validate needs no cluster" 0 $?
finish
