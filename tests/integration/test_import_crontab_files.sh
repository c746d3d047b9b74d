#!/usr/bin/env bash
# Which crontab the importer reads (docs/migrating.md, "crontab"): a file of
# /etc/cron.d named by a relative path is a system crontab (its user
# column read) with the same ids as by its absolute path; `import crontab`
# needs --prefix, so that two hosts' files of one name (each host's
# /var/spool/cron/crontabs/root) never get the same ids.  (A name cron
# ignores in /etc/cron.d is tests/unit/test_import.c's: it needs a file
# there.)
source tests/integration/lib.sh
guarantee "a crontab is read as the cron daemon reads it, wherever it is named from, and two hosts' files never share ids"
D=$PALISADE_TEST_TMP/ct
mkdir -p "$D"
URL='http://r/{job}'
body_of() { python3 -c 'import sys, yaml, json
for j in yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader)["jobs"]:
    b = json.loads(j["target"]["body"]); print(b.get("user", "-"), "|", b["command"])' "$1"; }
F=$(cd /etc/cron.d 2>/dev/null && ls | grep -E '^[A-Za-z0-9_-]+$' | head -1)
if [ -n "$F" ] && grep -qE '^[0-9*@]' "/etc/cron.d/$F"; then
	"$PAL" import crontab --prefix h --timezone UTC --target-url "$URL" "/etc/cron.d/$F" >"$D/abs.yaml" 2>/dev/null
	( cd /etc/cron.d && "$PAL" import crontab --prefix h --timezone UTC --target-url "$URL" "$F" ) >"$D/rel.yaml" 2>/dev/null
	( cd /etc && "$PAL" import crontab --prefix h --timezone UTC --target-url "$URL" "./cron.d/$F" ) >"$D/dot.yaml" 2>/dev/null
	check "/etc/cron.d/$F has entries with a user" grep -q '"user": ' "$D/abs.yaml"
	expect_eq "by its name from /etc/cron.d: the user column read, the same ids" \
		"$(body_of "$D/abs.yaml"; grep -- '- id:' "$D/abs.yaml")" "$(body_of "$D/rel.yaml"; grep -- '- id:' "$D/rel.yaml")"
	expect_eq "... and as ./cron.d/$F from /etc" \
		"$(body_of "$D/abs.yaml"; grep -- '- id:' "$D/abs.yaml")" "$(body_of "$D/dot.yaml"; grep -- '- id:' "$D/dot.yaml")"
else
	echo "    (no crontab in /etc/cron.d here: the relative path is the unit test's only)"
fi

mkdir -p "$D/hosta" "$D/hostb"
printf '%s\n' '0 1 * * * /usr/local/bin/backup' >"$D/hosta/root"
printf '%s\n' '0 13 * * * /usr/local/bin/backup' >"$D/hostb/root"
expect_exit "import crontab without --prefix: usage" 64 "$PAL" import crontab --timezone UTC --target-url "$URL" "$D/hosta/root"
check "... naming --prefix and the default an earlier import used" grep -q -- "--prefix NAME.*file's name" <<<"$OUT"
expect_exit "... stdin too" 64 "$PAL" import crontab --timezone UTC --target-url "$URL" - <"$D/hosta/root"
"$PAL" import crontab --prefix hosta --timezone UTC --target-url "$URL" "$D/hosta/root" >"$D/a.yaml" 2>/dev/null
"$PAL" import crontab --prefix hostb --timezone UTC --target-url "$URL" "$D/hostb/root" >"$D/b.yaml" 2>/dev/null
check "two hosts' root crontabs, each with its prefix: different ids" \
	test "$(grep -- '- id:' "$D/a.yaml")" != "$(grep -- '- id:' "$D/b.yaml")"
expect_exit "--mode other than shadow or live: usage" 64 "$PAL" import crontab --prefix hosta --mode dry --target-url "$URL" "$D/hosta/root"
"$PAL" import crontab --prefix hosta --mode live --timezone UTC --target-url "$URL" "$D/hosta/root" >"$D/live.yaml" 2>"$D/live.report"
check "--mode live: no mode written, no shadow hint" bash -c "! grep -q 'mode:' '$D/live.yaml' && ! grep -q 'in shadow' '$D/live.report'"
finish
