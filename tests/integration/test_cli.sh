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
# Names and instants on the command line are checked like
# those of job files, before any connection is made.
LONG=$(head -c 10240 /dev/zero | tr '\0' g)
expect_exit "pause --group with a 10 KB name is a usage error" 64 "$PAL" pause --group "$LONG" --reason x
expect_match "saying it is too long" "too long \(10240 bytes, at most 64\)" "$OUT"
expect_exit "pause --job with a 129-byte id" 64 "$PAL" pause --job "$(head -c 129 /dev/zero | tr '\0' j)" --reason x
expect_exit "pause --tenant with an upper-case name" 64 "$PAL" pause --tenant Billing --reason x
expect_exit "cancel --job with a space" 64 "$PAL" cancel --job "a b" --reason x
expect_exit "delete of an invalid job name" 64 "$PAL" delete --reason x "$LONG"
expect_exit "a fractional --at is refused, not truncated" 64 "$PAL" trigger --job some.job --at 2026-01-01T00:00:00.5Z --reason x
expect_match "naming whole seconds" "whole seconds.*2026-01-01T00:00:00Z" "$OUT"
expect_exit "a fractional triggers --since is refused" 64 "$PAL" triggers --since 2026-01-01T00:00:00.9Z
expect_exit "a fractional backfill --from is refused" 64 "$PAL" backfill --job some.job --from 2026-01-01T00:00:00.25+01:00 --to 2026-01-02T00:00:00Z --reason x
expect_exit "a zero fraction is whole seconds (then it needs a cluster)" 0 bash -c "'$PAL' trigger --job some.job --at 2026-01-01T00:00:00.000Z --reason x --pg 'host=/nonexistent' >/dev/null 2>&1; [ \$? -eq 69 ]"
cat >"$D/past.yaml" <<'YAML'
jobs:
  - id: past.cron
    schedule: {cron: "0 0 0 31 * ? 1999-2001"}
    target: {url: "ftp://ops:hunter2@files.example/x"}
    idempotency_key: " {job}/{scheduled_at}/{partition}"
YAML
expect_exit "validate refuses a bad URL, a spaced key" 65 "$PAL" validate "$D/past.yaml"
check "but not the cron that never fires again (a spent job is valid)" \
	bash -c "! grep -q 'past.yaml:3:.*error' <<<\"\$1\"" _ "$OUT"
expect_match "the key" "past.yaml:5:[0-9]+: .*begins or ends with a space" "$OUT"
expect_match "the URL with its password masked" "ftp://ops:\*\*\*@files.example" "$OUT"
check "and the password is never shown" bash -c "! grep -q hunter2 <<<\"\$1\"" _ "$OUT"
expect_exit "a conninfo URI libpq cannot parse" 69 "$PAL" jobs --pg 'postgresql://app:hunter2@[::1/db'
expect_match "is quoted with its password masked" 'postgresql://app:\*\*\*@' "$OUT"
check "and never shown" bash -c "! grep -q hunter2 <<<\"\$1\"" _ "$OUT"
expect_exit "--help lists the exit codes" 0 "$PAL" --help
expect_match "not found, refused, mismatch" "2 verify found a mismatch, 3 not found, 4 refused" "$OUT"
expect_exit "triggers --help" 0 "$PAL" triggers --help
expect_eq "triggers --help lists the states of tstate.def, every one" \
	"$(echo $(sed -n 's/^PAL_TSTATE([A-Z_]*, *\([a-z_]*\),.*/\1/p' include/palisade/tstate.def))" \
	"$(tr '\n' ' ' <<<"$OUT" | sed -n 's/.*STATE is one of \([a-z_ ]*\)\..*/\1/p')"
# spread moves every instant; start and end bound the moved ones, as the
# planner plans them (job r.at2's offset in 1h is 3514 s, r.x3's 3387 s)
cat >"$D/spread_end.yaml" <<'YAML'
jobs:
  - id: r.at2
    schedule: {at: "2027-03-01T12:00:00Z", end: "2027-03-01T12:30:00Z", spread: 1h}
    target: {url: http://127.0.0.1:8089/x}
  - id: r.x3
    schedule: {cron: "0 0 12 * * ?", timezone: UTC, start: "2027-03-01T00:00:00Z", end: "2027-03-01T12:30:00Z", spread: 1h}
    target: {url: http://127.0.0.1:8089/x}
YAML
expect_exit "validate refuses jobs whose spread moves every instant past end" 65 "$PAL" validate "$D/spread_end.yaml"
expect_match "the at, at its position" "spread_end.yaml:3:[0-9]+: .*at is outside \[start, end\).*spread offset is 3514s" "$OUT"
expect_match "the cron, at its position" "spread_end.yaml:6:[0-9]+: .*never fires between start and end" "$OUT"
cat >"$D/spent.yaml" <<YAML
jobs:
  - id: r.at2
    schedule: {at: "$(date -u -d @$(($(date +%s) - 600)) +%Y-%m-%dT%H:%M:%SZ)", spread: 1h}
    target: {url: http://127.0.0.1:8089/x}
YAML
expect_exit "validate accepts an at 10 min past whose moved instant is 49 min ahead" 0 "$PAL" validate "$D/spent.yaml"
check "and does not say it will not fire again (the planner plans it)" \
	bash -c "! grep -q 'will not fire again' <<<\"\$1\"" _ "$OUT"
finish
