#!/usr/bin/env bash
# Imported ids across clusters and a re-import after a cut-over
# (docs/migrating.md):
#   C. two Kubernetes clusters' CronJobs of one namespace and name, imported
#      with `--prefix` (the cluster) and each its own group: distinct ids
#      CLUSTER.NAMESPACE.NAME; cluster B's apply with `--prune-prefix
#      cluster-b.` neither updates nor retires a job of cluster A.
#   D. a crontab moved job by job (`cutover --job`), the moved entry then
#      removed from the crontab: the re-import applied with `--prune-prefix`
#      leaves the cut-over job live and names it as kept; `palisade delete`
#      still retires it.
source tests/integration/lib.sh
guarantee "an import of one cluster never updates or retires another cluster's job; a re-import's prune never retires a job a cut-over made palisade's"
it_db
D=$PALISADE_TEST_TMP/cl
mkdir -p "$D"
cj() { # NAME SCHEDULE IMAGE
	printf -- '---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: %s, namespace: billing}\nspec:\n  schedule: "%s"\n  timeZone: UTC\n  startingDeadlineSeconds: 300\n  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: "%s"}], restartPolicy: OnFailure}}}}\n' "$@"
}
{ cj invoice "0 2 * * *" acme/invoice:1; cj cleanup "0 3 * * *" acme/cleanup-a:1; } >"$D/a.yaml"
cj cleanup "30 4 * * *" acme/cleanup-b:1 >"$D/b.yaml"
k() { "$PAL" import kubernetes --prefix "$1" --group "$1" --target-url 'http://127.0.0.1:9/{job}' "$2"; }
k cluster-a "$D/a.yaml" >"$D/ja.yaml" 2>/dev/null
k cluster-b "$D/b.yaml" >"$D/jb.yaml" 2>/dev/null
expect_eq "ids CLUSTER.NAMESPACE.NAME" "cluster-a.billing.cleanup cluster-a.billing.invoice cluster-b.billing.cleanup" \
	"$(awk -F'"' '/- id:/ {print $2}' "$D/ja.yaml" "$D/jb.yaml" | sort | xargs)"
expect_eq "without --prefix: NAMESPACE.NAME as before" "billing.cleanup" \
	"$("$PAL" import kubernetes --target-url 'http://127.0.0.1:9/{job}' "$D/b.yaml" 2>/dev/null | awk -F'"' '/- id:/ {print $2}')"
expect_exit "apply cluster A" 0 "$PAL" apply --reason a "$D/ja.yaml"
expect_exit "apply cluster B, dry run with --prune-prefix cluster-b." 0 "$PAL" apply --dry-run --prune-prefix cluster-b. --reason b "$D/jb.yaml"
check "... updates no job of cluster A" bash -c "! grep -qE '^(updated|would update) ' <<<\"\$1\"" _ "$OUT"
check "... retires no job of cluster A" bash -c "! grep -q '^would retire' <<<\"\$1\"" _ "$OUT"
expect_exit "apply cluster B with --prune-prefix cluster-b." 0 "$PAL" apply --prune-prefix cluster-b. --reason b "$D/jb.yaml"
expect_eq "cluster A's cleanup still 0 3 * * * in group cluster-a, B's its own" "cluster-a.billing.cleanup|0 3 * * *|cluster-a cluster-b.billing.cleanup|30 4 * * *|cluster-b" \
	"$(sql "select string_agg(j.job_id || '|' || v.cron || '|' || j.resource_group, ' ' order by j.job_id) from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.retired_at is null and j.job_id like '%.cleanup'")"
expect_eq "three live jobs" 3 "$(sql "select count(*) from jobs where retired_at is null")"

# --- D: a crontab moved job by job (no --group: `cutover --job ID`)
printf '%s\n' '*/5 * * * * /usr/local/bin/sync' '0 4 * * * /usr/local/bin/report' '0 5 * * * /usr/local/bin/gone' >"$D/crontab"
imp() { "$PAL" import crontab --prefix hostc --target-url 'http://127.0.0.1:9/{job}' "$1"; }
imp "$D/crontab" >"$D/c1.yaml" 2>/dev/null
expect_exit "apply hostc (shadow)" 0 "$PAL" apply --reason c "$D/c1.yaml"
SYNC=$(awk -F'"' '/- id:/ {print $2}' "$D/c1.yaml" | grep sync)
GONE=$(awk -F'"' '/- id:/ {print $2}' "$D/c1.yaml" | grep gone)
AT=$(date -u -d @$(( $(date +%s) + 2 )) +%FT%TZ)
expect_exit "cutover --job $SYNC" 0 "$PAL" cutover --job "$SYNC" --at "$AT" --reason "sync moves"
sleep 3
expect_eq "... its instants are live now (palisade_trigger_live)" t "$(sql "select palisade_trigger_live('$SYNC', null, 'default', now())")"
# sync's cron line is removed (step 5), gone's entry dropped while in shadow, report's schedule edited
printf '%s\n' '15 4 * * * /usr/local/bin/report' >"$D/crontab"
imp "$D/crontab" >"$D/c2.yaml" 2>/dev/null
expect_exit "re-import, dry run --prune-prefix hostc." 0 "$PAL" apply --dry-run --prune-prefix hostc. --reason c "$D/c2.yaml"
check "... names the cut-over job as kept" grep -qE "^kept +$SYNC \(not in the file, but cut over" <<<"$OUT"
check "... would retire the entry dropped while in shadow" grep -qE "^would retire $GONE " <<<"$OUT"
expect_exit "re-import applied with --prune-prefix hostc." 0 "$PAL" apply --prune-prefix hostc. --reason c "$D/c2.yaml"
check "... names the cut-over job as kept" grep -qE "^kept +$SYNC " <<<"$OUT"
expect_eq "the job cut over (its cron line gone) is still live, not retired" 1 "$(sql "select count(*) from jobs where job_id = '$SYNC' and retired_at is null")"
expect_eq "the entry dropped while in shadow: retired" 1 "$(sql "select count(*) from jobs where job_id = '$GONE' and retired_at is not null")"
expect_exit "palisade delete retires the kept job" 0 "$PAL" delete --reason "gone for good" "$SYNC"
expect_eq "... retired" 1 "$(sql "select count(*) from jobs where job_id = '$SYNC' and retired_at is not null")"
finish
