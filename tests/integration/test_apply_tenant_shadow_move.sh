#!/usr/bin/env bash
# One apply moves job S from tenant t2 (in shadow) into tenant t1 (live,
# never in shadow) and job L the other way.  Their rows planned ahead
# (lookahead 30 s) move with them and, from the apply on, change sides in
# the apply's transaction (move_triggers, src/store/apply.c): S's shadow rows
# go pending (a trigger.live audit row) and palisade calls every instant;
# L's pending rows go shadow (a trigger.shadow audit row) and palisade calls
# none of them (the old system runs them).
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job moved between a shadow and a live tenant is called by palisade exactly when its new scope is live, from the apply on"
it_db
sink_up
SHARDS=1
LOOKAHEAD=30s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
lead_shards 40 f1
expect_exit "tenant t2 in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --tenant t2 --reason s
S=sm.job-1 L=lv.job-1
gen_sink_jobs "$NODE_DIR/s1.yaml" 1 "* * * * * ?" t2 sm
gen_sink_jobs "$NODE_DIR/l1.yaml" 1 "* * * * * ?" t1 lv
expect_exit "apply S (tenant t2, shadow) and L (tenant t1, live), every second" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s1.yaml" "$NODE_DIR/l1.yaml"
ahead() { # job state: a row of it in that state 20 s ahead
	[ "$(sql "select count(*) from trigger_jobs where job_id = '$1' and state = '$2' and scheduled_at > now() + interval '20 s'")" -ge 1 ]
}
both_ahead() { ahead $S shadow && ahead $L pending; }
wait_until "S planned ahead (shadow) and L (pending)" 30 both_ahead
gen_sink_jobs "$NODE_DIR/s2.yaml" 1 "* * * * * ?" t1 sm
gen_sink_jobs "$NODE_DIR/l2.yaml" 1 "* * * * * ?" t2 lv
"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s2.yaml" "$NODE_DIR/l2.yaml" >"$NODE_DIR/ap.out" 2>&1
expect_eq "one apply moves S into t1 and L into t2" 0 "$?"
A=$(date +%s)
sed 's/^/    apply: /' "$NODE_DIR/ap.out"
sleep 2
rows() { sql "select string_agg(version || ':' || tenant || ':' || state || '=' || n, ' ') from (select version, tenant, state, count(*) n from triggers where job_id = '$1' and scheduled_at > to_timestamp($A) group by 1, 2, 3 order by 1, 2, 3) s"; }
echo "    S rows after A: $(rows $S)"
echo "    L rows after A: $(rows $L)"
expect_eq "palisade's own view: S is live, L shadow" "1 0" \
	"$(sql "select concat_ws(' ', palisade_trigger_live('$S', 't1', 'default', now())::int, palisade_trigger_live('$L', 't2', 'default', now())::int)")"
expect_eq "no S row after the apply is left shadow" 0 \
	"$(sql "select count(*) from triggers where job_id = '$S' and state = 'shadow' and scheduled_at > to_timestamp($A)")"
expect_eq "no L row from A+2 on is left to palisade" 0 \
	"$(sql "select count(*) from triggers where job_id = '$L' and state <> 'shadow' and scheduled_at > to_timestamp($A + 1)")"
audit() { sql "select count(*) from audit_log where action = '$1' and scope = 'job:$2' and details ->> 'cause' like 'its job moved to a tenant or group%' and (details ->> 'moved')::int >= 25"; }
expect_eq "one trigger.live audit row for S, one trigger.shadow for L, none the other way" "1 1 0 0" \
	"$(audit trigger.live $S) $(audit trigger.shadow $L) $(audit trigger.shadow $S) $(audit trigger.live $L)"
sleep $((A + 20 - $(date +%s)))
expect_eq "every second of S from A+2 to A+18 called" 17 \
	"$(sql "select count(distinct scheduled_at) from sink_effects where idempotency_key like '$S/%' and scheduled_at between to_timestamp($A + 2) and to_timestamp($A + 18)")"
"$PAL" verify --job $S --from "$(iso $((A + 2)))" --to "$(iso $((A + 18)))" >"$NODE_DIR/v.out" 2>&1
expect_eq "verify S from A+2 to A+18: OK" 0 "$?"
sed 's/^/    verify: /' "$NODE_DIR/v.out" | head -2
E=$(sql "select extract(epoch from max(scheduled_at))::bigint from triggers where job_id = '$L' and version = 1")
echo "    L's v1 last row at A+$((E - A))"
sleep $((E + 4 - $(date +%s)))
expect_eq "palisade calls none of L's instants from A+2 on (the old system runs them)" 0 \
	"$(sql "select count(*) from sink_effects where idempotency_key like '$L/%' and scheduled_at > to_timestamp($A + 1)")"
finish
