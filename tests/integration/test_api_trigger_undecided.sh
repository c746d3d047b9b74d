#!/usr/bin/env bash
# POST /api/v1/jobs/{id}/trigger at a past instant of a dependent job that the
# dependency planner has not decided yet (its upstream still running) is
# refused 409 scheduled-instant, with a title that says what is true: the
# dependency planner runs the instant once its upstreams end (the instant is
# past, not still to come).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "the API's refusal of an undecided past instant says what it is"
badserver_cluster it_api_trigger_undecided 1 60s
# at.up's calls are answered once HOLD is gone: its instant stays running
# (at.down's undecided) until the POST is answered, however slow the box
HOLD=$NODE_DIR/up.hold
touch "$HOLD"
apply_jobs "apply" <<YAML || { finish; exit 1; }
jobs:
  - {id: at.up, schedule: {cron: "*/10 * * * * ?"}, target: $(url "log/up?hold=$HOLD")}
  - {id: at.down, after: [{job: at.up, within: 1h}], target: $(url log/down)}
YAML
lead_shards 20 b1 || { finish; exit 1; }
OP=$("$PAL" token create --name op --role operator | tail -1)
wait_until "at.up has an instant running" 30 \
	has "select count(*) from triggers where job_id = 'at.up' and state = 'running'" || { finish; exit 1; }
T=$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from triggers where job_id = 'at.up' and state = 'running' order by scheduled_at limit 1")
sleep 1
O=$NODE_DIR/api.out
code=$(curl -s -o "$O" -w '%{http_code}' -X POST -H "Authorization: Bearer $OP" -H 'Content-Type: application/json' \
	--data "{\"at\": \"$T\", \"reason\": \"x\"}" "http://${NODE_ADMIN[b1]}/api/v1/jobs/at.down/trigger")
rm -f "$HOLD"
sed 's/^/    | /' "$O"; echo
expect_eq "409" 409 "$code"
expect_eq "type scheduled-instant" "urn:palisade:problem:scheduled-instant" "$(jq -r .type "$O")"
expect_eq "the title names the dependency planner (not 'still to come')" \
	"The dependency planner runs the instant once its upstreams end" "$(jq -r .title "$O")"
expect_eq "nothing written" 0 "$(sql "select count(*) from triggers where job_id = 'at.down' and request_id is not null")"
stop_all_nodes
finish
