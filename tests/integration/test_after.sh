#!/usr/bin/env bash
# Dependencies between jobs (`after:`): a job runs once per upstream
# instant whose condition held, and every other instant is a misfire with
# the reason; a kill -9 of the executor whose result commit of the
# upstream is in flight, and of the controller planning the dependent
# jobs, changes nothing.
#
# Controllers (c1, c2) and executors (e1, e2) are separate nodes, so each
# kill hits one role.  The executor's kill lands while its commit of a
# dep.a result is in flight: the test holds a row lock on that trigger
# (SELECT ... FOR UPDATE in its own session) from just after the claim, so
# the commit statement, sent when the call answered (dep.a's target
# answers after 800 ms), waits in PostgreSQL; once pg_stat_activity shows
# it waiting on the test's session, the executor is killed -9 and the lock
# released.  Whether that commit lands (PostgreSQL received it whole) or
# not, the instant must end once, with dep.a's answer.
#
# Short by default (make test: a window of ~17 s, one kill of each);
# as the drill after-kill9 (chaos/run.sh, make chaos) or with
# AFTER_SECONDS=N, a window of N s (the drill: 120) with a kill of each
# kind every ~30 s.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "G1/G2/G4 - a dependent job gets exactly one trigger for each upstream instant whose condition held and a misfire (upstream_failed, upstream_late) naming the upstream for every other, across kill -9 of the executor committing the upstream's result and of the dependent job's controller"
case ${PALISADE_DRILL:-} in after-kill9) AFTER_SECONDS=${AFTER_SECONDS:-120} ;; esac
LONG=${AFTER_SECONDS:-0}

fresh_db it_after
"$PAL" migrate >/dev/null
# This release's writers set job_ref themselves (041): with the trigger
# that fills it for older writers off, every row still carries it.
sql "ALTER TABLE triggers DISABLE TRIGGER triggers_job_ref"
start_badserver "target up"
SHARDS=4 write_conf "$CLUSTER_CONF" "executor: {lease: 5s, heartbeat: 1s}"
SHARDS=4
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
url() { echo "{url: \"http://127.0.0.1:$port/$1\", timeout: 2s}"; }
# dep.a fails on a known third of its instants (badserver.py /third); dep.b
# runs after its successes, dep.c after dep.a and dep.b (fan-in), dep.l
# after dep.a and a job that never has those instants (late after 2 s).
# dep.p has two partitions failing on different instants: dep.q (two
# partitions) maps partition to partition, dep.r (three) waits for both.
cat >"$NODE_DIR/jobs.yaml" <<YAML
jobs:
  - {id: dep.a, schedule: {cron: "*/2 * * * * ?"}, target: $(url "third?delay_ms=800"), retry: {max_attempts: 3, backoff: {initial: 200ms, max: 500ms}}}
  - {id: dep.b, after: [{job: dep.a, on: succeeded}], target: $(url log/b)}
  - {id: dep.c, after: [{job: dep.a}, {job: dep.b}], target: $(url log/c)}
  - {id: dep.never, schedule: {cron: "0 0 0 1 1 ? 2099"}, target: $(url log/never)}
  - {id: dep.l, after: [{job: dep.a, on: finished}, {job: dep.never, within: 2s}], target: $(url log/l)}
  - {id: dep.p, partitions: 2, schedule: {cron: "*/2 * * * * ?"}, target: $(url third), retry: {max_attempts: 3, backoff: {initial: 200ms, max: 500ms}}}
  - {id: dep.q, partitions: 2, after: [{job: dep.p}], target: $(url log/q)}
  - {id: dep.r, partitions: 3, after: [{job: dep.p}], target: $(url log/r)}
YAML
expect_exit "apply of jobs with after:" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
# Refusals (exit 65, file:line:col): an upstream known only to the cluster
# is unknown to validate but fine for apply; a cycle through stored jobs.
cat >"$NODE_DIR/more.yaml" <<YAML
jobs:
  - {id: dep.x, after: [{job: dep.a}], target: $(url log/x)}
YAML
out=$("$PAL" validate "$NODE_DIR/more.yaml" 2>&1); rc=$?
expect_eq "validate: an upstream outside the files is unknown (exit 65)" 65 "$rc"
expect_match "validate: ... named at file:line:col" "more.yaml:2:31: error: after.job: unknown job \"dep.a\"" "$out"
expect_exit "apply: the same upstream is stored, so the file is accepted (dry run)" 0 \
	"$PAL" apply --dry-run --config "$CLUSTER_CONF" "$NODE_DIR/more.yaml"
cat >"$NODE_DIR/cycle.yaml" <<YAML
jobs:
  - {id: dep.a, after: [{job: dep.c}], target: $(url third)}
YAML
out=$("$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/cycle.yaml" 2>&1); rc=$?
expect_eq "apply: a cycle through stored jobs is refused (exit 65)" 65 "$rc"
expect_match "apply: ... at the upstream's position" "cycle.yaml:2:31: error: after: job \"dep.a\" waits for itself \(dep.a -> dep.c -> dep.a\)" "$out"
for n in c1 c2; do start_node "$n" --roles controller; done
for n in e1 e2; do start_node "$n" --roles executor; done
wait_until "shards led" 20 all_shards_led
T0=$(( $(date +%s) + 3 ))
declare -A ROLE=([c1]=controller [c2]=controller [e1]=executor [e2]=executor)
leader() { sql "select s.leader from shards s join jobs j on j.shard = s.shard_id where j.job_id = '$1'"; }
EXEC_KILLS=0 CTL_KILLS=0 TRIES=0
declare -A HELD # trigger id -> the executor killed while committing it

# kill_committing_executor: the kill -9 of the executor whose commit of a
# dep.a result is in flight (held by a row lock of the test's session).
kill_committing_executor() {
	local id owner holder blocked state i
	coproc HOLD { "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 2>&1; }
	for i in $(seq 1 30); do
		read -r id owner < <(sql "select id, lease_owner from trigger_jobs where job_id = 'dep.a' and state = 'running' and request_id is null order by scheduled_at desc limit 1" | tr '|' ' ')
		[ -n "${id:-}" ] && break
		sleep 0.2
	done
	[ -n "${id:-}" ] || { fail "a dep.a trigger is running to hold"; return; }
	echo "begin; select pg_backend_pid(), state from triggers where id = $id for update;" >&"${HOLD[1]}"
	IFS='|' read -r -t 10 holder state <&"${HOLD[0]}"
	TRIES=$((TRIES + 1))
	if [ "$state" != running ] && [ "$TRIES" -lt 5 ]; then # it committed first: the next one
		echo "rollback;" >&"${HOLD[1]}"; eval "exec ${HOLD[1]}>&-"; wait "$HOLD_PID" 2>/dev/null
		kill_committing_executor
		return
	fi
	# the result commit (src/store/exec.c, COMMIT_CTES) by the alias list
	# near its start: pg_stat_activity keeps a statement's first 1 KiB
	commit_waits() { [ "$(sql "select count(*) from pg_stat_activity where $holder = any(pg_blocking_pids(pid)) and query like '%AS u(id, fence, st, err, http, nxt, dur, ikey, tr, unk, sq, rnode)%'")" -ge 1 ]; }
	if wait_until "the commit of dep.a's trigger $id (by $owner) waits on the test's lock" 10 commit_waits; then
		kill9_node "$owner"
		EXEC_KILLS=$((EXEC_KILLS + 1))
		HELD[$id]=$owner
		echo "    killed -9 $owner (executor, its commit of trigger $id in flight) at +$(( $(date +%s) - T0 + 3 )) s"
	fi
	echo "commit;" >&"${HOLD[1]}"; eval "exec ${HOLD[1]}>&-"; wait "$HOLD_PID" 2>/dev/null
	KILLED_EXEC=$owner
	TRIES=0
}
kill_controller_of_b() {
	local victim; victim=$(leader dep.b)
	case "$victim" in c1|c2) ;; *) fail "dep.b's shard has a leader ($victim)"; return ;; esac
	kill9_node "$victim"
	CTL_KILLS=$((CTL_KILLS + 1))
	echo "    killed -9 $victim (controller leading dep.b's shard) at +$(( $(date +%s) - T0 + 3 )) s"
	KILLED_CTL=$victim
}
end=$(( T0 + (LONG > 0 ? LONG : 17) ))
sleep 4
while :; do
	kill_committing_executor
	kill_controller_of_b
	sleep 4
	start_node "$KILLED_EXEC" --roles executor
	start_node "$KILLED_CTL" --roles controller
	# a dependent job applied while dep.a runs: its instants begin at its
	# activation, none before (neither planned nor missing for verify)
	if [ -z "${LATE_APPLIED:-}" ]; then
		LATE_APPLIED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
		echo "  - {id: dep.late, after: [{job: dep.a}], target: $(url log/late)}" >>"$NODE_DIR/jobs.yaml"
		expect_exit "dep.late (after dep.a) applied mid-run" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/jobs.yaml"
	fi
	[ "$LONG" -gt 0 ] && [ $(( $(date +%s) + 30 )) -lt "$end" ] || break
	sleep 22
done
# The window ends at $end, or 6 s before the last round ended; the checks
# wait for it to be planned, decided and ended, not a fixed 6 s.
now=$(date +%s)
[ "$now" -lt "$end" ] && sleep $(( end - now ))
T1=$(( $(date +%s) - 6 ))
[ "$T1" -lt "$end" ] && T1=$end
from=$(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ)
to=$(date -u -d "@$T1" +%Y-%m-%dT%H:%M:%SZ)
in_window="scheduled_at between '$from' and '$to'"
decided() { [ "$(sql "select count(*) from after_watermarks where watermark < '$to'")" = 0 ] &&
	[ "$(sql "select count(*) from after_watermarks")" = 6 ]; }
wait_until "every dependent job decided up to the window's end" 15 decided ||
	{ sql "select job_id, watermark, epoch from after_watermarks order by 1" | sed 's/^/      watermark: /'
	  sql "select shard_id, watermark, leader, epoch from shards order by 1" | sed 's/^/      shard: /'
	  sql "select job_id, scheduled_at, partition, state, lease_owner from trigger_jobs where job_id like 'dep.%' and scheduled_at <= '$to' and state not in ('succeeded', 'failed', 'cancelled', 'skipped') order by 2" | sed 's/^/      open: /'
	  date -u +"      now: %H:%M:%S (window to $to)"
	  grep -h after_failed "$NODE_DIR"/c*.log | tail -3; }
wait_until "every shard planned past the window" 15 planned_past "$to"
ended() { [ "$(sql "select count(*) from trigger_jobs where job_id like 'dep.%' and $in_window and state not in ('succeeded', 'failed', 'cancelled', 'skipped')")" = 0 ]; }
wait_until "every trigger of the window ended" 30 ended

n_a=$(sql "select count(*) from trigger_jobs where job_id = 'dep.a' and $in_window")
n_failed=$(sql "select count(*) from trigger_jobs where job_id = 'dep.a' and state = 'failed' and $in_window")
echo "    figure: dep.a instants in the window $n_a, failed $n_failed"
check "dep.a ran every 2 s over the window (>= 7 instants)" [ "$n_a" -ge 7 ]
expect_eq "dep.a failed on exactly its known third (instant/2 mod 3 = 0)" \
	"$(sql "select count(*) from trigger_jobs where job_id = 'dep.a' and $in_window and (extract(epoch from scheduled_at)::bigint / 2) % 3 = 0")" "$n_failed"
expect_eq "every dep.a instant of the window ended" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = 'dep.a' and $in_window and state not in ('succeeded', 'failed')")"

# For each upstream instant of the window: what each dependent job must have.
# got(J, t, p) = 'trigger' | the misfire reason and upstream | 'none', 'twice'
cat >"$NODE_DIR/expect.sql" <<SQL
create temp view got as
select j.job_id, a.scheduled_at as at, g.p,
       (select count(*) from trigger_jobs t where t.job_id = j.job_id and t.request_id is null and t.scheduled_at = a.scheduled_at and t.partition = g.p) as trig,
       (select string_agg(m.reason || ':' || m.upstream_job || ':' || coalesce((m.upstream_trigger = u.id)::text, 'null'), ',')
          from misfires m left join triggers u on u.id = m.upstream_trigger
         where m.job_id = j.job_id and m.range_from <= a.scheduled_at and m.range_to >= a.scheduled_at and (m.partition is null or m.partition = g.p)) as mis
  from (values ('dep.b', 'dep.a', 1), ('dep.c', 'dep.a', 1), ('dep.l', 'dep.a', 1), ('dep.q', 'dep.p', 2), ('dep.r', 'dep.p', 3)) j(job_id, up, parts)
  join (select distinct job_id, scheduled_at from trigger_jobs where $in_window and request_id is null) a on a.job_id = j.up
  cross join lateral generate_series(0, j.parts - 1) g(p);
SQL
q() { sql_run "$1" "$PSQL" "$PALISADE_PG" -XAtq -v ON_ERROR_STOP=1 -f "$NODE_DIR/expect.sql" -c "$1"; }
st() { echo "(select state from trigger_jobs x where x.job_id = '$1' and x.scheduled_at = got.at and x.partition = $2)"; }
bad() { q "select count(*) from got where job_id = '$1' and not ($2)"; }
show() { q "select job_id, at, p, trig, coalesce(mis, '-') from got where job_id = '$1' and not ($2) limit 5" | sed 's/^/      /'; }
expect_case() {
	local n; n=$(bad "$2" "$3")
	expect_eq "$1" 0 "$n"
	[ "$n" = 0 ] || show "$2" "$3"
}
expect_case "dep.b: one trigger where dep.a succeeded, else one upstream_failed naming dep.a's trigger" dep.b \
	"case when $(st dep.a 0) = 'succeeded' then trig = 1 and mis is null else trig = 0 and mis = 'upstream_failed:dep.a:true' end"
expect_case "dep.c (fan-in): one trigger where dep.a and dep.b succeeded, else upstream_failed naming dep.a's trigger" dep.c \
	"case when $(st dep.a 0) = 'succeeded' and $(st dep.b 0) = 'succeeded' then trig = 1 and mis is null else trig = 0 and mis = 'upstream_failed:dep.a:true' end"
expect_case "dep.l: dep.a finished either way, dep.never has no such instant: upstream_late naming dep.never, never a trigger" dep.l \
	"trig = 0 and mis = 'upstream_late:dep.never:null'"
expect_case "dep.q (same partition count): partition p runs after dep.p's partition p succeeded, else upstream_failed naming that trigger" dep.q \
	"case when $(st dep.p p) = 'succeeded' then trig = 1 and mis is null else trig = 0 and mis = 'upstream_failed:dep.p:true' end"
expect_case "dep.r (3 partitions after 2): every partition waits for both of dep.p's" dep.r \
	"case when $(st dep.p 0) = 'succeeded' and $(st dep.p 1) = 'succeeded' then trig = 1 and mis is null else trig = 0 and mis like 'upstream_failed:dep.p:true' end"
for j in dep.b dep.c dep.q dep.r; do
	echo "    figure: $j: $(q "select count(*) filter (where trig = 1) || ' triggers, ' || count(*) filter (where mis is not null) || ' misfires' from got where job_id = '$j'")"
done
check "dep.q ran some partitions and misfired others at one instant (partition to partition)" \
	[ "$(q "select count(*) from (select at from got where job_id = 'dep.q' group by at having count(*) filter (where trig = 1) = 1) x")" -ge 1 ]
expect_eq "no dependent trigger at an instant that is not its upstream's" 0 \
	"$(sql "select count(*) from trigger_jobs t join jobs j on j.job_id = t.job_id join job_versions v on v.job_id = j.job_id and v.version = j.active_version where v.spec ? 'after' and not exists (select 1 from trigger_jobs u where u.job_id = v.spec->'after'->0->>'job' and u.scheduled_at = t.scheduled_at and u.request_id is null)")"
# What the service saw: dep.b's calls stand for the upstream's instant.
n_b=$(sql "select count(*) from trigger_jobs where job_id = 'dep.b' and $in_window and state = 'succeeded'")
wrong=$(sql "select to_char(scheduled_at at time zone 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') from trigger_jobs where job_id = 'dep.b' and $in_window and state = 'succeeded'" |
	while read -r at; do grep -q "^req /log/b $at dep.b/$at/0 200$" "$NODE_DIR/bad.log" || echo "$at"; done | wc -l)
check "dep.b ran at least 4 instants in the window ($n_b)" [ "$n_b" -ge 4 ]
expect_eq "each dep.b call carried Palisade-Scheduled-At = the upstream instant and the key naming it" 0 "$wrong"
expect_exit "verify: every instant planned or recorded, dependency instants included" 0 \
	"$PAL" verify --from "$from" --to "$to"
started=$(date -u -d "@$(( T0 - 10 ))" +%Y-%m-%dT%H:%M:%SZ)
expect_eq "dep.late: no trigger before its activation, triggers after it" "0 true" \
	"$(sql "select count(*) filter (where t.scheduled_at <= v.effective_from) || ' ' || (count(*) filter (where t.scheduled_at > v.effective_from) > 0) from trigger_jobs t join job_versions v on v.job_id = t.job_id where t.job_id = 'dep.late'")"
expect_exit "verify from before any activation: an upstream instant before a dependent job's activation is not its instant (none missing)" 0 \
	"$PAL" verify --from "$started" --to "$to"
# verify's dependency check can fail: a dependent trigger that vanished
# (the controller never plans an instant below its watermark again)
sql "delete from triggers where id = (select min(id) from trigger_jobs where job_id = 'dep.b' and $in_window)" >/dev/null
out=$("$PAL" verify --from "$from" --to "$to" 2>&1); rc=$?
expect_eq "verify: a dependent trigger deleted is found missing (exit 2)" 2 "$rc"
expect_match "verify: ... and named" "missing=1 " "$out"
# The console's job page: upstreams and downstreams (its JSON model and the page)
model=$(curl -s "http://${NODE_ADMIN[c1]}/api/job?id=dep.a")
expect_eq "console: dep.a's downstreams" "dep.b dep.c dep.l dep.late" \
	"$(jq -r '[.after.downstreams[].job] | join(" ")' <<<"$model")"
model=$(curl -s "http://${NODE_ADMIN[c1]}/api/job?id=dep.c")
expect_eq "console: dep.c's upstreams, in its order" "dep.a dep.b" \
	"$(jq -r '[.after.upstreams[].job] | join(" ")' <<<"$model")"
expect_match "console: dep.c's page lists them" 'runs after \(upstreams\).*dep\.a.*dep\.b' \
	"$(curl -s "http://${NODE_ADMIN[c1]}/console/job?id=dep.c" | tr -d '\n')"
# The killed executors' commits: the statement had reached PostgreSQL
# whole, so it ran once the lock went (the trigger ended with the dead
# executor's token), or it did not and the lease ran out (another
# executor's attempt ended it); either way once, as the checks above say.
landed=0
for id in "${!HELD[@]}"; do
	[ "$(sql "select count(*) from triggers t where t.id = $id and t.state in ('succeeded', 'failed') and t.fence = (select max(a.fence) from attempt_ledger a where a.trigger_id = $id and a.node = '${HELD[$id]}')")" = 1 ] &&
		landed=$((landed + 1))
done
echo "    figure: kills: $EXEC_KILLS executors with a commit of dep.a in flight (its commit landed after the kill: $landed), $CTL_KILLS controllers of dep.b's shard"
check "each round killed an executor mid-commit and dep.b's controller ($EXEC_KILLS, $CTL_KILLS)" \
	[ "$EXEC_KILLS" -ge 1 -a "$EXEC_KILLS" = "$CTL_KILLS" ]
held_ids=$(IFS=,; echo "${!HELD[*]}")
expect_eq "every held dep.a trigger ended (succeeded or failed, as its instant's third says)" "${#HELD[@]}" \
	"$(sql "select count(*) from triggers where id in (${held_ids:-0}) and state in ('succeeded', 'failed')")"
refs=$(sql "select count(*) filter (where t.job_ref is distinct from j.ref) || ' ' ||
              count(*) filter (where t.job_id in ('dep.b', 'dep.c', 'dep.q', 'dep.r') and t.job_ref = j.ref)
            from triggers t join jobs j using (job_id)")
check "the planned and the dependency-planned rows carry their job's ref (041; its fill trigger off; wrong, dependent: $refs)" \
	[ "${refs% *}" = 0 -a "${refs#* }" -gt 0 ]
echo "    figure: test took $SECONDS s"
finish
