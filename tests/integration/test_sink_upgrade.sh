#!/usr/bin/env bash
# The sink's schema step 6 (sql/sink/006_keys.sql) on a database the
# previous release's sink wrote: the old tables are renamed, not rewritten;
# every key recorded before keeps its effect, fence and answer.  A key is
# adopted into sink_keys/sink_applies when a request names it (replayed,
# never applied again; a stale token still refused; a chunked effect goes
# on from its progress), and the rest by a retention pass; until then the
# views sink_effects, sink_fences and sink_ledger show them in the old
# columns, and the status query finds them.
source tests/integration/lib.sh
guarantee "G5 + G4 - across the sink's schema step 6 on a database the previous release's sink wrote: one effect per key (replays, never a second apply), a stale token still refused per key, chunked work resumed from its progress, nothing lost while the old tables drain"
t0=$SECONDS
source "$(dirname "${BASH_SOURCE[0]}")/sink_lib.sh" # start_sink, post, ledger, effects, ...
source tests/integration/releases.sh
OLD_TAG=${PALISADE_OLD_TAG:-v0.2.0}
OLD_TREE=${PALISADE_OLD_TREE:-/tmp/palisade-${OLD_TAG#v}-build}
build_release "$OLD_TAG" "ops/releases/palisade-${OLD_TAG#v}.tar.xz" "$OLD_TREE" ||
	{ fail "the previous release $OLD_TAG builds"; finish; exit 1; }
NEW_SINK=$SINK

# ---- the previous release's sink records keys -------------------------------------
fresh_db it_sink_upgrade
SINK=$OLD_TREE/bin/palisade-sink start_sink old --pg "$PALISADE_PG"
post plain 5 '{"v":1}' -H 'Palisade-Trigger: 41' -H 'Palisade-Attempt: 1' -H 'Palisade-Scheduled-At: 2026-11-30T08:00:00Z'
plain_body=$BODY
expect_eq "the old sink applies a key" 201 "$CODE"
post fenced 3 '{"v":2}'
post fenced 7 '{"v":2}'
expect_eq "... and replays another with a higher token (its fence 7, its effect's 3)" "201 true" "$CODE $(hdr Idempotent-Replayed)"
C=(-H 'Palisade-Test-Chunks: 3')
post chunked 10 job "${C[@]}"
post chunked 10 job "${C[@]}" -H 'Palisade-Checkpoint: 1'
expect_eq "... and two chunks of three of a chunked effect" "200 true 2" "$CODE $(jq -r '"\(.has_more) \(.checkpoint)"' <<<"$BODY")"
for i in 1 2 3 4 5; do post "idle-$i" 1 "{\"i\":$i}"; done
stop_sink
expect_eq "old schema: 5 steps, 8 keys, 9 ledger rows" "5 8 9" \
	"$(sql "select (select max(version) from sink_schema_migrations), (select count(*) from sink_effects), (select count(*) from sink_ledger)" | tr '|' ' ')"

# ---- this tree's sink: step 6, then the keys one by one ---------------------------
SINK=$NEW_SINK start_sink new --pg "$PALISADE_PG" --key-retention 0
expect_eq "step 6 applied: the old tables renamed, not copied" "6 8 0" \
	"$(sql "select (select max(version) from sink_schema_migrations), (select count(*) from sink_effects_v1), (select count(*) from sink_keys)" | tr '|' ' ')"
expect_eq "the views show the old keys in the old columns" "8 9 8" \
	"$(sql "select (select count(*) from sink_effects), (select count(*) from sink_ledger), (select count(*) from sink_fences)" | tr '|' ' ')"
expect_exit "the previous release's sink refuses the database now" 70 "$OLD_TREE/bin/palisade-sink" --migrate-only --pg "$PALISADE_PG"
get_key plain
expect_eq "the status query finds a key not adopted yet, with its stored answer" "200 $plain_body" "$CODE $(jq -c -r .body <<<"$BODY")"
post plain 5 '{"v":1}'
expect_eq "G5: a retry of a key the old sink applied replays it" "201 true" "$CODE $(hdr Idempotent-Replayed)"
expect_eq "G5: ... with the old sink's answer" "$plain_body" "$BODY"
expect_eq "... adopted: its row moved to sink_keys, its ledger row with it" "1 0 1" \
	"$(sql "select (select count(*) from sink_keys where idempotency_key = 'plain'), (select count(*) from sink_effects_v1 where idempotency_key = 'plain'), (select count(*) from sink_applies a join sink_keys k on k.id = a.key_id where k.idempotency_key = 'plain')" | tr '|' ' ')"
expect_eq "... keeping trigger, attempt and instant" "41|1|2026-11-30 08:00:00+00" \
	"$(sql "select trigger_id, attempt, scheduled_at at time zone 'UTC' || '+00' from sink_effects where idempotency_key = 'plain'")"
post plain 5 '{"v":9}'
expect_eq "G5: ... and its digest (another payload: 422)" 422 "$CODE"
post fenced 5 '{"v":2}'
expect_eq "G4: a token below the fence the old sink kept is refused" "409 7" "$CODE $(hdr Palisade-Stale-Token)"
expect_eq "... and the fence and the effect's token are both kept" "7 3" \
	"$(sql "select highest, fence from sink_keys where idempotency_key = 'fenced'" | tr '|' ' ')"
post chunked 11 job "${C[@]}" -H 'Palisade-Checkpoint: 2'
expect_eq "a chunked effect goes on from the old sink's progress" "200 false 3" "$CODE $(jq -r '"\(.has_more) \(.checkpoint)"' <<<"$BODY")"
expect_eq "G5: one ledger row per chunk across the upgrade" "1,2,3" \
	"$(sql "select string_agg(chunk::text, ',' order by chunk) from sink_ledger where idempotency_key = 'chunked'")"
post new-key 1 '{"v":3}'
expect_eq "a new key applies as before" "201 1" "$CODE $(ledger new-key)"

# ---- the rest drains in bounded slices ---------------------------------------------
stop_sink
expect_exit "a retention pass adopts the rest, two keys per statement" 0 \
	"$NEW_SINK" --retention-once --key-retention 0 --retention-slice 2 --pg "$PALISADE_PG"
expect_match "... and says so" "0 keys forgotten \(0 ledger rows\), 5 adopted from the old tables" "$OUT"
expect_eq "the old tables are empty" "0 0 0" \
	"$(sql "select (select count(*) from sink_fences_v1), (select count(*) from sink_effects_v1), (select count(*) from sink_ledger_v1)" | tr '|' ' ')"
expect_eq "G5: every key once, every ledger row once" "9 11 0" \
	"$(sql "select (select count(*) from sink_keys), (select count(*) from sink_ledger), (select count(*) from (select idempotency_key, chunk from sink_ledger group by 1, 2 having count(*) > 1) d)" | tr '|' ' ')"
SINK=$NEW_SINK start_sink again --pg "$PALISADE_PG" --key-retention 0
post idle-3 1 '{"i":3}'
expect_eq "G5: a key adopted in the background replays" "201 true 1" "$CODE $(hdr Idempotent-Replayed) $(ledger idle-3)"
stop_sink
echo "    figure: $((SECONDS - t0)) s"
finish
