#!/usr/bin/env bash
# Group commit in palisade-sink (docs/sink.md "Group commit"): requests that
# arrive together are applied in one transaction, each in a subtransaction
# of its own, and answered only after the one COMMIT.  Proves that each
# request of a group gets the answer it would get alone (a refusal or an SQL
# error in one request leaves the others applied and undoes only its own
# changes), that two requests for one key in a group see each other, that a
# key held by an open group is in progress for everyone else, that a
# group whose transaction or COMMIT fails answers no 2xx and stores nothing,
# and that one whose connection is lost with the call sent answers nothing
# (unknown, never 503 "not applied").
source tests/integration/lib.sh
guarantee "G5 - one effect per key, and never a 2xx for an effect that is not durable, when effects share a transaction; G4 - a stale token in a group never applies"
source "$(dirname "${BASH_SOURCE[0]}")/sink_lib.sh" # start_sink, req, post, ledger, ...

fresh_db it_sink_group
# groups s|_requests: palisade_sink_groups_total, ..._group_requests_total (0 when absent)
groups() { curl -s "$ADM/metrics" | awk -v m="palisade_sink_group${1}_total" '$1 == m {n = $2} END {print n + 0}'; }

# go NAME KEY TOKEN BODY [curl args...]: one apply in the background; its
# "CODE REPLAYED STALE-TOKEN" lands in $W/NAME.ans, the body in $W/NAME.body.
declare -a BG=()
go() {
	local name=$1; shift
	( post "$@"; echo "$CODE $(hdr Idempotent-Replayed) $(hdr Palisade-Stale-Token)" | xargs >"$W/$name.ans"
	  echo "$BODY" >"$W/$name.body" ) &
	BG+=($!)
}
wait_all() { local p; for p in "${BG[@]}"; do wait "$p"; done; BG=(); }
# hold / release N: requests sent after hold wait (paused) until release
# has seen N of them in flight and unpauses: they are queued together.
hold() { faults '{"paused": true}'; }
release() {
	local n=$1
	for _ in $(seq 1 100); do [ "$(stat inflight)" = "$n" ] && break; sleep 0.1; done
	expect_eq "$n requests are waiting to be sent together" "$n" "$(stat inflight)"
	faults '{"paused": false}'
}
ans() { cat "$W/$1.ans" 2>/dev/null; }
# wait_ans NAME: until NAME's answer is there (10 s at most)
wait_ans() { for _ in $(seq 1 100); do [ -s "$W/$1.ans" ] && return; sleep 0.1; done; }

# A window of 1 s and one committer: requests sent together form one group.
start_sink grp --group-max 64 --group-wait-ms 1000 --group-committers 1
expect_match "sink.started logs the group settings" '"group_max":64,"group_wait_ms":1000,"group_committers":1' \
	"$(grep '"event":"sink.started"' "$W/grp.log")"
# What the group will find: an applied key, a fenced key, a key with a payload.
post old 5 '{"v":"old"}';   first_old=$BODY
post fenced 10 '{"v":"f"}'
post pm 1 '{"v":"a"}'
expect_eq "the set-up requests ran in groups of their own" "3 3" "$(groups s) $(groups _requests)"

# ---- one group: new keys, stale, 422, replay, same-key pairs, an SQL error ---------
hold
for i in 1 2 3 4 5; do go new$i "new-$i" 1 "{\"n\":$i}"; done
go stale fenced 5 '{"v":"f"}'
go mismatch pm 50 '{"v":"b"}'
go replay old 9 '{"v":"old"}'
go dupA dup 3 '{"v":"d"}'
go dupB dup 3 '{"v":"d"}'
go dmA dm 2 '{"v":"x"}'
go dmB dm 2 '{"v":"y"}'
# a scheduled instant this sink's parser accepts and PostgreSQL refuses
go bad bad 1 '{"v":"bad"}' -H 'Palisade-Scheduled-At: 0000-01-01T00:00:00Z'
release 13
wait_all
expect_eq "the 13 requests formed one group (one more group transaction, 13 more requests)" "4 16" \
	"$(groups s) $(groups _requests)"
for i in 1 2 3 4 5; do expect_eq "new key new-$i in the group: 201" 201 "$(ans new$i)"; done
expect_eq "G4: a stale token in the group: 409 naming the highest token" "409 10" "$(ans stale)"
expect_eq "another payload for an applied key in the group: 422" 422 "$(ans mismatch)"
expect_eq "G5: a replay in the group: the stored answer" "201 true" "$(ans replay)"
expect_eq "G5: ... with the stored body" "$first_old" "$(cat "$W/replay.body")"
expect_eq "G5: two identical requests for a new key in one group: the second sees the first (201, then a replay)" \
	"201|201 true" "$(printf '%s\n' "$(ans dupA)" "$(ans dupB)" | sort | paste -sd'|')"
expect_eq "two payloads for a new key in one group: one applies, the other sees it (422)" \
	"201|422" "$(printf '%s\n' "$(ans dmA)" "$(ans dmB)" | sort | paste -sd'|')"
expect_eq "an SQL error in one request of the group: 503 for it alone" 503 "$(ans bad)"
expect_match "... logged with its key" '"event":"sink.db_error".*"key":"bad"' "$(grep '"key":"bad"' "$W/grp.log")"
expect_eq "... and nothing of it is stored (no effect, ledger or fence row)" "0 0 0" \
	"$(effects bad) $(ledger bad) $(sql "select count(*) from sink_fences where resource = 'bad'")"
expect_eq "G5: exactly one ledger row per applied key of the group" "1 1 1 1 1 1 1" \
	"$(for k in new-1 new-2 new-3 new-4 new-5 dup dm; do ledger "$k"; done | xargs)"
expect_eq "G5: the refused and replayed keys kept their one row" "1 1 1" "$(ledger old) $(ledger fenced) $(ledger pm)"
expect_eq "the 422 in the group undid its fence move (the key's fence is still 1, not 50)" 1 \
	"$(sql "select fence from sink_fences where resource = 'pm'")"
expect_eq "G4: the stale request left the fence at 10" 10 "$(sql "select fence from sink_fences where resource = 'fenced'")"
expect_eq "the replay in the group moved its key's fence to 9, as alone" 9 \
	"$(sql "select fence from sink_fences where resource = 'old'")"
expect_eq "the group's effects and ledger rows share one applied_at" "1" \
	"$(sql "select count(distinct t) from (select applied_at t from sink_effects where idempotency_key in ('new-1','new-2','new-3','new-4','new-5','dup','dm')
	        union select applied_at from sink_ledger where idempotency_key in ('new-1','new-2','new-3','new-4','new-5','dup','dm')) x")"
expect_eq "... taken after every request of the group ran (no fence of the group moved later)" 0 \
	"$(sql "select count(*) from sink_fences f, sink_effects e where e.idempotency_key = 'new-1'
	        and f.resource in ('new-1','new-2','new-3','new-4','new-5','dup','dm','old','fenced') and f.updated_at > e.applied_at")"
expect_eq "stats: applied equals the ledger" "$(sql 'select count(*) from sink_ledger')" "$(stat applied)"

# ---- a COMMIT that fails: every request of the group is answered 503 ------------------
# A deferred constraint trigger refuses the key "boom" at COMMIT, after
# every request of the group ran and was answered in the function.
sql "create function boom() returns trigger language plpgsql as \$\$ begin
       if (select k.idempotency_key from sink_keys k where k.id = new.key_id) = 'boom' then
         raise exception 'boom refused at commit'; end if;
       return null; end \$\$;
     create constraint trigger boom after insert on sink_applies deferrable initially deferred
       for each row execute function boom()"
hold
go c1 commit-1 1 a
go c2 commit-2 1 b
go c3 boom 1 c
go c4 old 9 '{"v":"old"}'
release 4
wait_all
expect_eq "a COMMIT that fails: no 2xx for any request of its group (503 each)" "503 503 503 503" \
	"$(for n in c1 c2 c3 c4; do ans $n | cut -d' ' -f1; done | xargs)"
expect_eq "... and none of them is stored" "0 0 0" "$(effects commit-1) $(effects commit-2) $(effects boom)"
sql "drop trigger boom on sink_applies"
go c1 commit-1 1 a
wait_all
expect_eq "the same request afterwards applies for the first time (201, no replay)" 201 "$(ans c1)"

# ---- the group's backend terminated mid-group ------------------------------------------
# An uncommitted row for term-1 inserted behind the sink's back (without
# the key's advisory lock) makes the group that applies term-1 wait at its
# insert, inside its transaction, holding the keys it got to; then its
# backend is terminated.
stop_sink
start_sink grp2 --group-max 64 --group-wait-ms 300 --group-committers 3
psql "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 >"$W/locker.log" 2>&1 <<'LOCK' &
begin;
insert into sink_keys (idempotency_key, fence, highest, digest) values ('term-1', 1, 1, '\x00');
select pg_sleep(120);
rollback;
LOCK
locker=$!
for _ in $(seq 1 100); do
	[ -n "$(sql "select pid from pg_stat_activity where datname = current_database() and query like '%pg_sleep(120)%' and pid <> pg_backend_pid()")" ] && break
	sleep 0.1
done
hold
go t1 term-1 1 a
go t3 old 9 '{"v":"old"}'
release 2
group_a=
for _ in $(seq 1 100); do
	group_a=$(sql "select pid from pg_stat_activity where datname = current_database() and application_name = 'palisade-sink' and wait_event_type = 'Lock'")
	[ -n "$group_a" ] && break
	sleep 0.1
done
check "group A (term-1 and a replay) waits inside its transaction" test -n "$group_a"
# group A holds term-1: a status query and a duplicate (in another group)
# are in progress, never "not found"; another group commits meanwhile
get_key term-1
expect_eq "G5: a status query for a key of an open group: 409 in_progress" "409 in_progress" "$CODE $(jq -r .error <<<"$BODY")"
go t1dup term-1 1 a
go t2 term-2 1 b
wait_ans t1dup; wait_ans t2
expect_eq "G5: a duplicate for a key of an open group, in another group: 409 in_progress" 409 "$(ans t1dup | cut -d' ' -f1)"
expect_eq "another group commits while group A waits (201)" 201 "$(ans t2)"
sql "select pg_terminate_backend($group_a)" >/dev/null
wait_ans t1; wait_ans t3
# the sink lost its connection with the call sent: from where it stands the
# group may have committed, so "not applied" (503) would be a guess
expect_eq "group A terminated: no 2xx and no 503 for its requests, no answer (unknown)" "000 000" \
	"$(for n in t1 t3; do ans $n | cut -d' ' -f1; done | xargs)"
sql "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like '%pg_sleep(120)%' and pid <> pg_backend_pid()" >/dev/null
wait "$locker" 2>/dev/null
wait_all
expect_eq "... and term-1 is not stored" "0 0" "$(effects term-1) $(ledger term-1)"
get_key term-1
expect_eq "the status query resolves it: term-1 was not applied (404)" 404 "$CODE"
get_key old
expect_eq "... and the replay's key answers 200" 200 "$CODE"
expect_eq "both counted commit_unknown" 2 "$(stat commit_unknown)"
go t1 term-1 1 a
wait_all
expect_eq "the sink reconnects: term-1 applies afterwards, for the first time (201, no replay)" 201 "$(ans t1)"
stop_sink
expect_eq "the sink stops cleanly" 0 "$STOP_RC"

# ---- --group-max 1: one transaction per request, as before group commit -------------
start_sink single --group-max 1
go s1 single-1 1 a
go s2 fenced 5 '{"v":"f"}'
go s3 single-1 1 a
wait_all
expect_eq "--group-max 1 runs no group transaction" 0 "$(groups s)"
expect_eq "... and answers each request alone (stale: 409 naming the highest token)" "409 10" "$(ans s2)"
expect_match "... of a concurrent pair for one key, one applies, the other is in progress or a replay" \
	'^201\|(201 true|409)$' "$(printf '%s\n' "$(ans s1)" "$(ans s3)" | sort | paste -sd'|')"
expect_eq "G5: ... one ledger row" 1 "$(ledger single-1)"
stop_sink

# ---- groups read by key, however the tables were when a statement was planned ------
# A connection keeps one plan per statement of sink_apply_group(), chosen
# while the tables may still hold a page or two; a sequential scan chosen
# then would be kept while the tables grow, and every group would read them
# whole.  On a fresh database, 24 groups: no sequential scan of the sink's
# tables (the counters are flushed when the sink's connections close).
fresh_db it_sink_group_scan
start_sink scan --group-max 64 --group-wait-ms 20 --group-committers 1 --key-retention 0
seqs() { sql "select coalesce(sum(seq_scan), 0) from pg_stat_user_tables where relname in ('sink_keys', 'sink_applies', 'sink_targets', 'sink_fences_v1', 'sink_effects_v1', 'sink_ledger_v1')"; }
seq0=$(seqs)
for r in $(seq 1 24); do
	for i in $(seq 1 8); do
		curl -s -o /dev/null -X POST -H "Idempotency-Key: scan-$r-$i" -H "Palisade-Fencing-Token: 1" \
			--data-binary "{\"r\":$r}" "$URL/effects/scan" &
		BG+=($!)
	done
	wait_all
done
expect_eq "192 requests applied" 192 "$(stat applied)"
expect_eq "... in more than one group each round (fewer group transactions than requests)" 1 \
	"$(($(groups s) < 192))"
stop_sink
sleep 1
expect_eq "no sequential scan of the sink's tables (sink_keys, sink_applies, sink_targets, the old ones) while the groups ran" 0 \
	"$(($(seqs) - seq0))"
finish
