#!/usr/bin/env bash
# A one-shot `at` re-applied while the old version has planned up to the
# shard's watermark (the lookahead ahead): the new version takes over at the
# apply, not at the watermark (docs/jobs.md, "Where a new version takes
# over"). A one-shot moved into the lookahead fires once at its new instant;
# one moved later after its old instant was planned fires once, at the new
# instant; one re-applied with the same instant and another target fires
# once; a cron job changed into a one-shot runs nothing of the cron after the
# apply and its one-shot once. verify agrees.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a one-shot moved or changed fires once, at its new instant"
fresh_db it_reapply_at
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
mk() { gen_sink_jobs "$NODE_DIR/$1.yaml" 1 "unused" t1 "$1"; sed -i "s|schedule: {cron: \"unused\"}|schedule: {at: $(iso "$2")}|" "$NODE_DIR/$1.yaml"; }
start_node f1
wait_until "shards led" 40 all_shards_led
sleep 1
NOW=$(date +%s)
T0=$(iso $((NOW - 1)))
mk am.early $((NOW + 600))
mk am.later $((NOW + 8))
mk am.same $((NOW + 8))
gen_sink_jobs "$NODE_DIR/am.cron.yaml" 1 "* * * * * ?" t1 am.cron
F=("$NODE_DIR"/am.early.yaml "$NODE_DIR"/am.later.yaml "$NODE_DIR"/am.same.yaml "$NODE_DIR"/am.cron.yaml)
expect_exit "apply" 0 "$PAL" apply --config "$CLUSTER_CONF" "${F[@]}"
planned() { has "select count(*) from trigger_jobs where job_id = '$1' and scheduled_at = to_timestamp($2)"; }
both_planned() { planned am.later.job-1 $((NOW + 8)) && planned am.same.job-1 $((NOW + 8)); }
wait_until "the one-shots at now + 8 s are planned" 10 both_planned
# moved to 3 s from now (inside the lookahead); moved 10 s later; the same
# instant with another timeout; the cron job made a one-shot 3 s from now
ATM=$(( $(date +%s) + 3 ))
sed -i "s|at: [0-9TZ:-]*|at: $(iso $ATM)|" "$NODE_DIR/am.early.yaml"
sed -i "s|at: [0-9TZ:-]*|at: $(iso $((NOW + 18)))|" "$NODE_DIR/am.later.yaml"
sed -i "s|timeout: 2s|timeout: 3s|" "$NODE_DIR/am.same.yaml"
sed -i "s|schedule: {cron: \"\* \* \* \* \* ?\"}|schedule: {at: $(iso $ATM)}|" "$NODE_DIR/am.cron.yaml"
expect_exit "re-apply: moved earlier, moved later, same instant, cron to one-shot" 0 "$PAL" apply --config "$CLUSTER_CONF" "${F[@]}"
APPLIED=$(date +%s.%N)
A=$(sql "select floor(extract(epoch from created_at))::bigint from job_versions where job_id = 'am.cron.job-1' and version = 2")
sleep $((NOW + 24 - $(date +%s)))
T1=$(iso $((NOW + 22)))
settled() { [ "$(sql "select count(*) from triggers where scheduled_at <= '$T1' and state not in ('succeeded','failed','cancelled','skipped')")" = 0 ]; }
wait_until "settled" 30 settled
sql "select job_id, extract(epoch from scheduled_at)::bigint - $NOW, state, version from trigger_jobs where scheduled_at <= '$T1' and job_id <> 'am.cron.job-1' or scheduled_at > to_timestamp($A) order by 1, 2" | sed 's/^/    /'
ran() { sql "select coalesce(string_agg(extract(epoch from scheduled_at)::bigint::text, ' ' order by scheduled_at), '') from trigger_jobs where job_id = '$1' and state = 'succeeded' and scheduled_at > to_timestamp(${2:-0})"; }
for j in am.early am.later am.same am.cron; do
	sql "select version, floor(extract(epoch from effective_from))::bigint - floor(extract(epoch from created_at))::bigint from job_versions where job_id = '$j.job-1' and version = 2" | sed "s/^/    $j v2 effective_from - created_at: /"
done
expect_eq "the one-shot moved into the lookahead fires once, at its new instant" "$ATM" "$(ran am.early.job-1)"
expect_eq "the one-shot moved later fires once, at its new instant" "$((NOW + 18))" "$(ran am.later.job-1)"
expect_eq "its old instant, planned before the apply, is cancelled" cancelled \
	"$(sql "select state from trigger_jobs where job_id = 'am.later.job-1' and scheduled_at = to_timestamp($((NOW + 8)))")"
expect_eq "the one-shot re-applied with the same instant fires once" "$((NOW + 8))" "$(ran am.same.job-1)"
# a row claimed (claim_ahead) before the apply is left to finish
early=$(sql "select count(*) from triggers t where job_id = 'am.cron.job-1' and scheduled_at > to_timestamp($A) and scheduled_at <> to_timestamp($ATM)
  and state <> 'cancelled' and not exists (select 1 from attempt_ledger a where a.trigger_id = t.id
  and a.scheduled_at = t.scheduled_at and a.claimed_at < to_timestamp($APPLIED))")
expect_eq "the cron made a one-shot runs nothing of the cron after the apply" 0 "$early"
expect_eq "and its one-shot once" 1 "$(sql "select count(*) from trigger_jobs where job_id = 'am.cron.job-1' and scheduled_at = to_timestamp($ATM) and state = 'succeeded'")"
"$PAL" verify --from "$T0" --to "$T1" --sink-pg "$PALISADE_PG" >"$NODE_DIR/v.out" 2>&1; rc=$?
sed 's/^/    /' "$NODE_DIR/v.out" | head -4
expect_eq "verify is clean" 0 "$rc"
stop_node f1
finish
