#!/usr/bin/env bash
# `palisade pause` while a trigger is claimed ahead of its instant (running,
# its call waiting for the instant on the executor).  The pause asks it to
# pause (pausing); the executor renews its leases only every 10 s here, so
# it learns of the pause from the pause's NOTIFY palisade_handback, and
# hands the trigger back at its instant without a call.  Left to the next
# renewal, the call was made after the operator's pause had returned.
# A cancel of a trigger claimed ahead: the same.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a pause or a cancel makes no call that had not started when it returned: a trigger claimed ahead is handed back without a call"

claim_ahead_cluster pa "lease: 30s, heartbeat: 10s, claim_ahead: 3s"
# ahead JOB: ID and INST (epoch s), a trigger of JOB claimed ahead and its
# instant, read in one query (the window may close between two).
ahead() {
	read -r ID INST < <(sql "select id, extract(epoch from scheduled_at)::bigint from triggers
		where job_id = '$1' and $AHEAD order by scheduled_at limit 1" | tr '|' ' ')
	[ -n "$ID" ]
}
wait_until "a trigger of pa.a claimed ahead, 1.5 s or more before its instant" 20 ahead pa.a
expect_exit "pause pa.a" 0 "$PAL" pause --job pa.a --reason "claimed ahead"
past() { [ "$(sql "select clock_timestamp() > to_timestamp($INST + 3)")" = t ]; }
wait_until "its instant has passed" 10 past
expect_eq "trigger $ID: never called, paused" "0 paused" \
	"$(sql "select count(*) from sink_effects where trigger_id = $ID") $(sql "select state from triggers where id = $ID")"
expect_eq "no call of pa.a after the pause" 0 \
	"$(sql "select count(*) from sink_effects where path like '%pa.a%' and scheduled_at >= to_timestamp($INST)")"
expect_eq "pa.b, not paused, still called" 1 \
	"$(sql "select (count(*) > 0)::int from sink_effects where path like '%pa.b%' and scheduled_at >= to_timestamp($INST)")"
# `palisade cancel --trigger` of a trigger claimed ahead: the same.
wait_until "a trigger of pa.c claimed ahead, 1.5 s or more before its instant" 20 ahead pa.c
expect_exit "cancel trigger $ID of pa.c" 0 "$PAL" cancel --trigger "$ID" --reason "claimed ahead"
wait_until "its instant has passed" 10 past
expect_eq "trigger $ID: never called, cancelled" "0 cancelled" \
	"$(sql "select count(*) from sink_effects where trigger_id = $ID") $(sql "select state from triggers where id = $ID")"
stop_node n1
finish
