#!/usr/bin/env bash
# A group's cut-over planned for T, then (before T) an entry added to the
# old system, imported again and applied: the new job is live from T, so
# apply names it as live from T with its entry to remove before T, not as
# "in shadow, never called until a cutover"; after T, a new entry's job is
# live from its apply, and apply says so.
source tests/integration/lib.sh
guarantee "every job a cut-over makes live is named to the operator as an entry to remove from the old system"
it_db
D=$PALISADE_TEST_TMP/cp
mkdir -p "$D"
imp() { "$PAL" import crontab --prefix hostp --group hostp --target-url 'http://127.0.0.1:9/{job}' "$D/crontab"; }
printf '%s\n' '*/5 * * * * /usr/local/bin/sync' >"$D/crontab"
imp >"$D/p1.yaml" 2>/dev/null
expect_exit "apply hostp (shadow)" 0 "$PAL" apply --reason p "$D/p1.yaml"
T=$(( $(date +%s) + 8 ))
TS=$(date -u -d @$T +%FT%TZ)
expect_exit "cutover --group hostp --at T (8 s ahead)" 0 "$PAL" cutover --group hostp --at "$TS" --reason "hostp hands over at T"
printf '%s\n' '*/5 * * * * /usr/local/bin/sync' '*/10 * * * * /usr/local/bin/reindex' >"$D/crontab"
imp >"$D/p2.yaml" 2>/dev/null
NEW=$(awk -F'"' '/- id:/ {print $2}' "$D/p2.yaml" | grep reindex)
expect_exit "re-import before T, dry run" 0 "$PAL" apply --dry-run --prune-prefix hostp. --reason p "$D/p2.yaml"
check "... names the new job as live from T" grep -qE "^would be live $NEW from $TS \(.*remove its entry from the old system before $TS" <<<"$OUT"
expect_exit "re-import applied before T" 0 "$PAL" apply --prune-prefix hostp. --reason p "$D/p2.yaml"
check "... names the new job as live from T, its entry to remove before T" grep -qE "^live +$NEW from $TS \(.*remove its entry from the old system before $TS" <<<"$OUT"
check "... not as in shadow, never called until a cutover" bash -c '! grep -qE "^shadow +$1 " <<<"$2"' _ "$NEW" "$OUT"
check "... the summary counts it" grep -q ', 1 live by a cut-over$' <<<"$OUT"
while [ "$(date +%s)" -le "$T" ]; do sleep 1; done
expect_eq "$NEW is live after T" t "$(sql "select palisade_trigger_live('$NEW', null, 'hostp', now())")"
printf '%s\n' '*/5 * * * * /usr/local/bin/sync' '*/10 * * * * /usr/local/bin/reindex' '0 * * * * /usr/local/bin/vacuum' >"$D/crontab"
imp >"$D/p3.yaml" 2>/dev/null
expect_exit "re-import applied after T" 0 "$PAL" apply --prune-prefix hostp. --reason p "$D/p3.yaml"
V=$(awk -F'"' '/- id:/ {print $2}' "$D/p3.yaml" | grep vacuum)
expect_eq "... the new job is live from its apply" t "$(sql "select palisade_trigger_live('$V', null, 'hostp', now())")"
check "... and apply says so: live now, remove its entry now" grep -qE "^live +$V now \(.*remove its entry from the old system now" <<<"$OUT"
check "... not in shadow, never called until a cutover" bash -c '! grep -qE "^shadow +$1 " <<<"$2"' _ "$V" "$OUT"
expect_exit "the same file once more" 0 "$PAL" apply --prune-prefix hostp. --reason p "$D/p3.yaml"
check "... names nothing live or in shadow again" bash -c '! grep -qE "^(live|shadow) " <<<"$1"' _ "$OUT"
finish
