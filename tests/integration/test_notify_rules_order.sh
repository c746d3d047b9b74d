#!/usr/bin/env bash
# Notify rules and the order of an apply's files: the apply takes in the
# `notify_rules:` of every one of its files before it stores any job, so a
# job whose file comes before the file with its group's or tenant's rules
# gets one version in that apply, carrying the inherited entries (not one
# without them and a second one that follows the rules).  Checked for a
# glob of a directory (the jobs' file sorts first), for a changed rule in a
# file after the jobs' file, for a file of rules and jobs after a jobs'
# file, for --dry-run, and a later file's rules are checked as before.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a job applied in the same apply as its group's or tenant's notify rules gets one version carrying them, whatever the order of the files"

fresh_db it_notify_order
"$PAL" migrate >/dev/null
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_conf "$CLUSTER_CONF"
A="http://127.0.0.1:9/a"
B="http://127.0.0.1:9/b"
job() { # id tenant group
	printf '  - id: %s\n    tenant: %s\n    group: %s\n    schedule: {cron: "0 0 0 1 1 ? 2099"}\n    target: {url: "http://127.0.0.1:9/x"}\n' "$1" "$2" "$3"
}
D=$NODE_DIR/set
mkdir -p "$D"
{
	echo "jobs:"
	job g1 acme reports
	job g2 acme reports
	job t1 billing other
	job none acme other
} >"$D/a-jobs.yaml"
cat >"$D/b-rules.yaml" <<YAML
notify_rules:
  - {group: reports, on: [failed], url: "$A", secret: "\${HOOK_SECRET}"}
  - {tenant: billing, on: [failed], url: "$B", secret: "\${HOOK_SECRET}"}
YAML
versions() { sql "select coalesce(string_agg(job_id || ':' || n, ' ' order by job_id), '') from (select job_id, count(*) n from job_versions group by job_id) x"; }
urls_of() { sql "select coalesce(string_agg(e->>'url', ' ' order by o), '') from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version, jsonb_array_elements(coalesce(v.spec->'notify', '[]')) with ordinality x(e, o) where j.job_id = '$1'"; }

# --dry-run first: it says what the apply would do
expect_exit "apply --dry-run of the directory (jobs' file first)" 0 "$PAL" apply --dry-run --config "$CLUSTER_CONF" "$D"/*.yaml
expect_eq "... no job follows the rules (each is created with them)" 0 "$(grep -c 'follows' <<<"$OUT")"
expect_match "... four created, none updated" "apply: 4 created, 0 updated, 0 unchanged" "$OUT"

expect_exit "apply the directory (jobs' file first)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$D"/*.yaml
expect_match "... the rules reported" "created   notify rule group reports $A" "$OUT"
expect_eq "... no job follows the rules" 0 "$(grep -c 'follows' <<<"$OUT")"
expect_eq "... one version per job" "g1:1 g2:1 none:1 t1:1" "$(versions)"
expect_eq "... carrying the inherited entries" "$A|$A|$B|" "$(urls_of g1)|$(urls_of g2)|$(urls_of t1)|$(urls_of none)"
expect_eq "... inherited, not their own (notify_own 0)" "0 0 0" "$(sql "select string_agg(v.notify_own::text, ' ' order by v.job_id) from job_versions v where v.job_id in ('g1', 'g2', 't1')")"
expect_eq "... one job.create each, no job.update" "4 0" "$(sql "select count(*) filter (where action = 'job.create') || ' ' || count(*) filter (where action = 'job.update') from audit_log")"

# a changed rule in a file after the jobs' file, one job changed as well
sed -i 's|0 0 0 1 1 ? 2099|0 0 0 1 2 ? 2099|' "$D/a-jobs.yaml" # every job's schedule
sed -i "s|on: \[failed\], url: \"$A\"|on: [failed, manual], url: \"$A\"|" "$D/b-rules.yaml"
expect_exit "apply the changed jobs and the changed rule (jobs' file first)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$D"/*.yaml
expect_match "... the rule updated" "updated   notify rule group reports $A" "$OUT"
expect_eq "... one more version per job" "g1:2 g2:2 none:2 t1:2" "$(versions)"
expect_eq "... g1's latest version has the changed rule" '["failed", "manual"]' "$(sql "select v.spec->'notify'->0->'on' from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id = 'g1'")"

# a file of rules and jobs after a file of jobs
cat >"$NODE_DIR/c-more.yaml" <<YAML
jobs:
$(job g3 acme ops)
YAML
cat >"$NODE_DIR/d-rules-jobs.yaml" <<YAML
notify_rules:
  - {group: ops, on: [failed], url: "$B", secret: "\${HOOK_SECRET}"}
jobs:
$(job g4 acme ops)
YAML
expect_exit "apply jobs, then a file of a rule and jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c-more.yaml" "$NODE_DIR/d-rules-jobs.yaml"
expect_match "... the rule created once" "created   notify rule group ops $B" "$OUT"
expect_eq "... the rule reported once" 1 "$(grep -c 'notify rule group ops' <<<"$OUT")"
expect_eq "... g3 and g4: one version each, with the rule" "g3:1 g4:1|$B|$B" "$(versions | tr ' ' '\n' | grep -E '^g[34]:' | paste -sd' ')|$(urls_of g3)|$(urls_of g4)"
expect_eq "... one notify_rule.create audit row for it" 1 "$(sql "select count(*) from audit_log where action = 'notify_rule.create' and scope = 'notify_rule:group:ops'")"

# a later file's rules are still checked with the files: a duplicate of an
# earlier file's rule refuses the apply, and nothing is stored
cat >"$NODE_DIR/e-dup.yaml" <<YAML
notify_rules:
  - {group: ops, on: [manual], url: "$B", secret: "\${HOOK_SECRET}"}
YAML
before="$(sql "select count(*) from job_versions")|$(sql "select count(*) from notify_rules")"
sed -i 's|0 0 0 1 1 ? 2099|0 0 0 1 3 ? 2099|' "$NODE_DIR/c-more.yaml"
expect_exit "apply a changed job and a later file with a duplicate rule" 65 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/c-more.yaml" "$NODE_DIR/d-rules-jobs.yaml" "$NODE_DIR/e-dup.yaml"
expect_match "... the duplicate named" "duplicate notify rule for group ops" "$OUT"
expect_eq "... nothing stored" "$before" "$(sql "select count(*) from job_versions")|$(sql "select count(*) from notify_rules")"
finish
