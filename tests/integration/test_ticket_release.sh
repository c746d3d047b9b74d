#!/usr/bin/env bash
# A quarantine ticket's one allowed action, release, resolves it: through
# the CLI (`tickets resolve N --action release`) and through the API
# (POST /api/v1/tickets/N/resolve), the job leaves quarantine as `palisade
# release` makes it (audited job.release), the ticket is resolved with the
# action, and the job is planned again.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "operator intent - a ticket's allowed action resolves it: release ends the quarantine it names"

it_db
SHARDS=1
write_conf "$CLUSTER_CONF"
{
	echo "jobs:"
	for j in poison qz.good1; do
		echo "  - {id: $j, schedule: {cron: \"* * * * * ?\"}, misfire: skip, target: {url: \"http://127.0.0.1:9/x\"}}"
	done
} >"$NODE_DIR/jobs.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
start_node q1
wait_until "shard led" 20 all_shards_led
all_planned() { [ "$(sql "select count(distinct job_id) from trigger_jobs")" = 2 ]; }
wait_until "every job planned" 20 all_planned
REF=$(sql "select ref from jobs where job_id = 'poison'")
quarantined() { [ "$(sql "select count(*) from quarantine where job_id = 'poison'")" = 1 ]; }
poison() { # quarantine the job: its planning rows are refused until the constraint goes
	sql "alter table triggers add constraint it_poison check (job_ref <> $REF) not valid" >/dev/null
	wait_until "the refused job is quarantined" 30 quarantined
	sql "alter table triggers drop constraint it_poison" >/dev/null
}
planned_after() { [ "$(sql "select count(*) from trigger_jobs where job_id = 'poison' and scheduled_at > '$1'")" -ge 1 ]; }

poison
TK=$(sql "select ticket_id from quarantine where job_id = 'poison'")
expect_eq "its ticket allows release" "{release}" "$(sql "select allowed_actions from tickets where id = $TK")"
T0=$(sql "select max(scheduled_at) from trigger_jobs where job_id = 'poison'")
expect_exit "tickets resolve with its one allowed action (release)" 0 "$PAL" tickets resolve "$TK" --action release --reason "constraint dropped"
expect_eq "... the job left quarantine, the ticket is resolved with the action" "0|resolved release" \
	"$(sql "select count(*) from quarantine where job_id = 'poison'")|$(sql "select state || ' ' || resolution from tickets where id = $TK")"
expect_eq "... audited as a release and as the ticket's resolution" "job.release,ticket.resolve" \
	"$(sql "select string_agg(action, ',' order by action) from audit_log where action in ('job.release', 'ticket.resolve')")"
wait_until "... the job is planned again" 30 planned_after "$T0"

poison
TK2=$(sql "select ticket_id from quarantine where job_id = 'poison'")
OP=$("$PAL" token create --name ops --role operator | tail -1)
st=$(curl -s -o "$NODE_DIR/ans" -w '%{http_code}' -X POST -H "Authorization: Bearer $OP" -H 'Content-Type: application/json' \
	--data '{"reason": "constraint dropped", "action": "release"}' "http://${NODE_ADMIN[q1]}/api/v1/tickets/$TK2/resolve")
expect_eq "the API resolves a second quarantine ticket with release: 200" 200 "$st"
expect_eq "... the job left quarantine again, the ticket resolved" "0|resolved release" \
	"$(sql "select count(*) from quarantine where job_id = 'poison'")|$(sql "select state || ' ' || resolution from tickets where id = $TK2")"
T1=$(sql "select max(scheduled_at) from trigger_jobs where job_id = 'poison'")
wait_until "... and it is planned again" 30 planned_after "$T1"
finish
