#!/usr/bin/env bash
# `apply --prune-prefix` and `mode: shadow` against the documented flows
# (docs/migrating.md "Importing again", docs/upgrades.md):
#   A. a prefix is one whole segment: `import crontab --prefix host-a.root`
#      is refused (64), and a re-import of host-a applied with
#      `--prune-prefix host-a.` retires nothing of host-a-root (root's
#      crontab on the same host) nor of host-ab; `--prune-prefix hosta`
#      (no dot) takes the id hosta.x, not hostab.x.
#   B. a 0.3.0 user's live import (0.3.0 wrote no mode; the 0.3.0 ids of a
#      command's two lines, ID and ID-2) re-imported as docs/upgrades.md
#      says: with the default `mode: shadow` the job live since 0.3.0 stays
#      live (apply names the mode as without effect on it); with `--mode
#      live` (the note's form) the command's new ids are live, outside
#      shadow, and the old ones retired.
source tests/integration/lib.sh
guarantee "a re-import applied with --prune-prefix retires only its own entries' jobs and mode: shadow stops no live job"
it_db
D=$PALISADE_TEST_TMP/pp
mkdir -p "$D"
inshadow() { sql "select count(*) from shadow_scopes where scope = 'job:$1'"; }
imp() { "$PAL" import crontab --target-url 'http://127.0.0.1:9/{job}' "$@"; }

# --- A: two files of one host, and a host of a longer name
printf '%s\n' '0 3 * * * root /usr/local/bin/backup' >"$D/etc-crontab"
printf '%s\n' '15 4 * * * /usr/local/bin/report' >"$D/root-crontab"
expect_exit "import crontab --prefix host-a.root: refused, a prefix is one segment" 64 imp --prefix host-a.root "$D/root-crontab"
expect_match "... saying so" "one segment, without '\.'" "$OUT"
expect_exit "import kubernetes --prefix a.b: refused too" 64 "$PAL" import kubernetes --prefix a.b --target-url 'http://127.0.0.1:9/{job}' "$D/etc-crontab"
imp --system --prefix host-a --group host-a "$D/etc-crontab" >"$D/a.yaml" 2>/dev/null
imp --prefix host-a-root --group host-a-root "$D/root-crontab" >"$D/aroot.yaml" 2>/dev/null
imp --prefix host-ab --group host-ab "$D/root-crontab" >"$D/ab.yaml" 2>/dev/null
expect_exit "apply host-a, host-a-root, host-ab" 0 "$PAL" apply --reason a "$D/a.yaml" "$D/aroot.yaml" "$D/ab.yaml"
ROOTJOB=$(awk -F'"' '/- id:/ {print $2}' "$D/aroot.yaml")
ABJOB=$(awk -F'"' '/- id:/ {print $2}' "$D/ab.yaml")
expect_exit "host-a's file again, dry run --prune-prefix host-a." 0 "$PAL" apply --dry-run --prune-prefix host-a. --reason again "$D/a.yaml"
check "... would retire nothing" bash -c "! grep -q 'retire ' <<<\"\$1\"" _ "$OUT"
expect_exit "... and without the dot, --prune-prefix host-a" 0 "$PAL" apply --dry-run --prune-prefix host-a --reason again "$D/a.yaml"
check "... would retire nothing either (host-ab is not of segment host-a)" bash -c "! grep -q 'retire ' <<<\"\$1\"" _ "$OUT"
expect_exit "apply --prune-prefix host-a." 0 "$PAL" apply --prune-prefix host-a. --reason again "$D/a.yaml"
expect_eq "host-a-root's and host-ab's jobs are still live" 2 "$(sql "select count(*) from jobs where job_id in ('$ROOTJOB', '$ABJOB') and retired_at is null")"
printf 'jobs:\n  - {id: hosta.x, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n  - {id: hostab.x, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$D/seg.yaml"
printf 'jobs:\n  - {id: other.y, schedule: {cron: "0 0 * * * ?"}, target: {url: "http://127.0.0.1:9/x"}}\n' >"$D/other.yaml"
expect_exit "two ids, hosta.x and hostab.x" 0 "$PAL" apply --reason seg "$D/seg.yaml"
expect_exit "--prune-prefix hosta (no dot), dry run" 0 "$PAL" apply --dry-run --prune-prefix hosta --reason seg "$D/other.yaml"
check "... would retire hosta.x" grep -q '^would retire hosta\.x ' <<<"$OUT"
check "... and not hostab.x" bash -c "! grep -q 'hostab\.x' <<<\"\$1\"" _ "$OUT"

# --- B: a 0.3.0 user's live import, re-imported per docs/upgrades.md
printf '%s\n' '*/5 * * * * /usr/local/bin/sync' '0 1 * * * /usr/local/bin/dump' '0 13 * * * /usr/local/bin/dump' >"$D/crontab"
imp --prefix crontab --mode live "$D/crontab" >"$D/old.yaml" 2>/dev/null
# 0.3.0 numbered the twins ID, ID-2 in file order (what its binary gives)
sed -E "s/(- id: \"crontab\.usr-local-bin-dump-[0-9a-f]{8})_[0-9a-f]{8}\"/\1\"/" "$D/old.yaml" | awk '/- id: "crontab\.usr-local-bin-dump-/ {n++; if (n==2) sub(/"$/, "-2\"")} {print}' >"$D/old030.yaml"
expect_exit "apply the 0.3.0-style live import" 0 "$PAL" apply --reason "0.3.0" "$D/old030.yaml"
SYNC=$(awk -F'"' '/- id:/ {print $2}' "$D/old.yaml" | grep sync)
expect_eq "... the sync job is live (not in shadow)" 0 "$(inshadow "$SYNC")"
imp --prefix crontab "$D/crontab" >"$D/new.yaml" 2>/dev/null
expect_exit "re-import with the default mode: shadow, dry run" 0 "$PAL" apply --dry-run --prune-prefix crontab. --reason "0.4.0" "$D/new.yaml"
check "... names mode: shadow as without effect on the live job" grep -qE "^live +$SYNC \(mode: shadow has no effect" <<<"$OUT"
expect_exit "... applied" 0 "$PAL" apply --prune-prefix crontab. --reason "0.4.0" "$D/new.yaml"
check "... says so" grep -qE "^live +$SYNC \(mode: shadow has no effect" <<<"$OUT"
expect_eq "a job live since 0.3.0 (its cron line long gone) is not put in shadow" 0 "$(inshadow "$SYNC")"
expect_eq "... its instants from now on are live (palisade_trigger_live)" t "$(sql "select palisade_trigger_live('$SYNC', null, 'default', now() + interval '1 minute')")"
# the same upgrade with --mode live, as docs/upgrades.md says
it_db import_prune_prefix_b
expect_exit "the 0.3.0-style live import on a fresh cluster" 0 "$PAL" apply --reason "0.3.0" "$D/old030.yaml"
imp --prefix crontab --mode live "$D/crontab" >"$D/new-live.yaml" 2>/dev/null
expect_exit "re-import with --mode live, applied with --prune-prefix crontab." 0 "$PAL" apply --prune-prefix crontab. --reason "0.4.0" "$D/new-live.yaml"
expect_eq "the dump command has two live jobs outside shadow, its new ids" 2 \
	"$(sql "select count(*) from jobs j where j.job_id ~ '^crontab\.usr-local-bin-dump-[0-9a-f]{8}_[0-9a-f]{8}$' and j.retired_at is null and not exists (select 1 from shadow_scopes s where s.scope = 'job:' || j.job_id)")"
expect_eq "... its 0.3.0 ids retired" 2 "$(sql "select count(*) from jobs where job_id ~ '^crontab\.usr-local-bin-dump-[0-9a-f]{8}(-2)?$' and retired_at is not null")"
expect_eq "nothing in shadow" 0 "$(sql "select count(*) from shadow_scopes")"
finish
