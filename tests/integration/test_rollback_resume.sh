#!/usr/bin/env bash
# A `palisade resume` never wakes a trigger whose instant a roll-back or
# `shadow` handed to the old system (docs/migrating.md, "Roll-back";
# docs/operations.md, "pause / resume").  claim_ahead 3 s:
# (a) roll-back --wait 0s of a job with a trigger claimed ahead: listed in
#     flight (pausing), handed back at its instant (paused); a resume of
#     the job leaves it paused and it is never called;
# (b) the same with the resume at once, before the hand-back: it stays
#     pausing (not running), is handed back, never called;
# (c) a pause gate asks a claimed-ahead trigger to pause, then `shadow` of
#     its job before its instant: the command waits for the hand-back and
#     moves it to shadow (handed_back 1, not listed); resume: never called.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a resume after a roll-back or shadow makes no call for an instant handed to the old system"
T_START=$(date +%s)

claim_ahead_cluster rr || { finish; exit 1; }
called() { sql "select count(*) from sink_effects where trigger_id = $1"; }
state() { sql "select state from triggers where id = $1"; }

# (a) handed back (paused), then resume
wait_until "a trigger of rr.a claimed ahead" 20 has "select count(*) from triggers where job_id = 'rr.a' and $AHEAD"
ID=$(sql "select id from triggers where job_id = 'rr.a' and $AHEAD order by scheduled_at limit 1")
OUT=$("$PAL" rollback --config "$CLUSTER_CONF" --job rr.a --reason "back" --wait 0s --output json)
expect_eq "(a) the roll-back lists trigger $ID in flight (pausing)" "pausing" \
	"$(jq -r --argjson i "$ID" '.unfinished[] | select(.id == $i) | .state' <<<"$OUT")"
wait_until "(a) ... handed back at its instant (paused)" 8 has "select count(*) from triggers where id = $ID and state = 'paused'"
expect_exit "(a) resume of rr.a (it has no gate)" 0 "$PAL" resume --config "$CLUSTER_CONF" --job rr.a --reason "clear any pause"
expect_match "(a) ... says it stays paused" "1 paused trigger stay" "$OUT"
sleep 2
expect_eq "(a) trigger $ID stays paused" "paused" "$(state "$ID")"
expect_eq "(a) ... and is never called by palisade" 0 "$(called "$ID")"
OUT=$("$PAL" rollback --config "$CLUSTER_CONF" --job rr.a --reason "back again" --wait 0s --output json)
expect_eq "(a) a second roll-back hands it back and lists it" "shadow" \
	"$(jq -r --argjson i "$ID" '.unfinished[] | select(.id == $i) | .state' <<<"$OUT")"

# (b) still pausing, then resume at once
wait_until "a trigger of rr.b claimed ahead" 20 has "select count(*) from triggers where job_id = 'rr.b' and $AHEAD"
ID=$(sql "select id from triggers where job_id = 'rr.b' and $AHEAD order by scheduled_at limit 1")
"$PAL" rollback --config "$CLUSTER_CONF" --job rr.b --reason "back" --wait 0s --output json >/dev/null
expect_exit "(b) resume of rr.b at once (it has no gate)" 0 "$PAL" resume --config "$CLUSTER_CONF" --job rr.b --reason "clear any pause"
expect_eq "(b) trigger $ID stays pausing" "pausing" "$(state "$ID")"
wait_until "(b) ... handed back at its instant (paused)" 8 has "select count(*) from triggers where id = $ID and state = 'paused'"
sleep 1
expect_eq "(b) ... never called by palisade" 0 "$(called "$ID")"

# (c) asked to pause by a gate, then shadow before its instant
wait_until "a trigger of rr.c claimed ahead" 20 has "select count(*) from triggers where job_id = 'rr.c' and $AHEAD"
ID=$(sql "select id from triggers where job_id = 'rr.c' and $AHEAD order by scheduled_at limit 1")
expect_exit "(c) pause of rr.c" 0 "$PAL" pause --config "$CLUSTER_CONF" --job rr.c --reason "hold"
expect_eq "(c) trigger $ID pausing" "pausing" "$(state "$ID")"
OUT=$("$PAL" shadow --config "$CLUSTER_CONF" --job rr.c --reason "back" --output json)
echo "    shadow: $(jq -c '{since, moved, handed_back, kept: [.in_flight[] | "\(.id) \(.state)"]}' <<<"$OUT")"
expect_eq "(c) shadow waits for its hand-back and moves it to shadow" "shadow 1" "$(state "$ID") $(jq .handed_back <<<"$OUT")"
expect_eq "(c) ... not listed as palisade's" 0 "$(jq --argjson i "$ID" '[.in_flight[] | select(.id == $i)] | length' <<<"$OUT")"
expect_exit "(c) resume of rr.c" 0 "$PAL" resume --config "$CLUSTER_CONF" --job rr.c --reason "gate off"
sleep 2
expect_eq "(c) trigger $ID never called by palisade" "shadow 0" "$(state "$ID") $(called "$ID")"

FROM=$(date -u -d @$T_START +%FT%TZ) TO=$(date -u -d @$(($(date +%s) - 3)) +%FT%TZ)
expect_exit "verify over the run" 0 "$PAL" verify --config "$CLUSTER_CONF" --from "$FROM" --to "$TO"
echo "  took $(($(date +%s) - T_START)) s"
finish
