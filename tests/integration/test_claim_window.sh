#!/usr/bin/env bash
# A command that ends a job's old instants while an executor claims ahead:
# `delete` (the retirement) and an apply of a version that takes over at
# its apply (a cron job made a one-shot).  Each waits on the job's row
# (held by the test's session) until an executor has claimed an instant
# after the command's transaction began, up to claim_ahead early.  The
# claimed run finishes on its own (docs/operations.md, "Retiring a job";
# docs/jobs.md, "Where a new version takes over"); verify must judge it as
# claimed before the retiring or new version was stored, not as a run
# outside every version's range (unexpected): each version is stored once
# the job's unclaimed rows are locked, not when the command began.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2 - a run claimed while its job was being retired, or while a version taking over at its apply was stored, is one the command left to finish, not unexpected"
fresh_db it_claim_window
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
trap 'stop_all_nodes; stop_sink' EXIT
SHARDS=1 LOOKAHEAD=10s write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=1
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
printf 'jobs:\n  - {id: rw.del, schedule: {cron: "* * * * * ?"}, target: {url: "http://%s/effects/rw"}}\n  - {id: rw.one, schedule: {cron: "* * * * * ?"}, target: {url: "http://%s/effects/rw"}}\n' \
	"$SINK_ADDR" "$SINK_ADDR" >"$NODE_DIR/rw.yaml"
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/rw.yaml"
start_node n1
wait_until "shards led" 20 all_shards_led

# window J WHAT CMD...: while the test's session holds J's row, CMD (which
# ends J's old instants) waits on it until an instant K after its
# transaction began is claimed; then the row is let go, CMD commits, and
# the claimed run finishes, nothing after it runs, and verify is clean.
window() {
	local j=$1 what=$2 cmd
	shift 2
	ran() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$j' and state = 'succeeded'")" -ge 3 ]; }
	wait_until "$j runs" 30 ran
	local t0 held cmd_pid k
	t0=$(rfc3339_ago 1)
	coproc HOLD { "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 2>&1; }
	echo "begin; select 'held' from jobs where job_id = '$j' for update;" >&"${HOLD[1]}"
	read -r -t 10 held <&"${HOLD[0]}"
	expect_eq "the test's session holds $j's row" held "${held:-}"
	"$@" >"$NODE_DIR/$j.out" 2>&1 &
	cmd_pid=$!
	local waiting="wait_event_type = 'Lock' and query like '%FOR UPDATE OF j%'"
	waits() { [ -n "$(sql "select 1 from pg_stat_activity where $waiting")" ]; }
	wait_until "$what waits on the held row" 30 waits
	k=$(sql "select ceil(extract(epoch from xact_start))::bigint + 1 from pg_stat_activity where $waiting")
	claimed() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$j' and scheduled_at = to_timestamp($k) and state <> 'pending'")" = 1 ]; }
	wait_until "the instant of $j after $what began is claimed while it waits" 30 claimed
	echo "commit;" >&"${HOLD[1]}"
	eval "exec ${HOLD[1]}>&-"
	wait "$HOLD_PID" 2>/dev/null
	wait "$cmd_pid"
	expect_eq "$what (exit 0)" 0 "$?"
	sed 's/^/    | /' "$NODE_DIR/$j.out"
	done_k() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$j' and scheduled_at = to_timestamp($k) and state = 'succeeded'")" = 1 ]; }
	wait_until "the claimed run of $j finished" 30 done_k
	echo "    figure: $j's last version stored at $(sql "select created_at from job_versions where job_id = '$j' order by version desc limit 1"), the claimed instant is $(date -u -d "@$k" +%H:%M:%SZ)"
	expect_eq "no run of $j after the claimed one" 0 \
		"$(sql "select count(*) from trigger_jobs where job_id = '$j' and scheduled_at > to_timestamp($k) and state <> 'cancelled'")"
	expect_exit "verify $j" 0 "$PAL" verify --job "$j" --from "$t0" --to "$(date -u -d "@$k" +%Y-%m-%dT%H:%M:%SZ)"
	expect_match "verify $j: nothing missing, no duplicate, nothing unexpected" "missing=0 duplicates=0 unexpected=0 " "$OUT"
}

window rw.del "delete's retire" "$PAL" delete --reason "claim window" rw.del
AT=$(date -u -d "@$(( $(date +%s) + 120 ))" +%Y-%m-%dT%H:%M:%SZ)
printf 'jobs:\n  - {id: rw.one, schedule: {at: "%s"}, target: {url: "http://%s/effects/rw"}}\n' \
	"$AT" "$SINK_ADDR" >"$NODE_DIR/one.yaml"
window rw.one "the apply of a one-shot" "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/one.yaml"
finish
