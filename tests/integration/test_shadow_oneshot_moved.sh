#!/usr/bin/env bash
# A one-shot moved while its job is in shadow, then cut over: the apply
# drops (audited trigger.drop) the replaced version's shadow row at the
# old instant, as it drops an excluded pending one, so the cut-over, which
# makes every shadow row from its instant on live, finds only the new
# version's row: the one-shot runs once, at its new instant (one effect).
# verify agrees.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a one-shot moved while in shadow fires once after the cut-over"
fresh_db it_shadow_oneshot_moved
"$PAL" migrate >/dev/null
start_sink || { fail "sink starts"; finish; exit 1; }
SHARDS=2; LOOKAHEAD=5s SHARDS=2 write_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
sed -i 's/roles: \[controller\]/roles: [controller, executor]/' "$CLUSTER_CONF"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
start_node f1
wait_until "shards led" 40 all_shards_led
J=so.job-1
NOW=$(date +%s)
gen_sink_jobs "$NODE_DIR/so.yaml" 1 "unused" t1 so "mode: shadow"
sed -i "s|schedule: {cron: \"unused\"}|schedule: {at: $(iso $((NOW + 10)))}|" "$NODE_DIR/so.yaml"
expect_exit "apply the one-shot at now + 10 s" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/so.yaml"
planned() { [ "$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at = to_timestamp($((NOW + 10)))")" = 1 ]; }
wait_until "its instant is planned (shadow)" 10 planned
sed -i "s|at: [0-9TZ:-]*|at: $(iso $((NOW + 14)))|" "$NODE_DIR/so.yaml"
expect_exit "move it to now + 14 s (still in shadow)" 0 "$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/so.yaml"
A=$(date +%s)
sleep 2
expect_eq "the old instant's shadow row is dropped by the apply" 0 \
	"$(sql "select count(*) from trigger_jobs where job_id = '$J' and scheduled_at = to_timestamp($((NOW + 10)))")"
expect_eq "... audited (trigger.drop) with the takeover's cause" 1 \
	"$(sql "select count(*) from audit_log where action = 'trigger.drop' and scope = 'job:$J' and details ->> 'cause' like 'a shadow instant of the version that a version taking over at its apply%'")"
sql "select version, extract(epoch from scheduled_at)::bigint - $NOW, state from trigger_jobs where job_id = '$J' order by scheduled_at" | sed 's/^/    /'
expect_exit "cut the job over (100 %, now)" 0 "$PAL" cutover --config "$CLUSTER_CONF" --job $J --percent 100 --at "$(iso $(date +%s))" --reason go
sql "select version, extract(epoch from scheduled_at)::bigint - $NOW, state from trigger_jobs where job_id = '$J' order by scheduled_at" | sed 's/^/    /'
sleep $((NOW + 20 - $(date +%s)))
sql "select version, extract(epoch from scheduled_at)::bigint - $NOW, state from trigger_jobs where job_id = '$J' order by scheduled_at" | sed 's/^/    /'
expect_eq "the job ran once (at its new instant)" "$((NOW + 14))" \
	"$(sql "select coalesce(string_agg(extract(epoch from scheduled_at)::bigint::text, ' ' order by scheduled_at), '') from trigger_jobs where job_id = '$J' and state = 'succeeded'")"
expect_eq "one effect at the sink" 1 "$(sql "select count(*) from sink_effects where idempotency_key like '$J/%'")"
"$PAL" verify --from "$(iso "$NOW")" --to "$(iso $((NOW + 20)))" --sink-pg "$PALISADE_PG" >"$NODE_DIR/v.out" 2>&1; rc=$?
sed 's/^/    /' "$NODE_DIR/v.out" | head -4
expect_eq "verify is clean" 0 "$rc"
finish
