#!/usr/bin/env bash
# Idempotency-Key when the node dies between the action's commit and the
# answer kept (docs/api.md, "Idempotency"): the key is left without an
# answer and its lock is gone, so the retry after the take-over bound takes
# it over.  The first attempt's audit rows name the key (details.api_request),
# so the retry learns that it committed and does not act again: 409
# request-committed-answer-lost naming those rows, kept as the key's answer.
# Trigger is run again (its request id names the first run: nothing new),
# and so are a DELETE and a drain, whose second part (the sweep, the node
# asked to drain) follows their commit; an apply ?prune=true sweeps the jobs
# its first attempt retired before answering the 409.
# The node is killed at that point by its test-only fault
# PALISADE_FAULT_API_KILL_BEFORE_ANSWER (SIGKILL after the handler of a keyed
# write, before the answer is kept).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "Idempotency-Key: a retried request does nothing twice, even when the node that served the first died after its commit and before its answer was kept"
export PALISADE_IDEM_TAKEOVER_S=1
fresh_db it_idem_answer_lost
"$PAL" migrate >/dev/null
F=$NODE_DIR/jobs.yaml
J='schedule: {cron: "0 0 0 1 1 ? 2099"}, target: {url: "http://127.0.0.1:9/x"}'
printf 'jobs:\n  - {id: lost.a, %s}\n  - {id: lost.b, %s}\n' "$J" "$J" >"$NODE_DIR/keep.yaml"
{ cat "$NODE_DIR/keep.yaml"; printf '  - {id: del.a, %s}\n  - {id: prune.a, %s}\n' "$J" "$J"; } >"$F"
SHARDS=2 write_conf "$CLUSTER_CONF"
"$PAL" apply --config "$CLUSTER_CONF" "$F" >/dev/null
TOK=$("$PAL" token create --name adm --role admin | tail -1)
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://${NODE_ADMIN[$1]}/readyz")" = 200 ]; }
start_node r2
wait_until "node r2 ready" 20 ready r2

# NODE KEY PATH BODY: a keyed POST; prints the status; answer and headers in $NODE_DIR/ans-KEY-NODE{,.h}
call() {
	curl -s -o "$NODE_DIR/ans-$2-$1" -D "$NODE_DIR/ans-$2-$1.h" -w '%{http_code}' -X POST \
		-H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
		-H "Idempotency-Key: $2" --data "$4" "http://${NODE_ADMIN[$1]}/api/v1$3"
}
audits() { sql "select count(*) from audit_log where actor = 'adm'"; }
ptype() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("type"))' "$NODE_DIR/ans-$1-r2"; }
past_bound() { [ "$(sql "select clock_timestamp() > created_at + interval '1.3 s' from api_requests where key = '$1'")" = t ]; }
# KEY PATH BODY: sent to r1, which dies after the action's commit; then the key's record
# is left without an answer and past the bound
die_after_commit() {
	PALISADE_FAULT_API_KILL_BEFORE_ANSWER=1 start_node r1
	wait_until "node r1 (killed after its next keyed write) ready" 20 ready r1
	local s; s=$(call r1 "$@")
	expect_eq "$2 with key $1 on r1: no answer (the node died)" 000 "$s"
	wait "${NODE_PID[r1]}" 2>/dev/null; unset "NODE_PID[r1]"
	expect_eq "... its record left without an answer" 1 \
		"$(sql "select count(*) from api_requests where key = '$1' and status is null")"
	wait_until "... and older than the take-over bound" 10 past_bound "$1"
}

# 1. a pause: committed, then the node died
die_after_commit p-1 /jobs/lost.a/pause '{"reason":"r"}'
A0=$(audits)
expect_eq "the pause committed: lost.a paused, one audit row naming the key" "1 1" \
	"$(sql "select count(*) from gates where scope = 'job:lost.a' and paused") $(sql "select count(*) from audit_log where details->'api_request'->>'key' = 'p-1'")"
S=$(call r2 p-1 /jobs/lost.a/pause '{"reason":"r"}')
expect_eq "the retry on r2: 409 request-committed-answer-lost, nothing done again" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0" "$S $(ptype p-1) $(audits)"
id=$(sql "select coalesce(string_agg(id::text, ' '), 'none') from audit_log where details->'api_request'->>'key' = 'p-1'")
expect_eq "... naming the first attempt's audit row" "$id" \
	"$(python3 -c 'import json,sys; print(" ".join(str(a["id"]) for a in json.load(open(sys.argv[1]))["audit"]))' "$NODE_DIR/ans-p-1-r2")"
cp "$NODE_DIR/ans-p-1-r2" "$NODE_DIR/first-p-1"
S=$(call r2 p-1 /jobs/lost.a/pause '{"reason":"r"}')
expect_eq "a second retry: the same answer replayed" "409 1 same $A0" \
	"$S $(grep -ci '^Idempotent-Replayed: true' "$NODE_DIR/ans-p-1-r2.h") $(cmp -s "$NODE_DIR/first-p-1" "$NODE_DIR/ans-p-1-r2" && echo same || echo differ) $(audits)"

# 2. a resume: not run again (a second resume would be a second audit row, a new ramp)
die_after_commit r-1 /jobs/lost.a/resume '{"reason":"r"}'
A0=$(audits)
S=$(call r2 r-1 /jobs/lost.a/resume '{"reason":"r"}')
expect_eq "a resume whose node died after its commit: 409 on the retry, nothing done again" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0" "$S $(ptype r-1) $(audits)"

# 3. a token created: no second token, no other answer
die_after_commit t-1 /tokens '{"name":"lost-tok","role":"viewer"}'
A0=$(audits)
S=$(call r2 t-1 /tokens '{"name":"lost-tok","role":"viewer"}')
expect_eq "a token create whose node died after its commit: 409 on the retry, one token" \
	"409 urn:palisade:problem:request-committed-answer-lost $A0 1" \
	"$S $(ptype t-1) $(audits) $(sql "select count(*) from api_tokens where name = 'lost-tok'")"

# 4. a trigger is run again: its request id names the first run, so it makes none
die_after_commit g-1 /jobs/lost.b/trigger '{"reason":"r"}'
S=$(call r2 g-1 /jobs/lost.b/trigger '{"reason":"r"}')
expect_eq "a trigger whose node died after its commit: run again on the retry, the first run answered (existed), one trigger" \
	"200 true 1" "$S $(python3 -c 'import json,sys; print(str(json.load(open(sys.argv[1]))["existed"]).lower())' "$NODE_DIR/ans-g-1-r2") $(sql "select count(*) from triggers where job_id = 'lost.b'")"

# 5. a key taken over whose first attempt did not commit: acted on
sql "insert into api_requests (token_id, key, method, path, digest, created_at)
	select id, 'n-1', 'POST', '/api/v1/jobs/lost.b/pause', encode(sha256('{\"reason\":\"r\"}'), 'hex'),
	clock_timestamp() - interval '5 seconds' from api_tokens where name = 'adm'" >/dev/null
A0=$(audits)
S=$(call r2 n-1 /jobs/lost.b/pause '{"reason":"r"}')
expect_eq "a key left in progress by an attempt that committed nothing: taken over and acted on" \
	"200 $((A0 + 1))" "$S $(audits)"

# 6. a DELETE and an apply ?prune=true commit the retirement, then sweep in a second
# transaction what a controller planned from the old version meanwhile.  Test-only
# hooks: when JOB is retired, one more trigger is planned from its old version
# (the row the sweep exists for), and the sweep's cancel of it sleeps, so that its
# connection is cut (pg_terminate_backend) after the first commit, before the second.
# The sleep is one trigger created here and armed per job by a row of
# zz_sweep_hold: a CREATE or DROP TRIGGER on the partitioned triggers table
# while the nodes run locks its partitions one by one and can deadlock with
# a node's transaction (a DROP did, and the trigger stayed).
sql "CREATE FUNCTION zz_plan_between() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
       INSERT INTO triggers (job_id, version, scheduled_at, partition, source, tenant, resource_group, due_at, shard)
       VALUES (NEW.job_id, 1, now() + interval '1 hour', 0, 'schedule', 'default', 'default', now() + interval '1 hour', 0);
       RETURN NEW; END \$\$;
     CREATE TRIGGER zz_plan_between AFTER UPDATE OF retired_at ON jobs FOR EACH ROW
       WHEN (OLD.retired_at IS NULL AND NEW.retired_at IS NOT NULL AND NEW.job_id IN ('del.a', 'prune.a'))
       EXECUTE FUNCTION zz_plan_between();
     CREATE TABLE zz_sweep_hold (job_id text);
     CREATE FUNCTION zz_slow_sweep() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
       IF EXISTS (SELECT 1 FROM zz_sweep_hold WHERE job_id = OLD.job_id) THEN PERFORM pg_sleep(20); END IF;
       RETURN NEW; END \$\$;
     CREATE TRIGGER zz_slow_sweep BEFORE UPDATE ON triggers FOR EACH ROW
       WHEN (OLD.job_id IN ('del.a', 'prune.a') AND NEW.state = 'cancelled') EXECUTE FUNCTION zz_slow_sweep();" >/dev/null
sweeping() { has "select count(*) from pg_stat_activity where state = 'active' and $OUR_SLEEP and query like '%palisade_trigger_move%'"; }
# KEY JOB METHOD PATH TYPE BODY: a keyed request to r2 (answer in $NODE_DIR/ans-KEY-r2)
send() {
	curl -s -m 30 -o "$NODE_DIR/ans-$1-r2" -w '%{http_code}' -X "$3" -H "Authorization: Bearer $TOK" \
		-H "Content-Type: $5" -H "Idempotency-Key: $1" --data-binary "$6" "http://${NODE_ADMIN[r2]}/api/v1$4"
}
pending_of() { sql "select count(*) from triggers where job_id = '$1' and state = 'pending'"; }
# KEY JOB METHOD PATH TYPE BODY: sent to r2, its connection cut between the retirement's
# commit and the sweep's; the key is left without an answer and past the bound
cut_before_sweep() {
	sql "insert into zz_sweep_hold values ('$2')" >/dev/null
	( send "$@" >/dev/null ) &
	local req=$!
	wait_until "$3 $4 with key $1: the retirement committed, the sweep running" 10 sweeping
	sql "select pg_terminate_backend(pid) from pg_stat_activity where $OUR_SLEEP and query like '%palisade_trigger_move%'" >/dev/null
	wait "$req" 2>/dev/null
	sql "delete from zz_sweep_hold" >/dev/null
	expect_eq "... cut: $2 retired, 1 trigger planned from its old version left pending, the key without an answer" "1 1 1" \
		"$(sql "select count(*) from jobs where job_id = '$2' and retired_at is not null") $(pending_of "$2") $(sql "select count(*) from api_requests where key = '$1' and status is null")"
	wait_until "... and older than the take-over bound" 10 past_bound "$1"
}
cut_before_sweep x-1 del.a DELETE /jobs/del.a application/json '{"reason":"gone"}'
S=$(send x-1 del.a DELETE /jobs/del.a application/json '{"reason":"gone"}')
expect_eq "the retried DELETE is run again: 200 already retired, the late trigger swept, no pending trigger left" \
	"200 already retired 1 0" \
	"$S $(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a.get("outcome"), a.get("late_cancelled"))' "$NODE_DIR/ans-x-1-r2") $(pending_of del.a)"
cut_before_sweep y-1 prune.a POST '/apply?prune=true&reason=prune' application/yaml "$(cat "$NODE_DIR/keep.yaml")"
S=$(send y-1 prune.a POST '/apply?prune=true&reason=prune' application/yaml "$(cat "$NODE_DIR/keep.yaml")")
expect_eq "the retried apply ?prune=true: 409 request-committed-answer-lost after sweeping the job it retired (late_cancelled 1), no pending trigger left, nothing applied again" \
	"409 urn:palisade:problem:request-committed-answer-lost 1 0 0" \
	"$S $(ptype y-1) $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("late_cancelled"))' "$NODE_DIR/ans-y-1-r2") $(pending_of prune.a) $(sql "select count(*) from audit_log where id > (select max(id) from audit_log where details->'api_request'->>'key' = 'y-1') and actor = 'adm' and action like 'job.%'")"

# the stamp is the request's only: a write without a key after keyed ones on the same node
curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
	--data '{"reason":"r"}' "http://${NODE_ADMIN[r2]}/api/v1/jobs/lost.b/resume"
expect_eq "an unkeyed write's audit row names no request" "resume f" \
	"$(sql "select action, details ? 'api_request' from audit_log order by id desc limit 1" | tr '|' ' ')"
# the stamp is JSON: a key that is not UTF-8 is refused as a bad key, before anything is done
A0=$(audits)
S=$(curl -s -o "$NODE_DIR/ans-bad" -w '%{http_code}' -X POST -H "Authorization: Bearer $TOK" \
	-H 'Content-Type: application/json' -H $'Idempotency-Key: k\xff' --data '{"reason":"r"}' \
	"http://${NODE_ADMIN[r2]}/api/v1/jobs/lost.b/pause")
expect_eq "a key that is not UTF-8: 400 bad-idempotency-key, nothing done" \
	"400 urn:palisade:problem:bad-idempotency-key $A0" \
	"$S $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("type"))' "$NODE_DIR/ans-bad") $(audits)"

# 7. a drain: its audit row commits, then the node is asked to drain; a node killed
# after that and restarted is asked again on the retry (a second drain is harmless)
die_after_commit d-1 /drain '{"reason":"maint"}'
start_node r1
wait_until "node r1 restarted and ready" 20 ready r1
S=$(call r1 d-1 /drain '{"reason":"maint"}')
expect_eq "the retried drain is run again on the restarted node: 202" 202 "$S"
drained() { ! node_alive r1 || ! ready r1; }
wait_until "... and the node drains" 15 drained
stop_node r1
stop_node r2
finish
