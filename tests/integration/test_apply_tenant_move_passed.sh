#!/usr/bin/env bash
# Job S is moved from tenant t2 (in shadow) into tenant t1 (live) and job L
# the other way (v2), and both are applied again in their new tenant (v3,
# priority changed), while no controller runs.  Their rows are then as an
# apply of 0.3.0 leaves them (it moves no row; a tick that planned from v1
# and committed after the move and after its own check leaves its rows
# the same way): set back here to v1's tenant and side.  The restarted
# controller finds v2 and v3 waiting with the same schedule and activates
# v3 alone (v2 is passed over): it still moves those rows (write_moves in
# src/store/plan.c), since the last version activated before v3 (v1) had
# another tenant.  S's rows left shadow go pending and palisade calls every
# instant of S; L's left pending go shadow and palisade calls none of them.
source tests/integration/lib.sh
source tests/integration/cluster.sh
guarantee "a job moved between a shadow and a live tenant, and applied again before the moving version was activated, changes sides with every row after the move"
it_db
sink_up
SHARDS=1
LOOKAHEAD=30s write_exec_conf "$CLUSTER_CONF" "executor: {lease: 10s, heartbeat: 2s, claim_ahead: 0s}"
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
lead_shards 40 f1
expect_exit "tenant t2 in shadow" 0 "$PAL" shadow --config "$CLUSTER_CONF" --tenant t2 --reason s
S=sm.job-1 L=lv.job-1
gen_sink_jobs "$NODE_DIR/s1.yaml" 1 "* * * * * ?" t2 sm
gen_sink_jobs "$NODE_DIR/l1.yaml" 1 "* * * * * ?" t1 lv
expect_exit "apply S (t2, shadow) and L (t1, live)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s1.yaml" "$NODE_DIR/l1.yaml"
sleep 5
stop_node f1
gen_sink_jobs "$NODE_DIR/s2.yaml" 1 "* * * * * ?" t1 sm
gen_sink_jobs "$NODE_DIR/l2.yaml" 1 "* * * * * ?" t2 lv
gen_sink_jobs "$NODE_DIR/s3.yaml" 1 "* * * * * ?" t1 sm "priority: 5"
gen_sink_jobs "$NODE_DIR/l3.yaml" 1 "* * * * * ?" t2 lv "priority: 5"
expect_exit "v2: S into t1 and L into t2 (no controller)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s2.yaml" "$NODE_DIR/l2.yaml"
# v1's scope and side back on every unfinished row after now
sql "update triggers set tenant = 't2', state = 'shadow' where job_id = '$S' and state = 'pending'
 and scheduled_at > clock_timestamp();
update triggers set tenant = 't1', state = 'pending' where job_id = '$L' and state = 'shadow'
 and scheduled_at > clock_timestamp()" >/dev/null
expect_exit "v3: S and L applied again in their new tenant (no controller)" 0 \
	"$PAL" apply --config "$CLUSTER_CONF" "$NODE_DIR/s3.yaml" "$NODE_DIR/l3.yaml"
A=$(date +%s)
echo "    rows of S and L left with v1's tenant after A+1: $(sql "select count(*) from triggers where job_id = '$S' and tenant = 't2' and state = 'shadow' and scheduled_at > to_timestamp($A + 1)") $(sql "select count(*) from triggers where job_id = '$L' and tenant = 't1' and state = 'pending' and scheduled_at > to_timestamp($A + 1)")"
lead_shards 40 f1
sleep $((A + 15 - $(date +%s)))
versions() { sql "select string_agg(version || ':' || coalesce(plan_tenant, '-') || ':' || coalesce((extract(epoch from effective_from)::bigint - $A)::text, 'passed'), ' ' order by version) from job_versions where job_id = '$1'"; }
rows() { sql "select string_agg(extract(epoch from scheduled_at)::bigint - $A || ':v' || version || ':' || tenant || ':' || state, ' ' order by scheduled_at) from triggers where job_id = '$1' and scheduled_at > to_timestamp($A + 1) and scheduled_at < to_timestamp($A + 13)"; }
echo "    S versions (version:tenant:effective_from - A): $(versions $S); L: $(versions $L)"
echo "    S rows A+2..A+12 (offset:version:tenant:state): $(rows $S)"
echo "    L rows A+2..A+12: $(rows $L)"
expect_eq "v2 of S and of L passed over (v3 activated without it)" "0 0" \
	"$(sql "select count(*) from job_versions where job_id = '$S' and version = 2 and effective_from is not null") $(sql "select count(*) from job_versions where job_id = '$L' and version = 2 and effective_from is not null")"
audit() { sql "select count(*) from audit_log where action = '$1' and scope = 'job:$2' and actor like 'controller:%' and details ->> 'cause' like 'its job moved to a tenant or group%by the controller%'"; }
expect_eq "the controller's trigger.live audit row for S, trigger.shadow for L" "1 1" \
	"$(audit trigger.live $S) $(audit trigger.shadow $L)"
expect_eq "no S row from A+2 on is left shadow" 0 \
	"$(sql "select count(*) from triggers where job_id = '$S' and state = 'shadow' and scheduled_at > to_timestamp($A + 1)")"
expect_eq "no L row from A+2 on is left to palisade" 0 \
	"$(sql "select count(*) from triggers where job_id = '$L' and state <> 'shadow' and scheduled_at > to_timestamp($A + 1)")"
expect_eq "palisade calls none of L's instants from A+2 on" 0 \
	"$(sql "select count(*) from sink_effects where idempotency_key like '$L/%' and scheduled_at > to_timestamp($A + 1)")"
expect_eq "every second of S from A+2 to A+12 called" 11 \
	"$(sql "select count(distinct scheduled_at) from sink_effects where idempotency_key like '$S/%' and scheduled_at between to_timestamp($A + 2) and to_timestamp($A + 12)")"
"$PAL" verify --job $S --from "$(iso $((A + 2)))" --to "$(iso $((A + 12)))" >"$NODE_DIR/v.out" 2>&1
expect_eq "verify S from A+2 to A+12: OK" 0 "$?"
sed 's/^/    verify: /' "$NODE_DIR/v.out" | head -3
stop_node f1
finish
