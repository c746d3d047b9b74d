#!/usr/bin/env bash
# Re-importing an edited crontab (docs/migrating.md, "Importing again"):
# one command at two schedules gives two jobs whose ids come from their
# own schedules, not from their order; the 01:00 line removed and an other
# entry's schedule edited, the re-import applied with `--prune-prefix
# hosta.` leaves one live job per entry: the removed entry's jobs retired,
# the edited entry a new version of the same job, no job of another host's
# prefix touched.  The same line order reversed gives the same ids.
source tests/integration/lib.sh
guarantee "a re-imported crontab applied with --prune-prefix leaves exactly one live job per entry, and no other host's"
it_db
D=$PALISADE_TEST_TMP/re
mkdir -p "$D"
imp() { "$PAL" import crontab --prefix "$1" --group "$1" --timezone UTC --target-url 'http://127.0.0.1:9/{job}' "$2"; }
printf '%s\n' '0 1 * * * /usr/local/bin/backup' '0 13 * * * /usr/local/bin/backup' '30 2 * * * /usr/local/bin/rotate' >"$D/crontab"
imp hosta "$D/crontab" >"$D/v1.yaml" 2>/dev/null
tac "$D/crontab" >"$D/reversed"
imp hosta "$D/reversed" >"$D/rev.yaml" 2>/dev/null
ids() { grep -- '- id:' "$1" | sort; }
expect_eq "the lines in another order: the same ids" "$(ids "$D/v1.yaml")" "$(ids "$D/rev.yaml")"
printf '%s\n' '0 5 * * * /usr/local/bin/backup' >"$D/hostb"
imp hostb "$D/hostb" >"$D/b.yaml" 2>/dev/null
expect_exit "apply host-a's import" 0 "$PAL" apply --reason "moved" "$D/v1.yaml"
expect_exit "apply host-b's import" 0 "$PAL" apply --reason "moved" "$D/b.yaml"
ROT=$(sql "select job_id from jobs where job_id like 'hosta.usr-local-bin-rotate-%'")

printf '%s\n' '0 13 * * * /usr/local/bin/backup' '45 2 * * * /usr/local/bin/rotate' >"$D/crontab"
imp hosta "$D/crontab" >"$D/v2.yaml" 2>/dev/null
expect_exit "a dry run names what the re-import retires" 0 "$PAL" apply --dry-run --prune-prefix hosta. --reason "edited" "$D/v2.yaml"
expect_eq "... the two jobs of the backup command at two schedules, nothing of host-b" 2 "$(grep -c '^would retire *hosta\.usr-local-bin-backup-' <<<"$OUT")"
check "... and nothing else" test "$(grep -c '^would retire' <<<"$OUT")" = 2
expect_exit "re-apply with --prune-prefix hosta." 0 "$PAL" apply --prune-prefix hosta. --reason "edited" "$D/v2.yaml"
echo "$OUT" | sed 's/^/      | /'
live() { sql "select j.job_id || '|' || v.cron from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.retired_at is null order by 1"; }
live | sed 's/^/      live: /'
expect_eq "one live job per entry of each host" \
	"hosta.usr-local-bin-backup|0 13 * * *,hosta.usr-local-bin-rotate|45 2 * * *,hostb.usr-local-bin-backup|0 5 * * *" \
	"$(live | sed -E 's/-[0-9a-f]{8}(_[0-9a-f]{8})?\|/|/' | paste -sd, -)"
expect_eq "the edited entry is a new version of its job" "$ROT|2" \
	"$(sql "select job_id || '|' || latest_version from jobs where job_id = '$ROT' and retired_at is null")"
expect_exit "--prune and --prune-prefix together: usage" 64 "$PAL" apply --prune --prune-prefix hosta. "$D/v2.yaml"
finish
