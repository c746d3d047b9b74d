#!/usr/bin/env bash
# palisade-sink, the reference side-effect service (docs/sink.md), proves the
# service side of the protocol (docs/protocol.md) against a real PostgreSQL:
# one effect per idempotency key whatever is repeated, lost or raced (G5), and
# stale fencing tokens refused atomically with the effect (G4).
# The sink is started on free ports, tracked by PID and stopped at exit.
source tests/integration/lib.sh
guarantee "G5 - at most one effect per idempotency key (replay, lost response, races); G4 - a stale token never applies"

source "$(dirname "${BASH_SOURCE[0]}")/sink_lib.sh" # start_sink, req, post, ledger, ...

# ---- command line and schema --------------------------------------------
fresh_db it_sink
expect_eq "the compiled-in schema is sql/sink/*.sql (then the functions and the views of sql/sink/functions/), byte for byte" "" \
	"$(diff <("$SINK" --print-schema) <(cat sql/sink/[0-9]*.sql $(grep -l '^CREATE OR REPLACE FUNCTION' sql/sink/functions/*.sql) \
		$(grep -l '^CREATE OR REPLACE VIEW' sql/sink/functions/*.sql)) 2>&1 | head -3)"
expect_exit "--help exits 0" 0 "$SINK" --help
expect_match "and lists the fault flags" "--drop-after-commit-rate" "$OUT"
expect_exit "no --listen is a usage error" 64 "$SINK" --noop
expect_exit "an error rate outside 0..1 is a usage error" 64 "$SINK" --listen 127.0.0.1:0 --error-rate 1.5
expect_exit "an unreachable PostgreSQL exits 69" 69 "$SINK" --listen 127.0.0.1:0 \
	--pg "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=2"
expect_match "and names the cause" "cannot connect to PostgreSQL" "$OUT"
pids=()
for i in 1 2 3 4; do "$SINK" --migrate-only >"$W/mig.$i" 2>&1 & pids+=($!); done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
expect_eq "4 sinks applying the schema at once all succeed" 4 "$ok"
expect_eq "each sink schema file was applied exactly once" "$(ls sql/sink/[0-9]*.sql | wc -l)" \
	"$(cat "$W"/mig.* | grep -h '"event":"sink.schema"' | jq -r .applied | awk '{n += $1} END {print n + 0}')"
expect_eq "the sink's tables and views exist" "sink_applies r,sink_effects v,sink_fences v,sink_keys r,sink_ledger v,sink_targets r" \
	"$(sql "select string_agg(relname || ' ' || relkind::text, ',' order by relname) from pg_class
		where relname in ('sink_keys','sink_applies','sink_targets','sink_effects','sink_fences','sink_ledger')")"

start_sink main --log-level debug

# ---- G5: apply once, replay after --------------------------------------
post k1 5 '{"amount":10}' -H 'Palisade-Trigger: 42' -H 'Palisade-Attempt: 1' \
	-H 'Palisade-Scheduled-At: 2026-11-30T08:00:00Z'
expect_eq "G5: a new key applies (201)" 201 "$CODE"
expect_match "G5: the answer says applied, with key and fence" '"applied":true.*"key":"k1".*"fence":5' "$BODY"
first_body=$BODY
expect_eq "G5: one ledger row" 1 "$(ledger k1)"
expect_eq "the effect row records trigger, attempt and scheduled instant" "42|1|2026-11-30 08:00:00+00" \
	"$(sql "select trigger_id, attempt, scheduled_at at time zone 'UTC' || '+00' from sink_effects where idempotency_key = 'k1'")"
post k1 5 '{"amount":10}'
expect_eq "G5: the same key and token again answers the stored status" 201 "$CODE"
expect_eq "G5: ... marked Idempotent-Replayed: true" true "$(hdr Idempotent-Replayed)"
expect_eq "G5: ... with the stored body" "$first_body" "$BODY"
expect_eq "G5: still one ledger row after the replay" 1 "$(ledger k1)"
post k1 5 '{"amount":99}'
expect_eq "G5: the same key with another body is refused (422)" 422 "$CODE"
expect_match "G5: ... as payload_mismatch" '"error":"payload_mismatch"' "$BODY"
req PUT k1 5 '{"amount":10}'
expect_eq "G5: the same key and body with another method is a different payload (422)" 422 "$CODE"
expect_eq "G5: still one ledger row after the mismatches" 1 "$(ledger k1)"

# ---- G4: fencing ----------------------------------------------------------
post k1 9 '{"amount":10}'
expect_eq "G4: a higher token for an applied key replays" true "$(hdr Idempotent-Replayed)"
expect_eq "G4: ... and raises the key's fence to 9" 9 "$(sql "select fence from sink_fences where resource = 'k1'")"
post k1 7 '{"amount":10}'
expect_eq "G4: a lower token after a higher one is refused (409)" 409 "$CODE"
expect_eq "G4: ... naming the highest token in Palisade-Stale-Token" 9 "$(hdr Palisade-Stale-Token)"
expect_match "G4: ... as stale_token" '"error":"stale_token"' "$BODY"
post k2 20 'a'
post k2 3 'b'
expect_eq "G4: the token is checked before the payload (stale beats mismatch)" "409 20" "$CODE $(hdr Palisade-Stale-Token)"
expect_eq "G4: the stale requests wrote no effect" 1 "$(ledger k2)"

# ---- validation -------------------------------------------------------------
n_before=$(sql "select count(*) from sink_effects")
post - 1 x;                  expect_eq "no Idempotency-Key: 400" 400 "$CODE"
post '' 1 x -H 'Idempotency-Key;'; expect_eq "an empty Idempotency-Key: 400" 400 "$CODE"
post "$(head -c 1001 /dev/zero | tr '\0' k)" 1 x
expect_eq "a 1001-byte key: 400 naming the limit" "400 Idempotency-Key is longer than 1000 bytes" "$CODE $(jq -r .detail <<<"$BODY")"
post v1 -  x;                expect_eq "no Palisade-Fencing-Token: 400" 400 "$CODE"
post v1 12a x;               expect_eq "a token '12a': 400" 400 "$CODE"
post v1 -1 x;                expect_eq "a token '-1': 400" 400 "$CODE"
post v1 18446744073709551616 x; expect_eq "a token above u64: 400" 400 "$CODE"
post v1 9223372036854775808 x; expect_eq "a token above bigint: 400 (tokens come from a sequence)" 400 "$CODE"
post v1 1 x -H 'Palisade-Attempt: one'; expect_eq "a malformed Palisade-Attempt: 400" 400 "$CODE"
post v1 1 x -H 'Palisade-Scheduled-At: yesterday'; expect_eq "a malformed Palisade-Scheduled-At: 400" 400 "$CODE"
head -c $((1024 * 1024 + 1)) /dev/zero >"$W/big"
CODE=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Idempotency-Key: big' \
	-H 'Palisade-Fencing-Token: 1' --data-binary @"$W/big" "$URL/effects/x")
expect_eq "a body over 1 MiB: 413" 413 "$CODE"
expect_eq "no refused request wrote a row" "$n_before" "$(sql "select count(*) from sink_effects")"
expect_eq "bad requests are counted" 10 "$(stat bad_request)"

# ---- the key limit: 1000 bytes, the longest key a valid job can expand to ------
long_key=$(head -c 1000 /dev/zero | tr '\0' k)
post "$long_key" 1 x; expect_eq "a 1000-byte key is accepted" 201 "$CODE"
post "$long_key" 1 x
expect_eq "... and replayed" "201 true" "$CODE $(hdr Idempotent-Replayed)"
expect_eq "... stored whole, one effect" "1000|1" "$(sql "select length(idempotency_key), count(*) from sink_ledger where idempotency_key = '$long_key' group by 1")"
get_key "$(head -c 1000 /dev/zero | tr '\0' '/' | sed 's#/#%2F#g')"
expect_eq "a 1000-byte key percent-encoded in the status URL (3000 bytes) is looked up: 404, not 400" 404 "$CODE"
get_key "${long_key}k"
expect_eq "a 1001-byte key in the status URL: 400 naming the limit" "400 the key is longer than 1000 bytes" "$CODE $(jq -r .detail <<<"$BODY")"
get_key "$long_key"
expect_eq "the 1000-byte key is found by its status URL" 200 "$CODE"
# The loader refuses a job whose key could expand past the limit, counting
# each placeholder at its longest ({job} = the job's id), so that every key a
# valid job sends is one this sink accepts.
ph='{job}/{scheduled_at}/{scheduled_date}/{partition}/{trigger}/{request_id}/'
id=$(head -c 128 /dev/zero | tr '\0' j)   # the longest job id
job_yaml() { printf 'jobs:\n  - id: %s\n    schedule: {cron: "* * * * *"}\n    partitions: 2\n    idempotency_key: "%s%s"\n    target: {url: "http://127.0.0.1:8089/x"}\n' "$id" "$ph" "$1" >"$W/long.yaml"; }
job_yaml "$(head -c $((1000 - 128 - 20 - 10 - 4 - 19 - 128 - 6)) /dev/zero | tr '\0' f)"
expect_exit "a key template that expands to at most 1000 bytes is valid" 0 "$PAL" validate "$W/long.yaml"
job_yaml "$(head -c $((1000 - 128 - 20 - 10 - 4 - 19 - 128 - 6 + 1)) /dev/zero | tr '\0' f)"
expect_exit "one byte more is refused at validation" 65 "$PAL" validate "$W/long.yaml"
expect_match "... saying why" "idempotency_key: expands to up to 1001 bytes, more than the 1000 an Idempotency-Key may have" "$OUT"

# ---- query: GET /effects/<key> ----------------------------------------------
get_key k1
expect_eq "G5: GET /effects/<key> finds an applied effect" 200 "$CODE"
expect_eq "G5: ... with its fence and stored status" "5 201" "$(jq -r '"\(.fence) \(.status)"' <<<"$BODY")"
post 'job/a b?#%' 1 x
get_key 'job%2Fa%20b%3F%23%25'
expect_eq "a percent-encoded key with / ? # % is found" "200 job/a b?#%" "$CODE $(jq -r .key <<<"$BODY")"
get_key 'job/a%20b%3F%23%25'
expect_eq "a literal '/' in the status URL is part of the key" 200 "$CODE"
get_key nope
expect_eq "G5: an unknown key: 404" "404 not_found" "$CODE $(jq -r .error <<<"$BODY")"
get_key 'bad%zz'
expect_eq "a malformed escape: 400" 400 "$CODE"

# ---- in progress: a concurrent duplicate while the first holds its transaction --
faults '{"delay_ms": 2000}'
for key in race-new k1; do
	tok=$([ "$key" = k1 ] && echo 9 || echo 1)
	body=$([ "$key" = k1 ] && echo '{"amount":10}' || echo r)
	( post "$key" "$tok" "$body"; echo "$CODE" >"$W/first.code" ) &
	bg=$!
	sleep 0.5
	post "$key" "$tok" "$body"
	expect_eq "G5: a duplicate while the first ($key) is in flight: 409" 409 "$CODE"
	expect_match "G5: ... in_progress with Retry-After: 1" "in_progress 1" "$(jq -r .error <<<"$BODY") $(hdr Retry-After)"
	# The status query while the transaction is open: a new key is "in
	# progress" (409, never 404: the executor would read 404 as "not
	# applied"); an effect committed earlier is still found.
	get_key "$key"
	if [ "$key" = race-new ]; then
		expect_eq "G5: a status query while the first is uncommitted: 409 in_progress, Retry-After: 1 (not 404)" \
			"409 in_progress 1" "$CODE $(jq -r .error <<<"$BODY") $(curl -s -D - -o /dev/null "$URL/effects/$key" | tr -d '\r' | sed -n 's/^Retry-After: //Ip')"
	else
		expect_eq "G5: a status query for an applied key while a replay is in flight: 200" 200 "$CODE"
	fi
	wait "$bg"
	expect_eq "G5: the first request ($key) completes" 201 "$(cat "$W/first.code")"
	expect_eq "G5: one ledger row for $key" 1 "$(ledger "$key")"
done
faults '{"delay_ms": 0}'
get_key race-new
expect_eq "after the commit the status query finds race-new" 200 "$CODE"
expect_eq "in-progress status answers are counted (query_in_progress)" 2 "$(stat query_in_progress)"

# ---- pause: requests wait, they do not fail -------------------------------------
faults '{"paused": true}'
( post paused 1 p; echo "$CODE" >"$W/paused.code" ) &
bg=$!
sleep 0.7
check "a paused request waits" kill -0 "$bg"
expect_eq "... counted in flight" 1 "$(stat inflight)"
expect_eq "... and applied nothing yet" 0 "$(effects paused)"
faults '{"paused": false}'
wait "$bg"
expect_eq "after unpause it applies" 201 "$(cat "$W/paused.code")"

# ---- error injection: 503 before the database -----------------------------------
faults '{"error_rate": 1.0}'
post injected 1 x
expect_eq "error rate 1.0: 503" 503 "$CODE"
expect_eq "... with Retry-After: 1" 1 "$(hdr Retry-After)"
expect_eq "... and no effect or fence row" "0 0" "$(effects injected) $(sql "select count(*) from sink_fences where resource = 'injected'")"
expect_eq "... counted" 1 "$(stat errors_injected)"
out=$(curl -s -X POST --data-binary '{"error_rate": 2}' "$ADM/admin/faults")
expect_match "an invalid fault setting is refused and named" "error_rate.*between 0 and 1" "$out"
expect_eq "... and changes nothing (all or nothing)" 1 "$(curl -s "$ADM/admin/faults" | jq .error_rate)"
faults '{"error_rate": 0}'

# ---- the lost response: commit, then drop the connection -----------------------
faults '{"drop_after_commit_rate": 1.0}'
post lost 4 '{"v":1}'
expect_eq "G5: drop-after-commit: the client sees no response (curl: empty reply)" "000 52" "$CODE $CURL_RC"
expect_eq "G5: ... yet the effect IS committed" "1 1" "$(effects lost) $(ledger lost)"
expect_eq "... counted" 1 "$(stat dropped_after_commit)"
faults '{"drop_after_commit_rate": 0}'
get_key lost
expect_eq "G5: the executor's status query finds it" 200 "$CODE"
post lost 4 '{"v":1}'
expect_eq "G5: a retry with the same key replays" "201 true" "$CODE $(hdr Idempotent-Replayed)"
expect_eq "G5: still one ledger row" 1 "$(ledger lost)"

# ---- chunked work: has_more / checkpoint ------------------------------------------
C=(-H 'Palisade-Test-Chunks: 3')
post c1 10 job "${C[@]}"
expect_eq "chunk 1 of 3: 200 has_more, checkpoint 1" "200 true 1 1/3" \
	"$CODE $(jq -r '"\(.has_more) \(.checkpoint) \(.progress.done)/\(.progress.of)"' <<<"$BODY")"
post c1 10 job "${C[@]}" -H 'Palisade-Checkpoint: 1'
expect_eq "chunk 2 of 3 from checkpoint 1" "200 true 2" "$CODE $(jq -r '"\(.has_more) \(.checkpoint)"' <<<"$BODY")"
post c1 10 job "${C[@]}" -H 'Palisade-Checkpoint: 1'
expect_eq "G5: chunk 2 again (lost response) replays" "200 2 true" "$CODE $(jq -r .checkpoint <<<"$BODY") $(hdr Idempotent-Replayed)"
post c1 10 job "${C[@]}"
expect_eq "G5: chunk 1 again replays its own answer" "1 true" "$(jq -r .checkpoint <<<"$BODY") $(hdr Idempotent-Replayed)"
get_key c1
expect_eq "G5: a chunked effect under way is not reported applied" "404 incomplete" "$CODE $(jq -r .error <<<"$BODY")"
post c1 11 job "${C[@]}" -H 'Palisade-Checkpoint: 2'
expect_eq "a new attempt (token 11) finishes chunk 3: has_more false" "200 false 3" \
	"$CODE $(jq -r '"\(.has_more) \(.checkpoint)"' <<<"$BODY")"
post c1 10 job "${C[@]}" -H 'Palisade-Checkpoint: 2'
expect_eq "G4: the old attempt (token 10) is fenced on its next chunk" "409 11" "$CODE $(hdr Palisade-Stale-Token)"
expect_eq "G5: one ledger row per chunk, chunks 1..3" "1,2,3" \
	"$(sql "select string_agg(chunk::text, ',' order by chunk) from sink_ledger where idempotency_key = 'c1'")"
get_key c1
expect_eq "the finished chunked effect is found" "200 3/3" "$CODE $(jq -r '"\(.progress.done)/\(.progress.of)"' <<<"$BODY")"
post c1 11 job -H 'Palisade-Test-Chunks: 4'
expect_eq "the same key with another chunk count: 422" 422 "$CODE"
REQ_PATH='/effects/orders?chunks=2' post c3 1 job
expect_eq "?chunks=N asks for chunked work too (jobs cannot send Palisade-* headers)" "200 true" "$CODE $(jq -r .has_more <<<"$BODY")"
REQ_PATH='/effects/orders?chunks=2' post c3 1 job -H 'Palisade-Checkpoint: "1"'
expect_eq "a checkpoint sent as a JSON string (as the executor does) continues the work" "200 false 2" \
	"$CODE $(jq -r '"\(.has_more) \(.checkpoint)"' <<<"$BODY")"
post c2 1 job "${C[@]}" -H 'Palisade-Checkpoint: 1'
expect_eq "a checkpoint for an effect never started: 400" "400 bad_checkpoint" "$CODE $(jq -r .error <<<"$BODY")"
post c2 1 job "${C[@]}" -H 'Palisade-Checkpoint: 3'
expect_eq "a checkpoint at or past the chunk count: 400" 400 "$CODE"

# ---- 200 concurrent requests over 20 keys, random tokens ---------------------------
for i in $(seq 1 200); do echo "burst-$((i % 20)) $((RANDOM % 1000 + 1))"; done >"$W/burst.in"
# one.sh KEY TOKEN prints "KEY TOKEN CODE STALE": CODE prefixed with R for a
# replay, STALE the Palisade-Stale-Token answered (or -)
cat >"$W/one.sh" <<'ONE'
out=$(curl -s -o /dev/null -D - -w '%{http_code}' -X POST -H "Idempotency-Key: $1" \
	-H "Palisade-Fencing-Token: $2" --data-binary "payload of $1" "$URL/effects/burst" | tr -d '\r')
r=$(grep -qi '^idempotent-replayed: true' <<<"$out" && echo R)
st=$(sed -n 's/^palisade-stale-token: //Ip' <<<"$out")
echo "$1 $2 $r${out: -3} ${st:--}"
ONE
URL=$URL xargs -P 20 -L 1 bash "$W/one.sh" <"$W/burst.in" >"$W/burst.out" 2>&1
expect_eq "all 200 burst requests answered" 200 "$(wc -l <"$W/burst.out")"
expect_eq "G5: exactly one ledger row per burst key (20 keys)" "20|20" \
	"$(sql "select count(*), count(distinct idempotency_key) from sink_ledger where idempotency_key like 'burst-%'")"
expect_eq "G5: exactly 20 non-replayed 201s" 20 "$(awk '$3 == "201"' "$W/burst.out" | wc -l)"
expect_eq "every other answer is a replay or a 409 (no 5xx, no other 4xx)" 180 \
	"$(awk '$3 == "R201" || $3 == "409"' "$W/burst.out" | wc -l)"
expect_eq "G4: every stale refusal named a higher token than the request's" 0 \
	"$(awk '$3 == 409 && $4 != "-" && $2 + 0 >= $4 + 0' "$W/burst.out" | wc -l)"
expect_eq "G4: each key's fence is the highest token that was accepted (201) for it" \
	"$(awk '$3 ~ /201$/ && $2 + 0 > m[$1] + 0 {m[$1] = $2} END {for (k in m) print k "|" m[k]}' "$W/burst.out" | sort)" \
	"$(sql "select resource, fence from sink_fences where resource like 'burst-%'" | sort)"
expect_eq "G4: each key's effect was applied by a token no higher than its fence" 0 \
	"$(sql "select count(*) from sink_effects e left join sink_fences f on f.resource = e.idempotency_key where e.idempotency_key like 'burst-%' and (f.fence is null or e.fence > f.fence)")"

# ---- counters, metrics, keep-alive, logs ------------------------------------------
expect_eq "stats: applied equals the ledger" "$(sql 'select count(*) from sink_ledger')" "$(stat applied)"
expect_match "/metrics exposes the outcome counters" '^palisade_sink_outcomes_total\{outcome="applied"\} [1-9]' \
	"$(curl -s "$ADM/metrics")"
expect_eq "keep-alive: a second request reuses the connection" "1 0" \
	"$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' "$URL/effects/k1" "$URL/effects/k1" | xargs)"
expect_eq "every log line is one JSON object" 0 "$(jq -e . "$W/main.log" >/dev/null 2>&1; echo $?)"

# ---- SIGTERM while a request is paused --------------------------------------------
faults '{"paused": true}'
( post shutdown 1 x; echo "$CODE" >"$W/shutdown.code" ) &
bg=$!
sleep 0.5
stop_sink
wait "$bg"
expect_eq "SIGTERM stops the sink cleanly (exit 0)" 0 "$STOP_RC"
expect_eq "... the paused request is told 503, not left hanging" 503 "$(cat "$W/shutdown.code")"
expect_eq "... and applied nothing" 0 "$(effects shutdown)"
expect_match "... and logs its final counts" '"event":"sink.stopped"' "$(tail -1 "$W/main.log")"

# ---- --noop: no PostgreSQL at all ------------------------------------------------
start_sink noop --noop --pg "host=127.0.0.1 port=1 user=x dbname=x"
post n1 1 x
expect_eq "noop mode answers 200 applied without a database" "200 true" "$CODE $(jq -r .applied <<<"$BODY")"
post - 1 x
expect_eq "noop mode still validates headers" 400 "$CODE"
expect_eq "noop mode wrote nothing" 0 "$(effects n1)"
stop_sink
expect_eq "the noop sink stops cleanly" 0 "$STOP_RC"
finish
