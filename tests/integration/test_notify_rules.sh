#!/usr/bin/env bash
# Notify rules: a group's and a tenant's `notify_rules:` reach the jobs of
# the scope that have no notify of their own, signed like a job's own
# entries; a url that gets an event from both levels gets it once; a job
# with `notify: []` inherits nothing; re-applying the jobs changes nothing;
# a changed rule, applied in a file without the jobs, gives the jobs of its
# scope new versions (plan diff and --dry-run name them first) and the next
# events follow it; a removed rule stops.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "notify - a group's or tenant's notify rule reaches every job of its scope as its own entries would, and a change or removal of the rule reaches them without their files"
T_START=$(date +%s)

it_db
A_PORT=$(free_port)
B_PORT=$(free_port)
A_PID= B_PID=
trap 'stop_all_nodes; for p in $A_PID $B_PID; do kill "$p" 2>/dev/null; done' EXIT
export HOOK_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
write_exec_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}" "notify: {interval: 200ms, backoff_max: 1s}"
DEAD=127.0.0.1:$(free_port) # nothing listens: every call fails
A="http://127.0.0.1:$A_PORT/hooks"
B="http://127.0.0.1:$B_PORT/hooks"
cat >"$NODE_DIR/rules.yaml" <<YAML
notify_rules:
  - {group: reports, on: [failed], url: "$A", secret: "\${HOOK_SECRET}"}
  - {tenant: billing, on: [failed, manual], url: "$B", secret: "\${HOOK_SECRET}"}
  - {tenant: billing, on: [failed], url: "$A", secret: "\${HOOK_SECRET}"}
YAML
job() { # id tenant group [extra]
	printf '  - id: %s\n    tenant: %s\n    group: %s\n    schedule: {cron: "0 0 0 1 1 ? 2099"}\n    target: {url: "http://%s/x", timeout: 1s}\n    retry: {max_attempts: 1}\n%s' \
		"$1" "$2" "$3" "$DEAD" "${4:+    $4
}"
}
{
	echo "jobs:"
	job both billing reports
	job tenanted billing other
	job grouped acme reports
	job optout billing reports "notify: []"
	job outside acme other
} >"$NODE_DIR/jobs.yaml"

expect_exit "apply the rules with the jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rules.yaml" "$NODE_DIR/jobs.yaml"
expect_match "... the rules reported" "created   notify rule group reports $A" "$OUT"
[ "$T_FAILS" = 0 ] || { echo "$OUT"; finish; exit 1; }
notify_of() { sql "select coalesce(v.spec->'notify', '[]') || jsonb_build_array(v.notify_own) from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version where j.job_id = '$1'"; }
urls_of() { sql "select coalesce(string_agg(e->>'url' || ' ' || (e->'on')::text, ' | ' order by o), '') from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version, jsonb_array_elements(coalesce(v.spec->'notify', '[]')) with ordinality x(e, o) where j.job_id = '$1'"; }
expect_eq "both: the group's A (failed), then the tenant's B; A's failed once" \
	"$A [\"failed\"] | $B [\"failed\", \"manual\"]" "$(urls_of both)"
# one level's rules in the order of their urls
want=$(printf '%s\n' "$B [\"failed\", \"manual\"]" "$A [\"failed\"]" | LC_ALL=C sort | paste -sd'|' | sed 's/|/ | /')
expect_eq "tenanted: the tenant's B and A (by url)" "$want" "$(urls_of tenanted)"
expect_eq "grouped: the group's A" "$A [\"failed\"]" "$(urls_of grouped)"
expect_eq "optout and outside: none" "|" "$(urls_of optout)|$(urls_of outside)"
expect_eq "notify_own: 0 inherited-only, -1 for notify: [], 0 outside" "0 0 0 -1 0" \
	"$(sql "select string_agg(coalesce(v.notify_own::text, 'null'), ' ' order by array_position(array['both','tenanted','grouped','optout','outside'], j.job_id)) from jobs j join job_versions v on v.job_id = j.job_id and v.version = j.latest_version")"
expect_eq "three notify_rule.create audit rows" 3 "$(sql "select count(*) from audit_log where action = 'notify_rule.create'")"
expect_exit "re-apply the jobs alone" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
expect_eq "... changes nothing (the rules persist, the digests match)" 5 "$(grep -c '^unchanged' <<<"$OUT")"
expect_exit "re-apply rules and jobs" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rules.yaml" "$NODE_DIR/jobs.yaml"
expect_eq "... changes nothing" 8 "$(grep -c '^unchanged' <<<"$OUT")"

python3 tests/integration/webhook_receiver.py --port "$A_PORT" --log "$NODE_DIR/a.jsonl" &
A_PID=$!
python3 tests/integration/webhook_receiver.py --port "$B_PORT" --log "$NODE_DIR/b.jsonl" &
B_PID=$!
lead_shards 20 n1 || { finish; exit 1; }

failed_n() { sql "select count(*) from trigger_jobs where job_id = '$1' and state = 'failed'"; }
fail_all() { # round: trigger each job once and wait for the failures
	for j in both tenanted grouped optout outside; do
		"$PAL" trigger --config "$CLUSTER_CONF" --job "$j" --reason "round $1" >/dev/null
	done
	for j in both tenanted grouped optout outside; do
		wait_until "$j failed ($1)" 15 eval '[ "$(failed_n '"$j"')" = '"$1"' ]'
	done
	wait_until "round $1 delivered" 20 eval '[ "$(sql "select count(*) from notifications where delivered_at is null")" = 0 ]'
}
got() { # receiver-log job: events of the job, in arrival order of first delivery
	jq -r "select(.status == 200 and .body.data.job == \"$2\") | .id" "$NODE_DIR/$1.jsonl" 2>/dev/null | sort -u | grep -c . || true
}
fail_all 1
expect_eq "round 1 at A: both 1 (not 2), tenanted 1, grouped 1, optout 0, outside 0" "1 1 1 0 0" \
	"$(got a both) $(got a tenanted) $(got a grouped) $(got a optout) $(got a outside)"
expect_eq "round 1 at B: both 1, tenanted 1, grouped 0" "1 1 0" "$(got b both) $(got b tenanted) $(got b grouped)"
expect_eq "every request signed with the secret" "true" "$(cat "$NODE_DIR"/a.jsonl "$NODE_DIR"/b.jsonl | jq -s 'all(.sig_ok)')"

# the tenant's B rule changes (manual only), in a file without the jobs
cat >"$NODE_DIR/rules2.yaml" <<YAML
notify_rules:
  - {tenant: billing, on: [manual], url: "$B", secret: "\${HOOK_SECRET}"}
YAML
expect_exit "plan diff of the changed rule" 0 "$PAL" plan diff "$NODE_DIR/rules2.yaml"
expect_match "... shows both as following" "both.*changed.*follows notify rules of group reports or tenant billing" "$(tr '\n' ' ' <<<"$OUT")"
expect_match "... and tenanted" "tenanted.*changed.*follows notify rules" "$(tr '\n' ' ' <<<"$OUT")"
expect_eq "... not optout" 0 "$(grep -c optout <<<"$OUT")"
before=$(sql "select count(*) from job_versions")
expect_exit "apply --dry-run of the changed rule" 0 "$PAL" apply --dry-run --config "$CLUSTER_CONF" "$NODE_DIR/rules2.yaml"
expect_match "... names the followers" "updated +both v2 \(follows its group's or tenant's notify rules\)" "$OUT"
expect_eq "... and writes nothing" "$before" "$(sql "select count(*) from job_versions")"
expect_exit "apply the changed rule" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rules2.yaml"
expect_match "... reported" "updated   notify rule tenant billing $B" "$OUT"
expect_eq "... both and tenanted get v2, the others keep v1" "2 2 1 1 1" \
	"$(sql "select string_agg(latest_version::text, ' ' order by array_position(array['both','tenanted','grouped','optout','outside'], job_id)) from jobs")"
expect_eq "... both: A failed, B manual now" "$A [\"failed\"] | $B [\"manual\"]" "$(urls_of both)"
expect_eq "... audited" "1 2" "$(sql "select count(*) filter (where action = 'notify_rule.update') || ' ' || count(*) filter (where action = 'job.update') from audit_log")"
wait_until "the controller runs v2 of both" 15 eval '[ "$(sql "select active_version from jobs where job_id = '\''both'\''")" = 2 ]'
fail_all 2
expect_eq "round 2 at B: nothing more (the rule asks for manual only)" "1 1" "$(got b both) $(got b tenanted)"
expect_eq "round 2 at A: one more each for both, tenanted, grouped" "2 2 2 0" "$(got a both) $(got a tenanted) $(got a grouped) $(got a optout)"

# A's rules removed: the group's and the tenant's
cat >"$NODE_DIR/rules3.yaml" <<YAML
notify_rules:
  - {group: reports, url: "$A", remove: true}
  - {tenant: billing, url: "$A", remove: true}
YAML
expect_exit "apply the removals" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rules3.yaml"
expect_match "... reported" "removed   notify rule group reports $A" "$OUT"
expect_eq "... no rule of A left, two deletes audited" "0 2" "$(sql "select count(*) from notify_rules where url = '$A'") $(sql "select count(*) from audit_log where action = 'notify_rule.delete'")"
expect_eq "... both keeps B only" "$B [\"manual\"]" "$(urls_of both)"
expect_eq "... grouped has none" "" "$(urls_of grouped)"
expect_exit "apply the removals again" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rules3.yaml"
expect_match "... changes nothing" "unchanged notify rule group reports" "$OUT"
wait_until "the controller runs v3 of grouped's scope" 15 eval '[ "$(sql "select count(*) from jobs where active_version <> latest_version")" = 0 ]'
fail_all 3
expect_eq "round 3 at A: nothing more" "2 2 2" "$(got a both) $(got a tenanted) $(got a grouped)"
expect_eq "no notification of optout or outside at all" 0 "$(sql "select count(*) from notifications where job_id in ('optout', 'outside')")"
echo "    figure: took $(($(date +%s) - T_START)) s"
finish
