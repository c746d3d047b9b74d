#!/usr/bin/env bash
# A manual run of a paused job waits for the resume (and may fail on its
# deadline first): `palisade trigger` says so on stderr and in its JSON
# (held_by), on the database and through the API; a job not paused gets no
# note and an empty held_by.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "trigger of a job held by a pause (its own, its group's, its tenant's, global) names the pause: the run waits for the resume"
fresh_db it_trigger_paused
"$PAL" migrate >/dev/null
F=$PALISADE_TEST_TMP/test_trigger_paused.j.yaml
cat >"$F" <<'YAML'
jobs:
  - {id: p.one, group: pg, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
  - {id: p.two, schedule: {cron: "0 0 3 * * ?"}, target: {url: "http://127.0.0.1:9/x"}}
YAML
expect_exit "apply" 0 "$PAL" apply "$F"
E=$PALISADE_TEST_TMP/test_trigger_paused.err
expect_exit "pause --job p.one" 0 "$PAL" pause --job p.one --reason hold
"$PAL" trigger --job p.one --reason "run now" >/dev/null 2>"$E"
expect_match "trigger of the paused job says the run waits for the resume" \
	'note: job p\.one is held by job:p\.one \(paused since [0-9T:-]+Z: hold\): the run waits for the resume' "$(cat "$E")"
expect_exit "pause --group pg too" 0 "$PAL" pause --group pg --reason "group hold"
"$PAL" trigger --job p.one --reason "run now" --output json >"$PALISADE_TEST_TMP/test_trigger_paused.one" 2>"$E"
expect_eq "trigger --output json: held_by names both pauses" "group:pg job:p.one" "$(jq -r '[.held_by[].scope] | join(" ")' "$PALISADE_TEST_TMP/test_trigger_paused.one")"
expect_eq "... the note, a line for each" 2 "$(grep -c 'the run waits for the resume' "$E")"
"$PAL" trigger --job p.two --reason "run now" --output json >"$PALISADE_TEST_TMP/two" 2>"$E"
expect_eq "a job not paused: no note" "" "$(cat "$E")"
expect_eq "... and held_by is empty" "[]" "$(jq -c .held_by "$PALISADE_TEST_TMP/two")"
SHARDS=2 write_conf "$CLUSTER_CONF"
start_node s1
wait_until "node ready" 20 bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' http://${NODE_ADMIN[s1]}/readyz)\" = 200 ]"
OP=$("$PAL" token create --name op --role operator | tail -1)
remote() { env -u PALISADE_PG PALISADE_SERVER="http://${NODE_ADMIN[s1]}" PALISADE_TOKEN="$OP" "$PAL" "$@"; }
remote trigger --job p.one --reason "run now" >"$PALISADE_TEST_TMP/r1" 2>"$E"
expect_match "through the API: the same note" 'note: job p\.one is held by group:pg \(paused since [0-9T:-]+Z: group hold\)' "$(cat "$E")"
expect_match "... and the answer's held_by" 'held_by: .*job:p\.one' "$(cat "$PALISADE_TEST_TMP/r1")"
expect_exit "resume --job p.one" 0 "$PAL" resume --job p.one
expect_exit "resume --group pg" 0 "$PAL" resume --group pg
remote trigger --job p.one --reason "run now" --output json >"$PALISADE_TEST_TMP/r2" 2>"$E"
expect_eq "through the API, resumed: no note" "" "$(cat "$E")"
expect_eq "... held_by is empty" "[]" "$(jq -c .held_by "$PALISADE_TEST_TMP/r2")"
stop_node s1
finish
